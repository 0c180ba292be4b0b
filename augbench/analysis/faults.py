"""Rows whose timed window page-faulted more than their output needs: allocator-bound.

Every micro, cpu_dataloader and pipeline row records ``minor_faults_per_image`` (minor page faults
over its timed window / images, workers included where the regime has them) and
``output_pages`` (4 KiB pages of one output image); a pipeline row also its most-faulting
process's count (``row_faults``). A row faulting more pages per image than one
output image holds (twice that with DataLoader workers: :func:`fault_allowance`) is giving memory
back to the kernel and faulting it in again on every call: its time measures the allocator's
policy (augbench.measuring.allocator, docs/allocator.md) as much as the library. The summary says so
next to the numbers.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from augbench.analysis.cells import number


def fault_allowance(pages: float, workers: Any) -> float:
    """Faults per image a row may take without being allocator-bound: one output's pages, twice
    that with DataLoader workers. A worker hands every batch to the main process in a new
    shared-memory segment, faulted in once per page whatever the allocator (measured: ~1.0x the
    output's pages under glibc-steady and mimalloc alike, docs/allocator.md)."""
    workers = number(workers)
    return pages * (2.0 if not math.isnan(workers) and workers > 0 else 1.0)


# A row's (or a pooled supply's) page faults per image in its most-faulting process or run.
MOST_FAULTS = "most_minor_faults_per_image"


def row_faults(row: Any) -> float:
    """A row's faults per image for the allocator-bound test: its most-faulting process's where
    it records one (``most_minor_faults_per_image``: a row of several processes, each of which
    faults as its address layout makes it under glibc as shipped, is bound when one of them is),
    else its own count (NaN where neither is recorded)."""
    most = number(row.get(MOST_FAULTS))
    return most if not math.isnan(most) else number(row.get("minor_faults_per_image"))


def is_bound(faults: Any, pages: Any, workers: Any) -> bool | None:
    """Whether a row's faults per image exceed its allowance (None: a count is missing)."""
    faults, pages = number(faults), number(pages)
    if math.isnan(faults) or math.isnan(pages):
        return None
    return bool(faults > fault_allowance(pages, workers))


def bound_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """ok rows with both counts whose faults per image exceed their allowance."""
    needed = {"minor_faults_per_image", "output_pages"}
    if frame.empty or not needed <= set(frame.columns):
        return frame.iloc[:0]
    faults = pd.Series([row_faults(r) for _, r in frame.iterrows()], index=frame.index)
    pages = pd.to_numeric(frame["output_pages"], errors="coerce")
    workers = frame["workers"] if "workers" in frame.columns else pd.Series(0, index=frame.index)
    allowance = pd.Series(
        [fault_allowance(p, w) for p, w in zip(pages, workers, strict=True)], index=frame.index
    )
    bound = (frame["status"] == "ok") & faults.notna() & pages.notna() & (faults > allowance)
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
        "output image holds (twice that with DataLoader workers, whose batches reach the main "
        "process in fresh shared memory): the allocator returned the buffers to the kernel and "
        "faulted them in again, so these times measure its policy as much as the library (the "
        "`allocator` column says which was in force). A row of several processes counts its "
        "most-faulting one: under glibc as shipped each process faults as its address layout "
        "makes it. The largest:",
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
