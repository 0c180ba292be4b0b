"""Small synthetic tidy tables covering every regime, for figure and analysis tests."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from augbench.analysis.tidy import COLUMNS

TRANSFORMS = ("HorizontalFlip", "GaussianBlur", "ColorJitter")


def row(**values: object) -> dict[str, object]:
    base: dict[str, object] = {col: None for col in COLUMNS}
    base.update(
        machine="m1",
        regime="micro",
        scope="memory",
        workers=-1,
        batch_size=-1,
        variant="",
        status="ok",
        reason="",
        dataset="tiny",
        num_images=8,
        processor="Test CPU",
    )
    base.update(values)
    runs = values.get("runs")
    if runs is not None:
        runs = [float(r) for r in runs]  # type: ignore[union-attr]
        mean = sum(runs) / len(runs)
        std = (sum((r - mean) ** 2 for r in runs) / (len(runs) - 1)) ** 0.5 if len(runs) > 1 else 0
        base.update(
            throughputs=json.dumps(runs),
            median_throughput=sorted(runs)[len(runs) // 2],
            mean_throughput=mean,
            std_throughput=std,
            cv_throughput=std / mean,
            variance_stable=std / mean <= 0.15,
        )
    base.pop("runs", None)
    return base


def multi_regime() -> pd.DataFrame:
    rows = []
    speed = {"albumentationsx": 1000.0, "torchvision": 400.0, "kornia": 200.0, "pillow": 600.0}
    for i, t in enumerate(TRANSFORMS):
        for lib, s in speed.items():
            if lib == "pillow" and t == "ColorJitter":
                rows.append(row(library=lib, transform=t, status="unsupported", reason="no hue"))
                continue
            if lib == "kornia" and t == "GaussianBlur":
                rows.append(
                    row(
                        library=lib,
                        transform=t,
                        status="early_stopped",
                        reason="slow",
                        preflight_throughput=12.0,
                    )
                )
                continue
            base = s / (i + 1)
            rows.append(
                row(
                    library=lib,
                    transform=t,
                    runs=[base * 0.98, base, base * 1.03, base * 1.01],
                    peak_rss_mb=100 + 50 * len(lib),
                )
            )
        for workers in (1, 2, 4):
            for lib, s in speed.items():
                v = s * workers / (i + 1)
                rows.append(
                    row(
                        regime="cpu_dataloader",
                        library=lib,
                        transform=t,
                        workers=workers,
                        batch_size=32,
                        runs=[v * 0.9, v * 0.9, v],
                        peak_rss_mb=300.0 * workers,
                    )
                )
        for lib, ratio in (("torchvision", 1.5), ("kornia", 0.7)):
            rows.append(
                row(
                    regime="gpu_dataloader",
                    library=lib,
                    transform=t,
                    workers=4,
                    batch_size=32,
                    randomness="per-sample",
                    runs=[4000 * ratio / (i + 1)] * 3,
                    gpu_peak_allocated_mb=500.0 + 100 * i,
                    device="cuda",
                )
            )
        rows.append(
            row(
                regime="dali",
                library="dali",
                transform=t,
                status="skipped",
                reason="no CUDA device",
            )
        )
    rows.append(
        row(
            regime="micro", library="torchvision", transform="Rotate", status="error", reason="boom"
        )
    )
    for workers in (0, 1, 2):  # the training regime: the sleep stand-in, model-bound at 80 img/s
        for lib, s in (("albumentationsx", 300.0), ("torchvision", 200.0)):
            served = 1 / (1 / s + 1 / 80.0) if workers == 0 else min(s, 80.0)
            rows.append(
                row(
                    regime="training", scope="decode", library=lib, transform="RandomResizedCrop",
                    workers=workers, batch_size=4, variant="sleep-50ms",
                    runs=[served * 0.98, served, served * 1.01], images_per_second=served,
                    accelerator="sleep:50", ci_low=served * 0.98, ci_high=served * 1.01,
                    data_wait_fraction=0.2 if workers == 0 else 0.01,
                    data_wait_median=0.2 if workers == 0 else 0.01,
                    data_wait_ci_low=0.19 if workers == 0 else 0.005,
                    data_wait_ci_high=0.21 if workers == 0 else 0.015,
                    loader_img_per_s=s, model_img_per_s=80.0,
                    step_ms={"n": 30, "p50": 50.0, "p95": 51.0, "max": 52.0},
                    batch_wait_ms={"n": 30, "p50": 1.0, "p95": 2.0, "max": 3.0},
                )
            )  # fmt: skip
    extra = [c for r in rows for c in r if c not in COLUMNS]
    frame = pd.DataFrame(rows, columns=[*COLUMNS, *dict.fromkeys(extra)])
    for col in ("median_throughput", "mean_throughput", "std_throughput", "cv_throughput"):
        frame[col] = pd.to_numeric(frame[col])
    return frame


def tar_archive(path: Path, members: dict[str, bytes]) -> Path:
    """A plain tar of ``members`` (name -> bytes) at ``path``, as a user would hand it over."""
    import tarfile

    from augbench.planning.dataset import add_tar_member

    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            add_tar_member(tar, name, data)
    return path
