"""The synchronisation check of the GPU timer, with its negative control, as a run on this machine.

With CUDA (``--device cuda``): a ``torch.cuda._sleep`` kernel calibrated to ``--kernel-ms`` is
launched in every GPU step of the GPU DataLoader engine's own measuring code
(``gpu_dataloader.measure_transform`` with ``apply_override``, scope memory). The kernel returns
at once on the host and keeps the GPU busy, as any queued GPU work does. With the engine's
synchronisation every repetition must take at least its batches' kernels (>= 95 % of them);
with ``synchronize=False`` (the negative control) the clock stops before the kernels finish, so
the fastest repetition must stay under half of that floor. Both must hold: a timer that never
waited would fail the first, a check that could not tell the difference would fail the second.
This is the check of ``tests/test_workflow_gpu.py::test_cuda_sleep_kernel_in_the_gpu_step_is_
inside_the_measured_time``, run where the GPU is.

Without CUDA (``--device cpu``): the same stream timer
(``augbench.measuring.engines.streaming.run_stream``) around a stand-in whose "launched" work only
completes in ``sync()``, and the control with ``sync()`` doing nothing; the kernel check is recorded
as skipped, naming why.

Writes one JSON document (``--output``): the verdict (``passed``), the floor, every repetition's
time on both sides and the device.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

# Repetitions must include at least this share of the injected work with synchronisation, and
# the control's fastest repetition must stay under this share of it without.
SYNCED_MIN_SHARE = 0.95
CONTROL_MAX_SHARE = 0.5
IMAGES, BATCH, WARMUP_REPS, REPS = 6, 3, 1, 3


def verdict(synced: list[float], control: list[float], floor_s: float) -> dict[str, Any]:
    """Whether the synchronised repetitions include the injected work and the control's do not."""
    includes = all(t >= SYNCED_MIN_SHARE * floor_s for t in synced)
    control_misses = min(control) < CONTROL_MAX_SHARE * floor_s
    return {
        "floor_s": floor_s,
        "with_sync_times_s": synced,
        "control_times_s": control,
        "with_sync_includes_the_work": includes,
        "control_misses_the_work": control_misses,
        "passed": includes and control_misses,
        "rule": f"every synchronised repetition >= {SYNCED_MIN_SHARE} x floor; the control's "
        f"fastest < {CONTROL_MAX_SHARE} x floor (floor: the injected work of one repetition)",
    }


def cuda_check(manifest: Path, kernel_ms: float) -> dict[str, Any]:
    """The sleep-kernel check through the engine's measure_transform on the CUDA device."""
    import torch

    from augbench.measuring import media
    from augbench.measuring.engines import gpu_dataloader
    from augbench.measuring.engines.streaming import StreamPlan
    from augbench.policy import SlowTransformPolicy

    device = torch.device("cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def kernel_seconds(cycles: int) -> float:
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / 1000.0

    cycles = 10_000_000
    cycles = int(cycles * (kernel_ms / 1000.0) / kernel_seconds(cycles))
    kernel_s = kernel_seconds(cycles)

    def sleepy(batch: Any) -> Any:
        torch.cuda._sleep(cycles)  # returns at once; the GPU stays busy for kernel_s
        return batch.float()

    policy = SlowTransformPolicy(enabled=False)
    plan = StreamPlan.for_images(IMAGES, BATCH, warmup_reps=WARMUP_REPS, reps=REPS, policy=policy)
    files = media.select_files(manifest, IMAGES)
    rows = {}
    for synchronize in (True, False):
        rows[synchronize] = gpu_dataloader.measure_transform(
            library="torchvision", transform="HorizontalFlip", randomness="per-sample",
            files=files, scope="memory", workers=0, plan=plan, worker_crop=256, policy=policy,
            device="cuda", apply_override=sleepy, synchronize=synchronize,
        )  # fmt: skip
        torch.cuda.synchronize()
    for synchronize, row in rows.items():
        if row.get("status") != "ok":
            raise RuntimeError(f"synchronize={synchronize}: row is {row.get('status')}: {row}")
    result = verdict(rows[True]["times"], rows[False]["times"], plan.batches_per_rep * kernel_s)
    return {
        "mode": "cuda sleep kernel in the GPU DataLoader engine's step",
        "device": torch.cuda.get_device_name(device),
        "injected_s_per_step": kernel_s,
        "batches_per_repetition": plan.batches_per_rep,
        "gpu_peak_allocated_mb": rows[True].get("gpu_peak_allocated_mb"),
        **result,
    }


def cpu_stand_in(work_ms: float) -> dict[str, Any]:
    """The stream timer around work that only completes in ``sync()``, and its control."""
    from augbench.measuring.engines.streaming import StreamPlan, run_stream
    from augbench.policy import SlowTransformPolicy

    policy = SlowTransformPolicy(enabled=False)
    plan = StreamPlan.for_images(IMAGES, BATCH, warmup_reps=WARMUP_REPS, reps=REPS, policy=policy)
    pending: list[float] = []

    def step() -> int:
        pending.append(work_ms / 1000.0)  # "launched", finished only by sync()
        return BATCH

    def sync() -> None:
        time.sleep(sum(pending))
        pending.clear()

    synced = run_stream(step, sync, plan, policy)
    pending.clear()
    control = run_stream(step, pending.clear, plan, policy)  # sync() waits for nothing
    result = verdict(synced.times, control.times, plan.batches_per_rep * work_ms / 1000.0)
    return {
        "mode": "cpu stand-in: the stream timer around work finished only in sync()",
        "device": "cpu",
        "injected_s_per_step": work_ms / 1000.0,
        "batches_per_repetition": plan.batches_per_rep,
        "cuda_kernel": {
            "status": "skipped",
            "reason": "no CUDA device: the torch.cuda._sleep kernel check needs one",
        },
        **result,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["cuda", "cpu"], required=True)
    p.add_argument("--manifest", type=Path, help="the staged dataset (--device cuda)")
    p.add_argument("--kernel-ms", type=float, default=50.0)
    p.add_argument("--output", type=Path, required=True)
    args = p.parse_args(argv)
    if args.device == "cuda":
        if args.manifest is None:
            p.error("--device cuda needs --manifest")
        doc = cuda_check(args.manifest, args.kernel_ms)
    else:
        doc = cpu_stand_in(args.kernel_ms / 5)
    doc = {"check": "gpu timer synchronisation with a negative control", **doc}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(doc, indent=1) + "\n")
    synced, control = min(doc["with_sync_times_s"]), min(doc["control_times_s"])
    print(
        f"sync_check | {doc['mode']}: {'passed' if doc['passed'] else 'FAILED'} (floor "
        f"{doc['floor_s'] * 1000:.1f} ms; with sync min {synced * 1000:.1f} ms, control min "
        f"{control * 1000:.1f} ms)",
        file=sys.stderr,
    )
    return 0 if doc["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
