"""Figure families. Each module draws one family from a tidy table; ``NAMES`` lists every family
the workflow knows. ``plan`` says which of them a table has rows for: the workflow draws only
those and lists the others, each with why, in the figures folder (``skipped.txt``,
``skipped.csv``) and in the summary, so a re-plot of a folder of micro results shows micro
figures, not a dozen figures saying "no rows". Importing this package does not import
matplotlib: the workflow reads ``NAMES`` while it builds its job graph, the summary calls
``plan``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from augbench.planning import regimes
from augbench.result_format import MEDIAN_THROUGHPUT

if TYPE_CHECKING:
    import pandas as pd

    from augbench.analysis.figures.style import Drawn

# The columns a row's peak memory can be in (augbench.analysis.figures.memory).
MEMORY_COLUMNS: tuple[str, ...] = ("gpu_peak_allocated_mb", "gpu_nvml_used_mb", "peak_rss_mb")


class Plan(NamedTuple):
    """Which families a table gives something to draw (in ``NAMES`` order), and the others with
    why not."""

    drawn: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]


def plan(frame: pd.DataFrame) -> Plan:
    """(drawn, skipped with reason) for a tidy table: a family is drawn exactly when its figure
    would show rows (``draw`` would not return its "no rows" figure)."""
    drawn: list[str] = []
    skipped: list[tuple[str, str]] = []
    for name in NAMES:
        why = absent(name, frame)
        if why:
            skipped.append((name, why))
        else:
            drawn.append(name)
    return Plan(tuple(drawn), tuple(skipped))


def absent(name: str, frame: pd.DataFrame) -> str | None:
    """Why family ``name`` has nothing to draw from ``frame``; None when it has."""
    from augbench.analysis.groups import normalized

    family = FAMILIES.get(name)
    if family is None:
        raise KeyError(f"unknown figure {name!r}; known: {list(NAMES)}")
    if frame.empty:
        return "no result rows"
    data = normalized(frame)
    return family.absent(frame, data, data[data["status"] == "ok"])


def _always(frame: pd.DataFrame, data: pd.DataFrame, ok: pd.DataFrame) -> str | None:
    return None


def _memory_absent(frame: pd.DataFrame, data: pd.DataFrame, ok: pd.DataFrame) -> str | None:
    import pandas as pd

    for col in MEMORY_COLUMNS:
        if col in ok.columns and pd.to_numeric(ok[col], errors="coerce").notna().any():
            return None
    return "no ok rows with a peak memory (peak RSS or GPU memory)"


def _training_absent(frame: pd.DataFrame, data: pd.DataFrame, ok: pd.DataFrame) -> str | None:
    rows = data[data["regime"] == "training"]
    if rows.empty:
        return "no training rows (regime training not configured)"
    return (
        None if (rows["status"] == "ok").any() else f"no ok training rows ({_status_counts(rows)})"
    )


def _allocator_absent(frame: pd.DataFrame, data: pd.DataFrame, ok: pd.DataFrame) -> str | None:
    from augbench.analysis.allocator_effect import figure_absent

    return figure_absent(frame)


def _regime_absent(prefix: str, regime: str, data: pd.DataFrame) -> str | None:
    from augbench.analysis.groups import runs

    rows = data[data["regime"] == regime]
    if rows.empty:
        return f"no {regime} rows"
    if prefix == "throughput":
        return None  # non-ok rows are named in the figure
    ok = rows[rows["status"] == "ok"]
    if any(runs(row) for _, row in ok.iterrows()):
        return None
    return f"no ok {regime} rows with repeated runs ({_status_counts(rows)})"


def _cpu_gpu_absent(frame: pd.DataFrame, data: pd.DataFrame, ok: pd.DataFrame) -> str | None:
    from augbench.analysis import gpu

    names = " or ".join(gpu.GPU_REGIMES)
    gpu_rows = data[data["regime"].isin(gpu.GPU_REGIMES)]
    if gpu_rows.empty:
        return f"no {names} rows"
    reference = (data["regime"] == "cpu_dataloader") & (
        data["library"] == gpu.CPU_REFERENCE_LIBRARY
    )
    if not reference.any():
        return f"no {gpu.CPU_REFERENCE_LIBRARY} cpu_dataloader rows (the CPU reference)"
    table = gpu.gpu_vs_cpu_ratio(data)
    if (table["ratio_status"] == "ok").any():
        return None
    return (
        f"no ok {names} row has an ok {gpu.CPU_REFERENCE_LIBRARY} cpu_dataloader row of the "
        f"same machine label, dataset, transform and scope (GPU rows: "
        f"{_status_counts(gpu_rows)})"
    )


def _scaling_absent(frame: pd.DataFrame, data: pd.DataFrame, ok: pd.DataFrame) -> str | None:
    """The worker-scaling figure's own test (figures.scaling.scaling_table): one library and
    setting measured ok at two or more worker counts, with a transform ok at each of them."""
    dataloader = ok[ok["workers"] >= 0]
    if dataloader.empty:
        return "no ok DataLoader rows (cpu_dataloader, gpu_dataloader)"
    keys = ["machine", "regime", "scope", "batch_size", "variant", "library"]
    for _, rows in dataloader.groupby(keys, sort=False):
        counts = rows["workers"].nunique()
        if counts >= 2 and (rows.groupby("transform")["workers"].nunique() == counts).any():
            return None
    measured = ", ".join(str(w) for w in sorted(dataloader["workers"].unique()))
    return (
        "no DataLoader setting measured ok at two or more worker counts "
        f"(worker counts: {measured})"
    )


def _resolution_absent(frame: pd.DataFrame, data: pd.DataFrame, ok: pd.DataFrame) -> str | None:
    from augbench.analysis.resolution import swept_rows

    data = swept_rows(frame)
    ok = data[(data["status"] == "ok") & (data[MEDIAN_THROUGHPUT] > 0) & (data["_mp"] > 0)]
    if ok.empty:
        return "no ok rows of a resolution sweep (config resolutions)"
    if ok["_res"].nunique() < 2:
        found = ", ".join(f"{int(r)} px" for r in sorted(ok["_res"].unique()))
        return f"a resolution sweep needs two or more resolutions (ok rows at {found} only)"
    return None


def _status_counts(rows: pd.DataFrame) -> str:
    counts = rows["status"].astype(str).value_counts()
    return ", ".join(f"{n} {status}" for status, n in counts.items())


def draw(name: str, frame: pd.DataFrame) -> Drawn:
    """Draw figure ``name`` (one of ``NAMES``) from a tidy table."""
    import importlib

    family = FAMILIES.get(name)
    if family is None:
        raise KeyError(f"unknown figure {name!r}; known: {list(NAMES)}")
    module = importlib.import_module(f"augbench.analysis.figures.{family.module}")
    if family.regime:
        return module.draw(frame, regime=family.regime)
    return module.draw(frame)


class Family(NamedTuple):
    """One figure family: its name, the module here that draws it (``draw(frame)``, or
    ``draw(frame, regime=...)`` for a per-regime family), and why a table has nothing for it."""

    name: str
    module: str
    absent: Callable[[pd.DataFrame, pd.DataFrame, pd.DataFrame], str | None]
    regime: str = ""


def _per_regime(kind: str) -> list[Family]:
    """``<kind>_<regime>`` for every regime whose declaration lists the family."""

    def absent_for(regime: str) -> Callable[..., str | None]:
        return lambda frame, data, ok: _regime_absent(kind, regime, data)

    return [
        Family(f"{kind}_{r.name}", kind, absent_for(r.name), r.name)
        for r in regimes.ALL
        if kind in r.figures
    ]


# Every family the workflow knows, in the order figures are listed: the one registration (the
# per-regime ones come from the regime declarations, augbench/planning/regimes/).
FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("winners_by_regime", "winners", _always),
        *_per_regime("throughput"),
        Family("coverage", "coverage", _always),
        *_per_regime("stability"),
        Family("cpu_vs_gpu", "cpu_gpu", _cpu_gpu_absent),
        Family("throughput_vs_memory", "memory", _memory_absent),
        Family("worker_scaling", "scaling", _scaling_absent),
        Family("throughput_vs_resolution", "resolution", _resolution_absent),
        Family("training_vs_workers", "training", _training_absent),
        # Drawn where the results hold more than one allocator setting (config allocators).
        Family("allocator_effect", "allocator", _allocator_absent),
    )
}
NAMES: tuple[str, ...] = tuple(FAMILIES)
