"""Stability: every repeated run of every ok row, relative to the row's median, with the IQR,
the median and the coefficient of variation (rows above the policy threshold flagged)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from augbench.analysis.figures.style import (
    Drawn,
    caption,
    empty_figure,
    finish_legend_above,
    library_color,
    margin_note,
    stacked_panels,
    status_counts_text,
)
from augbench.analysis.groups import iter_groups, library_order, runs
from augbench.policy import CV_UNSTABLE_THRESHOLD


def title(regime: str) -> str:
    return f"Run-to-run stability, {regime} regime"


def _rows(group_rows: pd.DataFrame) -> list[tuple[str, str, np.ndarray, float]]:
    out = []
    ok = group_rows[group_rows["status"] == "ok"]
    libs = library_order(ok["library"])
    for transform in sorted(ok["transform"].unique()):
        for lib in libs:
            match = ok[(ok["transform"] == transform) & (ok["library"] == lib)]
            for _, row in match.iterrows():
                values = np.asarray(runs(row), dtype=float)
                if values.size:
                    cv = row.get("cv_throughput")
                    if pd.isna(cv):
                        cv = values.std(ddof=1) / values.mean() if values.size > 1 else 0.0
                    out.append((transform, lib, values, float(cv)))
    return out


def draw(frame: pd.DataFrame, regime: str) -> Drawn:
    groups = [g for g in iter_groups(frame, regime) if _rows(g.rows)]
    if not groups:
        message = f"no {regime} rows with repeated runs in these results"
        present = frame[frame["regime"] == regime] if len(frame) else frame
        if len(present):
            message += f" ({status_counts_text(present)})"
        return empty_figure(title(regime), message, f"{title(regime)}.")
    panels = [(g, _rows(g.rows)) for g in groups]
    heights = [0.7 + 0.26 * len(r) for _, r in panels]
    fig, axes = stacked_panels(heights, pad=0.8)
    rng = np.random.default_rng(0)  # fixed jitter: the same figure for the same data
    limit = 0.0
    for ax, (group, rows) in zip(axes, panels, strict=True):
        labels = []
        for i, (transform, lib, values, cv) in enumerate(rows):
            y = len(rows) - 1 - i
            median = float(np.median(values))
            rel = (values / median - 1.0) * 100.0
            limit = max(limit, float(np.abs(rel).max()))
            q1, q3 = np.percentile(rel, [25, 75])
            color = library_color(lib)
            ax.plot([q1, q3], [y, y], color=color, lw=5, alpha=0.35, solid_capstyle="butt")
            ax.plot([0, 0], [y - 0.3, y + 0.3], color="black", lw=1.2)
            jitter = rng.uniform(-0.18, 0.18, size=rel.size)
            ax.plot(rel, y + jitter, "o", color=color, ms=3.5, alpha=0.85)
            unstable = cv > CV_UNSTABLE_THRESHOLD
            note = f"{median:,.0f} img/s, CV {cv:.1%}" + ("  UNSTABLE" if unstable else "")
            margin_note(ax, y, note, "#B22222" if unstable else "#555555")
            labels.append(f"{transform} · {lib}")
        ax.set_yticks(range(len(rows) - 1, -1, -1), labels)
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.grid(axis="y", visible=False)
        ax.set_title(group.label, loc="left", fontsize=9)
    limit = max(limit * 1.15, 5.0)
    axes[-1].set_xlim(-limit, limit)
    axes[-1].set_xlabel("run throughput relative to the row's median (%)")
    libraries = library_order(pd.concat([g.rows for g in groups])["library"])
    handles = [
        Line2D([], [], marker="o", ls="", ms=4, color=library_color(lib), label=f"{lib} run")
        for lib in libraries
    ]
    handles += [
        Line2D([], [], color="#888888", lw=5, alpha=0.35, label="IQR"),
        Line2D([], [], color="black", lw=1.2, label="median"),
    ]
    finish_legend_above(fig, handles, title(regime))
    rows_all = pd.concat([g.rows for g in groups])
    rows = (
        "ok rows only (other statuses have no repeated runs; see the coverage figure); every "
        "repeated run is a dot, the shaded bar is the IQR, the black tick the median; the right "
        f"margin gives the median and the coefficient of variation, flagged UNSTABLE above "
        f"{CV_UNSTABLE_THRESHOLD:.0%}."
    )
    metric = "per-run throughput relative to the row's median (%), every run shown"
    return Drawn(fig, caption(title(regime), rows_all, metric=metric, rows=rows))
