"""Rows whose timed window page-faulted more than their output needs: allocator-bound.

Every micro, cpu_dataloader and pipeline row records ``minor_faults_per_image`` (minor page faults
over its timed window / images, workers included where the regime has them) and
``output_pages`` (4 KiB pages of one output image). A row faulting more pages per image than one
output image holds is giving memory back to the kernel and faulting it in again on every call:
its time measures the allocator's policy (augbench.allocator, docs/pipelines.md "Measured here")
as much as the library. The summary says so next to the numbers.
"""

from __future__ import annotations

import pandas as pd


def bound_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """ok rows with both counts whose faults per image exceed the output's pages."""
    needed = {"minor_faults_per_image", "output_pages"}
    if frame.empty or not needed <= set(frame.columns):
        return frame.iloc[:0]
    faults = pd.to_numeric(frame["minor_faults_per_image"], errors="coerce")
    pages = pd.to_numeric(frame["output_pages"], errors="coerce")
    bound = (frame["status"] == "ok") & faults.notna() & pages.notna() & (faults > pages)
    out = frame[bound].assign(_faults=faults[bound], _pages=pages[bound])
    return out.sort_values("_faults", ascending=False)


def summary_lines(frame: pd.DataFrame, most: int = 15) -> list[str]:
    rows = bound_rows(frame)
    if rows.empty:
        return []
    lines = [
        "## Allocator-bound rows",
        "",
        f"{len(rows)} ok rows page-faulted more pages per image in their timed window than one "
        "output image holds: the allocator returned the buffers to the kernel and faulted them "
        "in again, so these times measure its policy as much as the library (the `allocator` "
        "column says which was in force). The largest:",
        "",
        "| regime | library | transform | allocator | minor faults / image | output pages |",
        "|---|---|---|---|---|---|",
    ]
    for _, r in rows.head(most).iterrows():
        lines.append(
            f"| {r['regime']} | {r['library']} | {r['transform']} | {r.get('allocator') or ''} "
            f"| {r['_faults']:.0f} | {r['_pages']:.0f} |"
        )
    return [*lines, ""]
