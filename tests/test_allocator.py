"""What the rows say about the memory allocator (augbench/measuring/allocator.py): the allocator in
force, read from the process itself, in the main process and in DataLoader workers; and the
page-fault counter the timed windows use, checked for its direction (no timing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO, WorkflowRun, library_env

from augbench.measuring import allocator
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
    from augbench.measuring import allocator
    record = allocator.in_force()
    print(json.dumps({"record": record, "label": allocator.label(record)}))
    """
    plain = _run(code)["record"]
    assert plain["name"] == "glibc" and plain["version"][0].isdigit() and plain["env"] == {}
    assert plain["library"] and "libc.so" in plain["library"]  # seen in /proc/self/maps
    steady = _run(code, env=STEADY)
    assert steady["record"]["env"] == STEADY
    assert steady["label"] == "glibc " + " ".join(f"{k}={v}" for k, v in STEADY.items())


@pytest.mark.envs
def test_dataloader_workers_report_their_parents_allocator(tmp_path) -> None:
    code = f"""
    import json
    from pathlib import Path
    import functools
    from torch.utils.data import DataLoader
    from augbench.measuring import allocator
    from augbench.measuring.engines.dataloader import plumbing
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
    from augbench.measuring import allocator
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


@pytest.mark.envs
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
        [str(python), "-m", "augbench.measuring.engines.cpu_dataloader", "--library", "pillow",
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


# -- the allocators dimension: the launcher's environment, the engines' check ---------------------


def test_the_launch_environment_is_exactly_the_setting(tmp_path) -> None:
    """A setting replaces whatever allocator settings the caller's environment had (and keeps
    other preloads); a setting this machine cannot provide is passed on as `skipped`."""
    base = {
        "PATH": "/bin",
        "MALLOC_ARENA_MAX": "2",
        "GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=1",
        "LD_PRELOAD": "/opt/x/libjemalloc.so.2 /opt/other/libfoo.so",
    }
    plain = allocator.launch_environment("glibc", tmp_path, base)
    assert plain == {
        "PATH": "/bin",
        "LD_PRELOAD": "/opt/other/libfoo.so",
        allocator.SETTING_ENV_VAR: "glibc",
    }
    steady = allocator.launch_environment("glibc-steady", tmp_path, base)
    assert {k: steady[k] for k in STEADY} == STEADY and "MALLOC_ARENA_MAX" not in steady
    missing = allocator.launch_environment("mimalloc", tmp_path, base)  # no wheel in tmp_path
    assert missing[allocator.PROBLEM_ENV_VAR].startswith("skipped: mimalloc is not installed")
    assert missing["LD_PRELOAD"] == "/opt/other/libfoo.so"


def test_a_record_amounts_to_its_setting() -> None:
    glibc = {"name": "glibc", "env": {}}
    assert allocator.setting_of(glibc) == "glibc"
    assert allocator.setting_of({**glibc, "env": dict(STEADY)}) == "glibc-steady"
    assert allocator.setting_of({"name": "mimalloc", "env": {"LD_PRELOAD": "x"}}) == "mimalloc"
    hand = {**glibc, "env": {"MALLOC_ARENA_MAX": "2"}}
    assert allocator.setting_of(hand) == "glibc MALLOC_ARENA_MAX=2"  # a hand-made setting


def test_the_check_refuses_a_setting_that_is_not_in_force(monkeypatch) -> None:
    monkeypatch.delenv(allocator.SETTING_ENV_VAR, raising=False)
    allocator.check_requested({"name": "glibc", "env": {}})  # run by hand: nothing to check
    monkeypatch.setenv(allocator.SETTING_ENV_VAR, "mimalloc")
    monkeypatch.setenv("LD_PRELOAD", "/nowhere/libmimalloc.so.3")
    with pytest.raises(allocator.NotApplied, match="runs under glibc") as caught:
        allocator.check_requested({"name": "glibc", "env": {}})
    assert caught.value.status == "error" and "was not loaded" in str(caught.value)
    allocator.check_requested({"name": "mimalloc", "env": {}})
    monkeypatch.setenv(allocator.PROBLEM_ENV_VAR, "skipped: jemalloc is not installed here")
    with pytest.raises(allocator.NotApplied) as caught:
        allocator.check_requested({"name": "mimalloc", "env": {}})
    assert caught.value.status == "skipped"
    assert str(caught.value) == "jemalloc is not installed here"


def _launch(python, tmp_path, setting: str, engine: list[str], env: dict | None = None) -> dict:
    """A job as the workflow starts it: augbench.planning.provision with --allocator, then the
    engine."""
    from conftest import jpeg_manifest

    folder = tmp_path / setting
    folder.mkdir()
    manifest = jpeg_manifest(folder, count=4)
    output = folder / "r.json"
    library = engine[engine.index("--library") + 1]
    lock = REPO / "envs" / f"{library}.txt"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(allocator.ENV_PREFIXES)}
    proc = subprocess.run(
        [sys.executable, "-m", "augbench.planning.provision", "--library", library,
         "--allocator", setting, "--venv", str(python.parent.parent), "--lock", str(lock),
         "--manifest", str(manifest), "--scratch", str(folder / "scratch"), "--",
         *engine, "--num-images", "4", "--machine", "t", "--output", str(output)],
        capture_output=True, text=True, check=False, timeout=900,
        env={**clean, "PYTHONPATH": str(REPO), **(env or {})},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(output.read_text())


@pytest.mark.envs
def test_pyperf_processes_run_under_the_jobs_allocator(tmp_path) -> None:
    """A micro job launched with --allocator mimalloc: the manager and the pyperf process that
    timed each row ran under the env's mimalloc, and the result records the setting."""
    python = library_env("albumentationsx")
    payload = _launch(
        python, tmp_path, "mimalloc",
        ["-m", "augbench.measuring.engines.micro", "--library", "albumentationsx", "--transforms",
         "HorizontalFlip", "--processes", "1", "--min-processes", "1", "--values", "2"],
    )  # fmt: skip
    meta = payload["metadata"]
    assert meta["allocator"]["name"] == "mimalloc" and meta["allocator_setting"] == "mimalloc"
    row = payload["results"]["HorizontalFlip"]
    assert row["status"] == "ok" and row["process_allocator"] == "mimalloc"


@pytest.mark.envs
def test_an_allocator_that_does_not_load_gives_error_rows_and_a_missing_one_skipped(
    tmp_path,
) -> None:
    """An installed allocator whose library does not load (here: the file the launcher would
    preload is not a shared object; ld.so warns and goes on with glibc): every row is an error
    saying so, and the job itself succeeds. jemalloc where it is not installed, launched as the
    workflow does: every row skipped with the reason."""
    from conftest import jpeg_manifest

    python = library_env("pillow")
    engine = ["-m", "augbench.measuring.engines.pipeline_breakdown", "--library", "pillow",
              "--min-values", "1", "--max-values", "1", "--pipelines",
              '[{"name": "p", "steps": [{"name": "HorizontalFlip", "params": {}}]}]']  # fmt: skip
    bogus = tmp_path / "libmimalloc.so.3"
    bogus.write_text("not a shared object")
    output = tmp_path / "broken.json"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(allocator.ENV_PREFIXES)}
    env = {allocator.SETTING_ENV_VAR: "mimalloc", "LD_PRELOAD": str(bogus)}
    proc = subprocess.run(
        [str(python), *engine, "--manifest", str(jpeg_manifest(tmp_path, count=2)),
         "--num-images", "2", "--machine", "t", "--output", str(output)],
        capture_output=True, text=True, check=False, timeout=600,
        env={**clean, "PYTHONPATH": str(REPO), **env},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "cannot be preloaded" in proc.stderr  # the loader's own warning
    row = json.loads(output.read_text())["results"]["p"]
    assert row["status"] == "error"
    assert "allocator mimalloc asked for, but the process runs under glibc" in row["reason"]
    if any(os.path.exists(p) for p in allocator.JEMALLOC_PATHS):
        return  # installed here: nothing to skip
    payload = _launch(python, tmp_path, "jemalloc", engine)
    row = payload["results"]["p"]
    assert row["status"] == "skipped" and "jemalloc is not installed" in row["reason"]
    assert payload["metadata"]["allocator_setting"] == "jemalloc"
