"""Per-step cost of each user pipeline: share of per-image time per step, per library.

One panel per pipeline, one horizontal bar per library, split into its steps in pipeline order
(the same step has the same color in every panel); the bar's label gives the pipeline's time per
image and the sum-of-steps / whole ratio. Libraries that cannot run the pipeline are listed with
the step they lack.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.patches import Patch

from augbench.analysis.cells import is_true
from augbench.analysis.figures.style import Drawn, empty_figure
from augbench.analysis.groups import library_order
from augbench.analysis.tidy import allocator_tag
from augbench.policy import PIPELINE_HARNESS_TOLERANCE

TITLE = "Per-step cost of each pipeline: share of per-image time, per library"


def _step_colors(steps: list[str]) -> dict[str, object]:
    cmap = plt.get_cmap("tab20")
    return {step: cmap(i % 20) for i, step in enumerate(steps)}


def draw(table: pd.DataFrame) -> Drawn:
    """``table`` is ``augbench.analysis.pipelines.breakdown``; a setting of config allocators
    other than glibc gets its own bar per library (``library · setting``)."""
    if "allocator_setting" in table.columns:
        settings = table["allocator_setting"].fillna("").astype(str)
        labels = [
            f"{lib} · {setting}" if allocator_tag(setting) else str(lib)
            for lib, setting in zip(table["library"], settings, strict=True)
        ]
        table = table.assign(library=labels)
    if table.empty:
        return empty_figure(TITLE, "no pipeline breakdown rows in these results", f"{TITLE}.")
    pipelines = list(dict.fromkeys(table["pipeline"].astype(str)))
    ok = table[table["status"] == "ok"]
    steps = list(dict.fromkeys(ok.sort_values("step_index")["step"].astype(str)))
    colors = _step_colors(steps)
    heights = [1.0 + 0.5 * table[table["pipeline"] == p]["library"].nunique() for p in pipelines]
    fig, axes = plt.subplots(
        len(pipelines),
        1,
        figsize=(9.0, sum(heights) + 1.2),
        gridspec_kw={"height_ratios": heights},
        squeeze=False,
    )
    flagged = []
    for ax, name in zip(axes[:, 0], pipelines, strict=True):
        part = table[table["pipeline"] == name]
        libraries = library_order(part["library"])
        for y, lib in enumerate(reversed(libraries)):
            rows = part[part["library"] == lib].sort_values("step_index")
            if rows.iloc[0]["status"] != "ok":
                first = rows.iloc[0]
                what = f" at {first['step']}" if isinstance(first["step"], str) else ""
                ax.text(0.01, y, f"{first['status']}{what}", va="center", fontsize=8, color="#666")
                continue
            left = 0.0
            for _, row in rows.iterrows():
                share = float(row["share"]) if not math.isnan(float(row["share"])) else 0.0
                ax.barh(y, share * 100, left=left, color=colors[str(row["step"])], height=0.6)
                if share >= 0.08:
                    text = f"{share:.0%}"
                    ax.text(left + share * 50, y, text, ha="center", va="center", fontsize=7)
                left += share * 100
            head = rows.iloc[0]
            ratio = float(head["harness_vs_bare"])
            mark = "" if is_true(head["harness_vs_bare_within"]) else " (!)"
            if mark:
                flagged.append(f"{name}/{lib} (harness/bare {ratio:.2f})")
            effect = float(head["composition_effect"])
            label = f"{head['pipeline_ms_per_image']:.2f} ms/img, whole/Σ {effect:.2f}{mark}"
            ax.text(101, y, label, va="center", fontsize=8)
        ax.set_yticks(range(len(libraries)), list(reversed(libraries)))
        ax.set_xlim(0, 135)
        ax.set_xticks([0, 25, 50, 75, 100])
        ax.set_title(name, loc="left", fontsize=10)
    axes[-1, 0].set_xlabel("share of the pipeline's per-image time (sum of its steps = 100 %)")
    fig.suptitle(TITLE, fontsize=11)
    rows = math.ceil(len(steps) / 5)
    legend_space = (0.25 + 0.2 * rows) / fig.get_figheight()
    fig.tight_layout(rect=(0, legend_space, 1, 1 - 0.4 / fig.get_figheight()))
    fig.legend(
        handles=[Patch(color=colors[s], label=s) for s in steps],
        loc="lower center",
        ncol=min(5, len(steps)),
        fontsize=8,
        frameon=False,
        bbox_to_anchor=(0.5, 0.0),
    )
    return Drawn(fig, caption_text(table, flagged))


def caption_text(table: pd.DataFrame, flagged: list[str]) -> str:
    machines = ", ".join(sorted({str(m) for m in table["machine"].dropna()}))
    images = sorted({int(float(n)) for n in table["num_images"].dropna()})
    ok = table[table["status"] == "ok"]
    others = table[table["status"] != "ok"]
    parts = [
        f"{TITLE}.",
        "Regime: micro, one thread, images decoded by each library's own decoder at their "
        "dataset size, in the library's native layout.",
        "Metric: median time of each step per image, each step timed alone on the previous "
        "steps' materialized outputs, as a share of the summed step time; the label gives the "
        "whole pipeline's median ms per image (the library's own composition object, called "
        "once per image, in passes alternating with the per-step passes and a bare loop) and "
        "whole/Σ, the composition effect (the whole over the summed isolated steps); '(!)' "
        f"marks a harness / bare check outside {PIPELINE_HARNESS_TOLERANCE:.0%}.",
        f"Pipelines: {', '.join(dict.fromkeys(table['pipeline'].astype(str)))}.",
        f"Dataset: {', '.join(sorted({str(d) for d in table['dataset'].dropna()}))}, "
        f"{', '.join(str(i) for i in images) or 'unknown'} images per pass.",
        f"Hardware: {machines or 'unknown'}.",
        f"Rows: {ok[['library', 'pipeline']].drop_duplicates().shape[0]} library x pipeline "
        f"breakdowns; {len(others)} not measured (unsupported or skipped, the step named).",
    ]
    if flagged:
        parts.append(
            f"Harness / bare outside {PIPELINE_HARNESS_TOLERANCE:.0%}: {', '.join(flagged)}."
        )
    return " ".join(parts)
