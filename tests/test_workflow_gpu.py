"""GPU DataLoader and DALI regimes in the real smoke workflow and in their library envs.

On a machine without CUDA the smoke run writes `skipped` GPU rows and real DALI-CPU rows, and
`gpu=required` fails the GPU job with the CUDA error instead; on a GPU machine the same rows are
`ok`, and a CUDA sleep kernel injected into the GPU step must show up in the measured time
(synchronization happens before the clock stops) and must not without the synchronisation (the
negative control). The CPU-side pieces of the GPU DataLoader (worker crops, default collation,
every paper recipe's torchvision/Kornia batch function) run here for real on CPU tensors, in the
libraries' own envs; DALI's timing code is checked with a CPU pipeline that sleeps a known time.
"""

from __future__ import annotations

import functools
import json
import math
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from conftest import (
    REPO,
    SMOKE_CONFIG,
    WorkflowRun,
    env_python,
    run_engine,
    run_snakemake,
    smoke_settings,
)

from augbench.planning.config import resolve
from augbench.workload import catalog, gpu_recipes

pytestmark = pytest.mark.workflow

SMOKE = smoke_settings(
    ["albumentationsx", "torchvision", "kornia", "pillow", "dali"],
    ["micro", "cpu_dataloader", "gpu_dataloader", "dali"],
)


def run_in_env(library: str, code: str) -> Any:
    """Run ``code`` with a library env's interpreter; it prints one JSON document last."""
    python = env_python(library)
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


# -- the smoke run ------------------------------------------------------------------------------
def test_gpu_dataloader_rows_for_every_library_mode_and_transform(smoke_run: WorkflowRun) -> None:
    assert smoke_run.returncode == 0, smoke_run.output[-5000:]
    rows = raw_rows(smoke_run, "gpu_dataloader")
    keys = {(meta["library"], row["scope"], row["randomness"], name) for _, meta, name, row in rows}
    expected = {
        (lib, scope, mode, t)
        for lib, modes in (
            ("torchvision", ("per-sample", "batch-shared")),
            ("kornia", ("per-sample",)),
        )
        for scope in ("memory", "decode")
        for mode in modes
        for t in [gpu_recipes.IDENTITY, *SMOKE["transforms"]]
    }
    assert keys == expected
    want = "ok" if cuda_available() else "skipped"
    for path, meta, name, row in rows:
        assert row["status"] == want, (path, name, row.get("reason"))
        assert row["recipe"] == gpu_recipes.recipe(name)
        assert row["timed"] == gpu_recipes.SCOPE_TIMED[row["scope"]]
        assert row["variant"] == row["randomness"] == meta["variant"]
        workers = 0 if row["scope"] == "memory" else 1
        assert (row["workers"], row["batch_size"]) == (
            workers,
            SMOKE["gpu_dataloader"]["batch_size"],
        )
        # every GPU row records the driver and the CUDA runtime (None: no driver here)
        assert row["cuda_runtime_version"] == meta["torch_cuda_version"] == "13.0"
        assert "cuda_driver_version" in row
        assert meta["cuda_env"]["verdict"] == ("ok" if want == "ok" else "no_device")
        assert meta["regime"] == "gpu_dataloader" and meta["machine"] == "smoke-test"
        assert meta["environment"]["env_lock_sha256"]
        assert meta["thread_settings"]["environment"]["OMP_NUM_THREADS"] == "1"
        if want == "skipped":
            assert row["reason"] == "no CUDA device"
            assert meta["device"] == "no CUDA device"
        else:
            assert row["gpu_peak_allocated_mb"] > 0 and row["gpu_peak_reserved_mb"] > 0
            assert row["output_shape"] == [SMOKE["gpu_dataloader"]["batch_size"], 3, 224, 224]
            assert row["output_device"].startswith("cuda")
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
    for name in [gpu_recipes.IDENTITY, *SMOKE["transforms"]]:
        cpu = by_variant["dali-cpu"][name]
        assert cpu["status"] == "ok", cpu.get("reason")
        assert cpu["output_shape"] == [batch, 3, 224, 224] and cpu["output_dtype"] == "float32"
        assert len(cpu["throughputs"]) == SMOKE["dali"]["values"]
        assert all(t > 0 for t in cpu["throughputs"])
        assert cpu["device"].startswith("cpu") and "device='cpu'" in cpu["decoder"]
        assert cpu["pipeline"].startswith("fn.readers.file -> fn.decoders.image(device='cpu'")
        assert cpu["output_device"] == "TensorListCPU"
        assert cpu["sync_method"].startswith("host-synchronous: Pipeline.run() without")
        assert "CUDAStreamSynchronize" not in json.dumps(cpu)
        assert cpu["isolation"].startswith("own process")
        gpu_row = by_variant["dali-gpu"][name]
        assert gpu_row["cuda_runtime_version"] == "12.0"  # the nvidia-dali-cuda120 wheel
        if cuda_available():
            assert gpu_row["status"] == "ok", gpu_row.get("reason")
            assert gpu_row["gpu_nvml_used_mb"] > 0 and "gpu_peak_reserved_mb" not in gpu_row
        else:
            assert (gpu_row["status"], gpu_row["reason"]) == ("skipped", "no CUDA device")
    assert by_variant["dali-cpu"][gpu_recipes.IDENTITY]["mapping"] == "identity (no transform)"


def test_gpu_tables_keep_every_gpu_row(smoke_run: WorkflowRun) -> None:
    tables = smoke_run.workdir / "results/tables"
    ratio = pd.read_csv(tables / "gpu_vs_cpu_ratio.csv")
    recipes = len(SMOKE["transforms"]) + 1  # and the Identity baseline
    n_gpu = 3 * 2 * recipes  # (torchvision x2 modes + kornia) x (memory, decode)
    n_dali = 2 * recipes
    assert len(ratio) == n_gpu + n_dali
    dali_cpu = ratio[ratio["variant"] == "dali-cpu"].set_index("transform")
    # The CPU reference is AlbumentationsX's cpu_dataloader row of the same recipe and scope
    # (decode for DALI): only transforms that regime measured have a ratio.
    dataloader_transforms = set(SMOKE["cpu_dataloader"]["transforms"])
    for name, row in dali_cpu.iterrows():
        assert row["comparison"].endswith("cpu_dataloader decode, same recipe")
        if name in dataloader_transforms:
            assert row["ratio"] > 0
            assert row["cpu_reference"].startswith("albumentationsx cpu_dataloader/decode")
        else:
            assert math.isnan(row["ratio"]) and row["ratio_status"].startswith("N/A"), name
    if not cuda_available():
        skipped = ratio[ratio["status"] == "skipped"]
        assert len(skipped) == n_gpu + recipes
        assert skipped["ratio"].isna().all()
        identity = skipped["transform"] == gpu_recipes.IDENTITY
        assert (skipped[~identity]["ratio_status"] == "N/A: skipped").all()
        assert (
            skipped[identity]["ratio_status"] == "N/A: Identity baseline (no CPU counterpart)"
        ).all()
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
        from augbench.measuring import media
        from augbench.measuring.engines import gpu_dataloader as g
        from augbench.measuring.engines.streaming import StreamPlan
        from augbench.policy import SlowTransformPolicy

        files = media.select_files(Path({str(smoke_run.manifest)!r}), 6)
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
        from augbench.measuring.engines import gpu_dataloader as g
        try:
            g.CropDataset([{str(image)!r}], (224, 224), "decode")[0]
        except ValueError as exc:
            print(json.dumps(str(exc)))
        """,
    )
    assert "small.jpg: image is 100x80, smaller than the 224x224 worker crop" in result


def jpeg_files(folder: Path, n: int = 4) -> list[str]:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    paths = []
    for i in range(n):
        path = folder / f"img{i}.jpg"
        Image.fromarray(rng.integers(0, 256, (280 + 8 * i, 300, 3), dtype=np.uint8)).save(path)
        paths.append(str(path))
    return paths


# The libraries and randomness modes the engine_on_cpu tests run: the GPU DataLoader libraries
# (torchvision in both modes, kornia per sample).
ENGINE_ON_CPU_CASES = pytest.mark.parametrize(
    ("library", "randomness"),
    [("torchvision", "per-sample"), ("torchvision", "batch-shared"), ("kornia", "per-sample")],
)


def engine_on_cpu(library: str, files: list[str]) -> str:
    """Code run in a library env: the GPU DataLoader engine, a 2-image plan, the policy off
    (indented as the callers' code, which run_in_env dedents together)."""
    return f"""
        import json, sys
        from pathlib import Path
        from augbench.workload import adapters, gpu_recipes
        from augbench.measuring.engines import gpu_dataloader as g, skeleton
        from augbench.measuring.engines.streaming import StreamPlan
        from augbench.policy import SlowTransformPolicy

        policy = SlowTransformPolicy(preflight_items=1, enabled=False)
        plan = StreamPlan.for_images(2, 2, warmup_reps=0, reps=1, policy=policy)
        files = [Path(f) for f in {files!r}]
        adapter = adapters.get({library!r})
        out = {{}}
        """


@ENGINE_ON_CPU_CASES
def test_every_paper_gpu_recipe_runs_on_cpu_tensors_or_is_unsupported_with_a_reason(
    tmp_path: Path, library: str, randomness: str
) -> None:
    """Each paper-preset recipe through the engine's own measuring code (memory scope, the same
    code path as on CUDA) on CPU tensors: every one is `ok` with the recipe's output shape, or an
    explicit `unsupported` row with its reason; none is an error. The decode scope's loader path
    runs for a crop and a size-changing recipe."""
    paper = resolve(
        {
            "preset": "paper",
            "machine": "t",
            "dataset": {"archive": None},
            "libraries": [library],
            "regimes": ["gpu_dataloader"],
            "envs": {},
        },
        REPO,
    )
    names = [gpu_recipes.IDENTITY, *paper["transforms"]]
    assert set(paper["transforms"]) == set(catalog.names())
    result = run_in_env(
        library,
        engine_on_cpu(library, jpeg_files(tmp_path))
        + f"""
        for name, scope in [(n, "memory") for n in {names!r}] + [
            ("RandomResizedCrop", "decode"), ("Pad", "decode")
        ]:
            if name != gpu_recipes.IDENTITY and not adapter.supports(name):
                row = {{"status": "unsupported", "reason": adapter.unsupported_reason(name)}}
            elif gpu_recipes.gpu_unsupported_reason({library!r}, name):
                row = {{"status": "unsupported",
                       "reason": gpu_recipes.gpu_unsupported_reason({library!r}, name)}}
            else:
                row = skeleton.measure_row(g.measure_transform, dict(
                    library={library!r}, transform=name, randomness={randomness!r},
                    files=files, scope=scope, workers=0, plan=plan, worker_crop=256,
                    policy=policy, device="cpu"))
            out[f"{{scope}}:{{name}}"] = {{k: row.get(k) for k in
                ("status", "reason", "output_shape", "output_device", "gpu_ops")}}
        print(json.dumps(out))
        """,
    )
    errors = {k: v["reason"] for k, v in result.items() if v["status"] not in ("ok", "unsupported")}
    assert not errors, errors
    for key, row in result.items():
        name = key.split(":", 1)[1]
        if row["status"] == "unsupported":
            assert row["reason"], key
            continue
        assert row["output_shape"] == [2, 3, *gpu_recipes.output_hw(name)], key
        assert row["output_device"] == "cpu", key
    # the size-changing recipes predicted to fail on a 224 assumption (Kornia has no Pad mapping)
    for name, hw in (("Pad", [244, 244]), ("LongestMaxSize", [512, 512]),
                     ("SmallestMaxSize", [512, 512])):  # fmt: skip
        row = result[f"memory:{name}"]
        assert row["status"] == "ok" or (library, name) == ("kornia", "Pad"), (name, row)
        if row["status"] == "ok":
            assert row["output_shape"] == [2, 3, *hw]
    if library == "torchvision":
        jpeg = result["memory:JpegCompression"]
        assert jpeg["status"] == "unsupported" and "decode_jpeg" in jpeg["reason"]
    if library == "kornia":
        assert result["memory:UnsharpMask"]["status"] == "ok"  # a function, not a module
        assert "same_on_batch=False" in result["memory:Rotate"]["gpu_ops"]
    ok = sum(row["status"] == "ok" for row in result.values())
    assert ok >= 30, result  # the libraries cover most of the catalog


def test_dali_timing_code_sees_a_known_sleep_in_the_pipeline(tmp_path: Path) -> None:
    """DALI's timed loop (engines.dali.time_pipeline, the engine's own) around a CPU pipeline whose
    python_function sleeps 5 ms per image: Pipeline.run() is host-synchronous, so the measured
    throughput can be no more than 1 / 5 ms plus what the prefetch queue held at the start."""
    result = run_in_env(
        "dali",
        """
        import json, time
        import nvidia.dali.fn as fn
        from nvidia.dali.pipeline import Pipeline
        from augbench.measuring.engines import dali
        from augbench.measuring.engines.streaming import StreamPlan
        from augbench.policy import SlowTransformPolicy

        def sleepy(sample):
            time.sleep(0.005)
            return sample

        depth = 2
        pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, prefetch_queue_depth=depth)
        with pipe:
            x = fn.random.uniform(range=[0, 1], shape=[3, 8, 8])
            pipe.set_outputs(fn.python_function(x, function=sleepy))
        pipe.build()
        policy = SlowTransformPolicy(enabled=False)
        plan = StreamPlan.for_images(40, 2, warmup_reps=1, reps=3, policy=policy)
        result, last = dali.time_pipeline(pipe, plan, policy, "dali | sleep test")
        print(json.dumps({"times": result.times, "images": result.images_per_rep,
                          "bpr": plan.batches_per_rep, "depth": depth, "kind": last["kind"]}))
        """,
    )
    assert result["kind"] == "TensorListCPU" and result["images"] == 40
    # Batches already prefetched when the clock starts (at most the queue depth) are free.
    floor = (result["bpr"] - result["depth"]) * 2 * 0.005
    for seconds in result["times"]:
        assert seconds >= 0.95 * floor, (seconds, floor)
        assert seconds < 20 * floor  # generous: a shared 2-core machine


def test_gpu_required_fails_the_gpu_job_without_cuda(tmp_path: Path) -> None:
    """The real workflow, gpu=required, on this machine: the GPU job stops with the CUDA error
    (driver found, runtime needed, what to do) instead of writing skipped rows."""
    if cuda_available():
        pytest.skip("CUDA works here: gpu=required has nothing to refuse")
    args = [a for a in SMOKE_CONFIG if not a.startswith(("libraries=", "regimes="))]
    proc = run_snakemake(
        tmp_path, "--cores", "2", *args, "libraries=[torchvision]", "regimes=[gpu_dataloader]",
        "gpu=required", check=False,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output[-3000:]
    assert "config gpu=required, but CUDA is not usable on this machine (no_device)" in output
    assert "Driver found: none; CUDA runtime needed: 13.0" in output
    assert "driver >= 580" in output and "What to do:" in output
    assert not list(tmp_path.glob("results/raw/**/*.json"))


def test_dali_cpu_engine_records_unsupported_and_measures_the_rest(
    smoke_run: WorkflowRun, tmp_path: Path
) -> None:
    rows = run_engine(
        env_python("dali"), "dali", "--variant", "dali-cpu",
        "--transforms", "Affine,Posterize,RandomResizedCrop,Grayscale",
        "--manifest", str(smoke_run.manifest), "--num-images", "4", "--batch-size", "2",
        "--num-threads", "1", "--values", "1", "--warmups", "0",
        output=tmp_path / "dali.json",
    )["results"]  # fmt: skip
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
        from augbench.measuring import media
        from augbench.measuring.engines import gpu_dataloader as g
        from augbench.measuring.engines.streaming import StreamPlan
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
        files = media.select_files(Path({str(smoke_run.manifest)!r}), 6)
        rows = {{}}
        for synchronize in (True, False):  # False: the negative control
            rows[str(synchronize)] = g.measure_transform(
                library="torchvision", transform="HorizontalFlip", randomness="per-sample",
                files=files, scope="memory", workers=0, plan=plan, worker_crop=256,
                policy=policy, device="cuda", apply_override=sleepy, synchronize=synchronize,
            )
            torch.cuda.synchronize()
        print(json.dumps({{"rows": rows, "kernel_s": kernel_s, "bpr": plan.batches_per_rep,
                          "device": torch.cuda.get_device_name(device)}}))
        """,
    )
    row, control = result["rows"]["True"], result["rows"]["False"]
    assert row["status"] == "ok", row.get("reason")
    floor = result["bpr"] * result["kernel_s"]
    for seconds in row["times"]:
        assert seconds >= 0.95 * floor, (seconds, floor, result["device"])
    assert row["gpu_peak_allocated_mb"] > 0
    # Negative control: without the synchronisation the timed scope misses the kernels, so a
    # harness that forgot to synchronise would fail the assertion above.
    assert min(control["times"]) < 0.5 * floor, (control["times"], floor)


@ENGINE_ON_CPU_CASES
def test_every_shipped_pipeline_runs_its_gpu_chain_on_cpu_tensors_or_names_the_step(
    tmp_path: Path, library: str, randomness: str
) -> None:
    """Each shipped pipeline through the GPU DataLoader engine's own code (measure_transform with
    ``pipeline=``, both scopes, CPU tensors): `ok` with the pipeline's output shape and float32,
    or one row from the GPU support check naming the step or target it lacks."""
    shipped = yaml.safe_load((REPO / "config/config.yaml").read_text())["pipelines"]
    default = resolve(
        {
            "machine": "t",
            "dataset": {"archive": None},
            "libraries": [library],
            "regimes": ["gpu_dataloader"],
            "envs": {},
            "pipelines": shipped,
        },
        REPO,
    )
    result = run_in_env(
        library,
        engine_on_cpu(library, jpeg_files(tmp_path))
        + f"""
        from augbench.workload import pipelines
        defs = pipelines.from_json({json.dumps(default["pipeline_definitions"])!r})
        out = {{}}
        for name, pipe in defs.items():
            for scope in ("memory", "decode"):
                problem = pipelines.gpu_support_problem(adapter, pipe)
                if problem is not None:
                    row = {{"status": problem[0], "reason": problem[1]}}
                else:
                    row = skeleton.measure_row(g.measure_transform, dict(
                        library={library!r}, transform=name, randomness={randomness!r},
                        files=files, scope=scope, workers=0, plan=plan, worker_crop=256,
                        policy=policy, device="cpu", pipeline=pipe))
                out[f"{{scope}}:{{name}}"] = {{k: row.get(k) for k in (
                    "status", "reason", "output_shape", "output_dtype", "gpu_ops",
                    "worker_crop", "mask_output_shape")}}
        print(json.dumps(out))
        """,
    )
    for key, row in result.items():
        name = key.split(":", 1)[1]
        if name.startswith("imagenet_train") and library == "kornia":  # no antialiased crop
            assert row["status"] == "unsupported" and "antialias" in row["reason"], row
            continue
        if name == "highres_segmentation" and library == "torchvision":  # no PadIfNeeded
            assert row["status"] == "unsupported" and "PadIfNeeded" in row["reason"], row
            continue
        if name == "highres_segmentation":  # Kornia carries the mask through its own API
            assert row["status"] == "ok", (key, row["reason"])
            assert row["output_shape"] == [2, 3, 1024, 1024], key
            assert row["mask_output_shape"] == [2, 1, 1024, 1024], key
            assert "AugmentationSequential" in row["gpu_ops"], row["gpu_ops"]
            continue
        assert row["status"] == "ok", (key, row["reason"])
        assert row["output_shape"] == [2, 3, 224, 224] and row["output_dtype"] == "float32", key
        assert row["worker_crop"] == [256, 256], key  # cut for the first step, RandomResizedCrop
    ops = result["memory:train_medium"]["gpu_ops"]
    assert "GaussianBlur" in ops and "Normalize" in ops, ops
    # The library's own container holds the steps.
    assert ("v2.Compose" if library == "torchvision" else "AugmentationSequential") in ops, ops


def test_kornia_moves_the_mask_with_the_images_on_device_batches() -> None:
    """The GPU engine's own chain for a pipeline with a mask (build_pipeline_apply, on CPU
    tensors): white blobs on black whose mask is the image itself; after a flip and an affine
    warp the mask still covers the white pixels (bilinear vs nearest edges aside), and the mask
    left unmoved would not (negative control)."""
    result = run_in_env(
        "kornia",
        """
        import json, torch
        from augbench.workload import pipelines
        from augbench.measuring.engines import gpu_dataloader as g
        pipe = pipelines.parse({"name": "seg", "targets": ["mask"],
                                "steps": ["HorizontalFlip", "Affine", "Normalize"]})
        images = torch.zeros(3, 3, 96, 128, dtype=torch.uint8)
        images[:, :, 10:60, 8:50] = 255  # a block at the left: a flip moves it
        masks = torch.stack([g.crop_mask(image) for image in images])
        apply, ops = g.build_pipeline_apply("kornia", pipe, "per-sample", torch.device("cpu"))
        torch.manual_seed(0)
        out, out_mask = apply((images.clone(), masks.clone()))
        # Normalize's image of a white pixel is (1 - mean) / std, of black -mean / std.
        white = out[:, 0] > (0.5 - 0.485) / 0.229
        moved = (white == (out_mask[:, 0] > 0.5)).float().mean().item()
        unmoved = (white == (masks[:, 0] > 0)).float().mean().item()
        print(json.dumps({"moved": moved, "unmoved": unmoved, "ops": ops,
                          "shapes": [list(out.shape), list(out_mask.shape)],
                          "values": sorted(out_mask.unique().tolist())}))
        """,
    )
    assert result["shapes"] == [[3, 3, 96, 128], [3, 1, 96, 128]]
    assert set(result["values"]) <= {0.0, 1.0}
    assert result["moved"] >= 0.97, result
    assert result["unmoved"] < 0.9, result
    assert "AugmentationSequential" in result["ops"]
