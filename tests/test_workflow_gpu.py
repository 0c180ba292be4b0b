"""GPU DataLoader and DALI regimes in the real smoke workflow and in their library envs.

On a machine without CUDA the smoke run writes `skipped` GPU rows and real DALI-CPU rows; on a GPU
machine the same rows are `ok`, and a CUDA sleep kernel injected into the GPU step must show up in
the measured time (synchronization happens before the clock stops). The CPU-side pieces of the
GPU DataLoader (worker crops, default collation, the torchvision/Kornia batch functions) run here
for real on the CPU, in the libraries' own envs.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import REPO, WorkflowRun, run_snakemake

from augbench.config import resolve

pytestmark = pytest.mark.workflow

SMOKE = resolve(
    {
        "preset": "smoke",
        "machine": "smoke-test",
        "dataset": {"archive": None},
        "libraries": ["albumentationsx", "torchvision", "kornia", "pillow", "dali"],
        "regimes": ["micro", "cpu_dataloader", "gpu_dataloader", "dali"],
        "envs": {},
    },
    REPO,
)


def run_in_env(library: str, code: str) -> Any:
    """Run ``code`` with a library env's interpreter; it prints one JSON document last."""
    python = REPO / ".venvs" / library / "bin" / "python"
    proc = subprocess.run(
        [str(python), "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@functools.cache
def cuda_available() -> bool:
    return bool(
        run_in_env(
            "torchvision", "import torch, json; print(json.dumps(torch.cuda.is_available()))"
        )
    )


def raw_rows(run: WorkflowRun, regime: str) -> list[tuple[Path, dict[str, Any], str, dict]]:
    out = []
    for path in sorted(run.raw(regime).rglob("*.json")):
        payload = json.loads(path.read_text())
        for name, row in payload["results"].items():
            out.append((path, payload["metadata"], name, row))
    return out


def manifest(run: WorkflowRun) -> Path:
    return next((run.workdir / "results/data").glob("*/manifest.json"))


# -- the smoke run ------------------------------------------------------------------------------
def test_gpu_dataloader_rows_for_every_library_mode_and_transform(smoke_run: WorkflowRun) -> None:
    assert smoke_run.returncode == 0, smoke_run.output[-5000:]
    rows = raw_rows(smoke_run, "gpu_dataloader")
    keys = {(meta["library"], row["randomness"], name) for _, meta, name, row in rows}
    expected = {
        (lib, mode, t)
        for lib, modes in (
            ("torchvision", ("per-sample", "batch-shared")),
            ("kornia", ("per-sample",)),
        )
        for mode in modes
        for t in SMOKE["transforms"]
    }
    assert keys == expected
    want = "ok" if cuda_available() else "skipped"
    for path, meta, name, row in rows:
        assert row["status"] == want, (path, name, row.get("reason"))
        assert row["recipe"] == f"RandomCrop224 + {name} + Normalize"
        assert row["variant"] == row["randomness"] == meta["variant"]
        assert (row["workers"], row["batch_size"]) == (1, SMOKE["gpu_dataloader"]["batch_size"])
        assert meta["regime"] == "gpu_dataloader" and meta["machine"] == "smoke-test"
        assert meta["environment"]["env_lock_sha256"]
        assert meta["thread_settings"]["environment"]["OMP_NUM_THREADS"] == "1"
        if want == "skipped":
            assert row["reason"] == "no CUDA device"
            assert meta["device"] == "no CUDA device"
        else:
            assert row["gpu_peak_allocated_mb"] > 0 and row["gpu_peak_reserved_mb"] > 0
            assert row["output_shape"] == [SMOKE["gpu_dataloader"]["batch_size"], 3, 224, 224]
            assert len(row["throughputs"]) == SMOKE["gpu_dataloader"]["values"]


def test_dali_cpu_rows_are_real_and_dali_gpu_rows_match_the_machine(
    smoke_run: WorkflowRun,
) -> None:
    rows = raw_rows(smoke_run, "dali")
    by_variant: dict[str, dict[str, dict]] = {}
    for _, meta, name, row in rows:
        assert row["variant"] == meta["variant"]
        assert meta["thread_settings"]["environment"]["OMP_NUM_THREADS"] == "1"
        assert meta["library_versions"]["nvidia-dali-cuda120"] == "2.4.0"
        by_variant.setdefault(row["variant"], {})[name] = row
    assert set(by_variant) == {"dali-gpu", "dali-cpu"}
    batch = SMOKE["dali"]["batch_size"]
    for name in SMOKE["transforms"]:
        cpu = by_variant["dali-cpu"][name]
        assert cpu["status"] == "ok", cpu.get("reason")
        assert cpu["output_shape"] == [batch, 3, 224, 224] and cpu["output_dtype"] == "float32"
        assert len(cpu["throughputs"]) == SMOKE["dali"]["values"]
        assert all(t > 0 for t in cpu["throughputs"])
        assert cpu["device"].startswith("cpu") and "device='cpu'" in cpu["decoder"]
        assert cpu["pipeline"].startswith("fn.readers.file -> fn.decoders.image(device='cpu'")
        gpu_row = by_variant["dali-gpu"][name]
        if cuda_available():
            assert gpu_row["status"] == "ok", gpu_row.get("reason")
            assert gpu_row["gpu_peak_reserved_mb"] > 0
        else:
            assert (gpu_row["status"], gpu_row["reason"]) == ("skipped", "no CUDA device")


def test_gpu_tables_keep_every_gpu_row(smoke_run: WorkflowRun) -> None:
    tables = smoke_run.workdir / "results/tables"
    ratio = pd.read_csv(tables / "gpu_vs_cpu_ratio.csv")
    n_gpu = 3 * len(SMOKE["transforms"])  # torchvision x2 modes + kornia
    n_dali = 2 * len(SMOKE["transforms"])
    assert len(ratio) == n_gpu + n_dali
    dali_cpu = ratio[ratio["variant"] == "dali-cpu"]
    assert (dali_cpu["ratio"] > 0).all()
    # The CPU reference is AlbumentationsX's cpu_dataloader row where that regime measured the
    # transform, else its micro row; the column says which.
    dataloader_transforms = set(SMOKE["cpu_dataloader"]["transforms"])
    for _, row in dali_cpu.iterrows():
        expected = "cpu_dataloader" if row["transform"] in dataloader_transforms else "micro"
        assert row["cpu_reference"].startswith(f"albumentationsx {expected}"), row.to_dict()
    if not cuda_available():
        skipped = ratio[ratio["status"] == "skipped"]
        assert len(skipped) == n_gpu + len(SMOKE["transforms"])
        assert skipped["ratio"].isna().all()
        assert (skipped["ratio_status"] == "N/A: skipped").all()
    memory = pd.read_csv(tables / "gpu_throughput_memory.csv")
    assert len(memory) == n_gpu + n_dali
    coverage = pd.read_csv(tables / "coverage.csv")
    assert {"gpu_dataloader", "dali"} <= set(coverage["regime"])
    speedups = pd.read_csv(tables / "speedups_dali.csv")
    assert set(speedups["variant"]) == {"dali-gpu", "dali-cpu"}


def test_dali_regime_without_the_dali_library_is_a_clear_error(tmp_path: Path) -> None:
    proc = run_snakemake(
        tmp_path, "-n", "--config", "preset=smoke", "regimes=[micro,dali]", check=False
    )
    assert proc.returncode != 0
    assert "'dali' measures ['dali'], none of which is in libraries" in proc.stdout + proc.stderr


# -- the engines' CPU-side logic, in the libraries' envs ------------------------------------------
def test_workers_collate_fixed_size_uint8_crops(smoke_run: WorkflowRun) -> None:
    result = run_in_env(
        "torchvision",
        f"""
        import json
        from pathlib import Path
        from augbench import media
        from augbench.engines import gpu_dataloader as g
        from augbench.engines.streaming import StreamPlan
        from augbench.policy import SlowTransformPolicy

        files = media.select_files(Path({str(manifest(smoke_run))!r}), 6)
        plan = StreamPlan.for_images(6, 3, warmup_reps=0, reps=1, policy=SlowTransformPolicy())
        out = {{}}
        for scope, crop in (("decode", (224, 224)), ("memory", (256, 256))):
            loader = g.make_loader(g.CropDataset(files, crop, scope), plan, 2, pin_memory=False)
            batches = list(loader)
            out[scope] = {{
                "n": len(batches),
                "shapes": sorted({{tuple(b.shape) for b in batches}}),
                "dtypes": sorted({{str(b.dtype) for b in batches}}),
            }}
        out["total_batches"] = plan.total_batches
        print(json.dumps(out))
        """,
    )
    # first batch + preflight (ceil(10 / 3) = 4 batches) + one repetition of ceil(6 / 3) = 2
    assert result["total_batches"] == 1 + 4 + 2
    assert result["decode"] == {"n": 7, "shapes": [[3, 3, 224, 224]], "dtypes": ["torch.uint8"]}
    assert result["memory"]["shapes"] == [[3, 3, 256, 256]]


def test_worker_crop_larger_than_the_image_is_a_clear_error(tmp_path: Path) -> None:
    image = tmp_path / "small.jpg"
    from PIL import Image

    Image.new("RGB", (100, 80)).save(image)
    result = run_in_env(
        "torchvision",
        f"""
        import json
        from augbench.engines import gpu_dataloader as g
        try:
            g.CropDataset([{str(image)!r}], (224, 224), "decode")[0]
        except ValueError as exc:
            print(json.dumps(str(exc)))
        """,
    )
    assert "small.jpg: image is 100x80, smaller than the 224x224 worker crop" in result


@pytest.mark.parametrize(
    ("library", "randomness"),
    [("torchvision", "per-sample"), ("torchvision", "batch-shared"), ("kornia", "per-sample")],
)
def test_gpu_recipe_functions_run_on_cpu_tensors(
    smoke_run: WorkflowRun, library: str, randomness: str
) -> None:
    """The same code path as on CUDA, on CPU tensors: shapes, dtype, normalization."""
    result = run_in_env(
        library,
        f"""
        import json
        import torch
        from augbench.engines import gpu_dataloader as g

        out = {{}}
        for name in ("Rotate", "RandomResizedCrop", "Resize", "ColorJitter"):
            apply, how = g.build_gpu_apply({library!r}, name, {randomness!r}, torch.device("cpu"))
            crop = 256 if name == "RandomResizedCrop" else 224
            batch = torch.randint(0, 256, (3, 3, crop, crop), dtype=torch.uint8)
            y = apply(batch)
            out[name] = [list(y.shape), str(y.dtype), how, float(y.mean())]
        print(json.dumps(out))
        """,
    )
    assert result["Rotate"][:2] == [[3, 3, 224, 224], "torch.float32"]
    assert result["RandomResizedCrop"][0] == [3, 3, 224, 224]
    assert result["Resize"][0] == [3, 3, 512, 512]
    for *_, mean in result.values():
        assert -3.0 < mean < 3.0  # normalized, not 0..255
    if library == "torchvision" and randomness == "per-sample":
        assert result["Rotate"][2].startswith("torch.stack([")
    if library == "kornia":
        assert "same_on_batch=False" in result["Rotate"][2]


def test_dali_cpu_engine_records_unsupported_and_measures_the_rest(
    smoke_run: WorkflowRun, tmp_path: Path
) -> None:
    out = tmp_path / "dali.json"
    python = REPO / ".venvs" / "dali" / "bin" / "python"
    subprocess.run(
        [
            str(python), "-m", "augbench.engines.dali", "--variant", "dali-cpu",
            "--transforms", "Affine,Posterize,RandomResizedCrop,Grayscale",
            "--manifest", str(manifest(smoke_run)), "--num-images", "4", "--batch-size", "2",
            "--num-threads", "1", "--values", "1", "--warmups", "0", "--machine", "t",
            "--output", str(out),
        ],
        check=True, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
    )  # fmt: skip
    rows = json.loads(out.read_text())["results"]
    assert rows["Posterize"]["status"] == "unsupported"
    assert "posterize" in rows["Posterize"]["reason"]
    for name in ("Affine", "RandomResizedCrop", "Grayscale"):
        assert rows[name]["status"] == "ok", rows[name].get("reason")
        assert rows[name]["output_shape"] == [2, 3, 224, 224]
    assert rows["RandomResizedCrop"]["recipe"] == "RandomResizedCrop + Normalize"
    assert "fn.crop(" not in rows["RandomResizedCrop"]["pipeline"]


# -- GPU only -------------------------------------------------------------------------------------
def test_cuda_sleep_kernel_in_the_gpu_step_is_inside_the_measured_time(
    smoke_run: WorkflowRun,
) -> None:
    if not cuda_available():
        pytest.skip("no CUDA device (torch.cuda.is_available() is False)")
    result = run_in_env(
        "torchvision",
        f"""
        import json
        from pathlib import Path
        import torch
        from augbench import media
        from augbench.engines import gpu_dataloader as g
        from augbench.engines.streaming import StreamPlan
        from augbench.policy import SlowTransformPolicy

        device = torch.device("cuda")
        # Calibrate torch.cuda._sleep (a spinning kernel, launched asynchronously) to ~50 ms.
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        cycles = 10_000_000
        start.record(); torch.cuda._sleep(cycles); end.record(); torch.cuda.synchronize()
        cycles = int(cycles * 50.0 / start.elapsed_time(end))
        start.record(); torch.cuda._sleep(cycles); end.record(); torch.cuda.synchronize()
        kernel_s = start.elapsed_time(end) / 1000.0

        def sleepy(batch):
            torch.cuda._sleep(cycles)  # returns at once; the GPU stays busy for kernel_s
            return batch.float()

        policy = SlowTransformPolicy(enabled=False)
        plan = StreamPlan.for_images(6, 3, warmup_reps=1, reps=3, policy=policy)
        files = media.select_files(Path({str(manifest(smoke_run))!r}), 6)
        row = g.measure_transform(
            library="torchvision", transform="HorizontalFlip", randomness="per-sample",
            files=files, scope="memory", workers=0, plan=plan, worker_crop=256, policy=policy,
            device=device, apply_override=sleepy,
        )
        print(json.dumps({{"row": row, "kernel_s": kernel_s, "bpr": plan.batches_per_rep,
                          "device": torch.cuda.get_device_name(device)}}))
        """,
    )
    row = result["row"]
    assert row["status"] == "ok", row.get("reason")
    floor = result["bpr"] * result["kernel_s"]
    for seconds in row["times"]:
        assert seconds >= 0.95 * floor, (seconds, floor, result["device"])
    assert row["gpu_peak_allocated_mb"] > 0
