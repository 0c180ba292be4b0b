"""What the rows say about the memory allocator (augbench/allocator.py): the allocator in force,
read from the process itself, in the main process and in DataLoader workers; and the page-fault
counter the timed windows use, checked for its direction (no timing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO, WorkflowRun, library_env

from augbench import allocator
from augbench.policy import ALLOCATOR_ENV

STEADY = ALLOCATOR_ENV["glibc-steady"]


def _run(code: str, python: str = sys.executable, env: dict[str, str] | None = None) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(allocator.ENV_PREFIXES)}
    proc = subprocess.run(
        [python, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, check=False, timeout=600,
        env={**clean, "PYTHONPATH": str(REPO), **(env or {})},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_process_says_which_allocator_and_settings_are_in_force() -> None:
    code = """
    import json
    from augbench import allocator
    record = allocator.in_force()
    print(json.dumps({"record": record, "label": allocator.label(record)}))
    """
    plain = _run(code)["record"]
    assert plain["name"] == "glibc" and plain["version"][0].isdigit() and plain["env"] == {}
    assert plain["library"] and "libc.so" in plain["library"]  # seen in /proc/self/maps
    steady = _run(code, env=STEADY)
    assert steady["record"]["env"] == STEADY
    assert steady["label"] == "glibc " + " ".join(f"{k}={v}" for k, v in STEADY.items())


def test_dataloader_workers_report_their_parents_allocator(tmp_path) -> None:
    code = f"""
    import json
    from pathlib import Path
    import functools
    from torch.utils.data import DataLoader
    from augbench import allocator
    from augbench.engines.dataloader import plumbing
    folder = Path({str(tmp_path)!r})
    loader = DataLoader(list(range(8)), batch_size=2, num_workers=2,
                        worker_init_fn=functools.partial(plumbing.worker_init,
                                                         record_dir=str(folder)))
    for _ in loader:
        pass
    records = plumbing.worker_records(folder)
    print(json.dumps({{"parent": allocator.label(allocator.in_force()),
                       "workers": [r["allocator"] for r in records],
                       "processes": sum(r["worker_processes"] for r in records)}}))
    """
    out = _run(code, python=str(library_env("torchvision")), env=STEADY)
    assert out["processes"] == 2
    assert out["workers"] == [out["parent"]] and "MALLOC_MMAP_THRESHOLD_" in out["parent"]


def test_the_fault_counter_sees_glibc_return_large_buffers_and_steady_keep_them() -> None:
    """A step that allocates, touches and frees a 64 MiB array per call: glibc as shipped maps
    a buffer above its largest dynamic mmap threshold (32 MiB) afresh on every call and faults
    each page in; with the thresholds raised the heap keeps it. Direction only."""
    code = """
    import json
    import numpy as np
    from augbench import allocator
    np.ones(64 * 2**20, dtype=np.uint8)  # warm-up
    before = allocator.minor_faults()
    for _ in range(8):
        np.ones(64 * 2**20, dtype=np.uint8)
    print(json.dumps({"per_call": (allocator.minor_faults() - before) / 8}))
    """
    shipped = _run(code)["per_call"]
    steady = _run(code, env=STEADY)["per_call"]
    # Not a page count: with transparent huge pages one fault maps 2 MiB, so a fresh 64 MiB
    # buffer costs from 32 to 16384 faults depending on the kernel's setting.
    assert shipped > steady, (shipped, steady)


def test_output_pages_count_the_image_of_any_container() -> None:
    import numpy as np

    assert allocator.output_pages(np.zeros((64, 64, 4), dtype=np.uint8)) == 4.0
    assert allocator.output_pages({"image": np.zeros((64, 64, 1), dtype=np.float32)}) == 4.0


def test_a_row_made_under_a_preloaded_allocator_records_it(tmp_path) -> None:
    """A real engine job (cpu_dataloader, memory scope) with the env's own mimalloc (the pinned
    cmeel-mimalloc wheel) preloaded: its result says mimalloc, with the library's version, and
    so does its worker."""
    from conftest import jpeg_manifest

    python = library_env("pillow")
    env = allocator.environment_for("mimalloc", python.parent.parent)
    output = tmp_path / "r.json"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(allocator.ENV_PREFIXES)}
    subprocess.run(
        [str(python), "-m", "augbench.engines.cpu_dataloader", "--library", "pillow",
         "--transforms", "HorizontalFlip", "--manifest", str(jpeg_manifest(tmp_path)),
         "--num-images", "4", "--machine", "t", "--scope", "memory", "--workers", "1",
         "--batch-size", "2", "--batches-per-run", "2", "--num-runs", "1", "--min-runs", "1",
         "--baseline-runs", "0", "--output", str(output)],
        check=True, capture_output=True, env={**clean, "PYTHONPATH": str(REPO), **env},
    )  # fmt: skip
    payload = json.loads(output.read_text())
    recorded = payload["metadata"]["allocator"]
    assert recorded["name"] == "mimalloc" and recorded["library"] == env["LD_PRELOAD"]
    assert recorded["version"].startswith("3.")  # from the library itself (mi_version)
    workers = payload["metadata"]["thread_settings"]["workers"]
    assert [w["allocator"] for w in workers] == ["mimalloc"]
    row = payload["results"]["HorizontalFlip"]
    assert row["status"] == "ok" and row["minor_faults_per_image"] >= 0


def test_an_allocator_this_machine_lacks_is_named() -> None:
    if any(os.path.exists(p) for p in allocator.JEMALLOC_PATHS):
        pytest.skip("jemalloc is installed here")
    with pytest.raises(allocator.Unavailable, match="jemalloc is not installed"):
        allocator.environment_for("jemalloc", sys.prefix)


@pytest.mark.workflow
def test_smoke_rows_record_the_allocator_and_faults(smoke_run: WorkflowRun) -> None:
    import pandas as pd

    tidy = pd.read_csv(smoke_run.workdir / "results/tables/all_results.csv")
    assert set(tidy["allocator"].dropna()) == {"glibc"}
    pipelines = pd.read_csv(smoke_run.workdir / "results/tables/pipeline_results.csv")
    for frame, regimes in ((tidy, ("micro", "cpu_dataloader")), (pipelines, ("micro",))):
        for regime in regimes:
            ok = frame[(frame["regime"] == regime) & (frame["status"] == "ok")]
            ok = ok[ok["step"].isna()] if "step" in ok.columns else ok
            assert len(ok), regime
            assert (pd.to_numeric(ok["minor_faults_per_image"]) >= 0).all(), regime
            assert (pd.to_numeric(ok["output_pages"]) > 0).all(), regime
    raw = next((smoke_run.workdir / "results/raw/smoke-test").glob("*/micro/*/*.json"))
    meta = json.loads(raw.read_text())["metadata"]
    assert meta["allocator"]["name"] == "glibc" and meta["allocator"]["library"]
