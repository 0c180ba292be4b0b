"""Training throughput against DataLoader workers: measured (solid, with the interval of the
median) and predicted out of sample by the starvation model (dashed: from the cpu_dataloader
rows of the same recipe, workers and batch), per library, with the model's rate; one panel per
accelerator and recipe."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd

from augbench.analysis.figures.style import Drawn, caption, empty_figure, library_color
from augbench.analysis.groups import library_order
from augbench.analysis.training import predicted_vs_measured
from augbench.policy import FED_WAIT

TITLE = "Training throughput versus DataLoader workers"


def draw(frame: pd.DataFrame) -> Drawn:
    table = predicted_vs_measured(frame)
    ok = table[table["status"] == "ok"]
    text = caption(
        TITLE,
        frame[frame["regime"] == "training"] if "regime" in frame.columns else frame,
        metric="images per second of a training loop (next(loader) + step), median over blocks "
        "of its timed window with the interval of the median (solid), the starvation model's "
        "prediction out of sample, from the cpu_dataloader rows of the same recipe, workers "
        "and batch (dashed, where those rows exist), and the model's rate (grey line); a ring "
        f"marks the fewest workers fed (the whole interval of the data wait under {FED_WAIT:.0%})",
        rows="ok training rows; others are in results/tables/training.csv with their reason.",
    )
    if ok.empty:
        return empty_figure(TITLE, "no ok training rows", text)
    panels = list(ok.groupby(["machine", "variant", "transform"], sort=True))
    cols = min(3, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.4 * rows), squeeze=False)
    for ax, ((machine, variant, transform), part) in zip(axes.flat, panels, strict=False):
        for library in library_order(part["library"]):
            mine = part[part["library"] == library].sort_values("workers")
            color = library_color(library)
            ax.errorbar(
                mine["workers"],
                mine["images_per_second"],
                yerr=[
                    (mine["images_per_second"] - mine["ci_low"]).clip(lower=0).fillna(0),
                    (mine["ci_high"] - mine["images_per_second"]).clip(lower=0).fillna(0),
                ],
                fmt="o-",
                color=color,
                capsize=2,
                label=library,
            )
            predicted = mine.dropna(subset=["predicted_img_per_s"])
            ax.plot(
                predicted["workers"], predicted["predicted_img_per_s"], "--", color=color, alpha=0.7
            )
            fed = mine["fewest_workers_fed"].dropna()
            if not fed.empty:
                at = mine[mine["workers"] == int(fed.iloc[0])]
                ax.plot(at["workers"], at["images_per_second"], "o", ms=12, mfc="none", color=color)
        ax.axhline(part["model_img_per_s"].median(), color="#888888", lw=1, label="model")
        # The feed is in both names (``... · gpu-feed``): say it once.
        shown = [word for word in variant.split(" · ") if word not in transform.split(" · ")]
        ax.set_title(f"{' · '.join([transform, *shown])}\n{machine}", fontsize=9, loc="left")
        ax.set_xlabel("DataLoader workers")
        ax.set_ylabel("images / s")
        ax.set_xticks(sorted(part["workers"].unique()))
        ax.set_ylim(bottom=0)  # from zero: a few percent must not look like a cliff
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_axis_off()
    fig.suptitle(TITLE, fontsize=11)
    fig.tight_layout()
    return Drawn(fig, text)
