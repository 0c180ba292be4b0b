"""A/A calibration: how often the answer's decision rule calls a difference where there is none.

The same work is measured under two names in separate jobs (a library and its second name,
``albumentationsx`` and ``albumentationsx~b``: the same adapter and env, augbench.workload.adapters;
config ``calibration.pairs``). Each row measured under both names is a **pair**, decided by
augbench.decision exactly as the answer page decides a margin: the interval of the ratio of the
two rows' medians over their process values (augbench.analysis.runs.process_values, as the page
reads them), at ``decision.DECISION_LEVEL``. A "faster" or
"slower" verdict is a **false call**. A pair whose interval cannot reach the level (too few
process values) makes no call and is counted apart.

One line per kind of row (:data:`FAMILIES`): micro's transforms, cpu_dataloader's recipes, the
pipelines through the DataLoader and their one-thread whole rows, training rows and the GPU
DataLoader's rows. A kind **passes** with at least :data:`MIN_PAIRS` pairs at the level and at
most :data:`MAX_FALSE_CALL_RATE` of them false calls; with fewer pairs it says how many it has and
does not pass. A job measures several rows, so pairs of one job pair are not independent: the
table also counts the job pairs (``job_pairs``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from augbench import decision
from augbench.analysis.cells import is_true, number
from augbench.analysis.runs import process_values
from augbench.policy import CALIBRATION_MAX_FALSE_CALL_RATE, CALIBRATION_MIN_PAIRS
from augbench.workload import adapters

# The bar: pairs per kind of row, and false calls among them (augbench.policy).
MIN_PAIRS = CALIBRATION_MIN_PAIRS
MAX_FALSE_CALL_RATE = CALIBRATION_MAX_FALSE_CALL_RATE
FALSE_CALLS = (decision.FASTER, decision.SLOWER)

# Kind of row -> (table it is read from, which of its rows). "all": results/tables/all_results.csv;
# "pipelines": results/tables/pipeline_results.csv (a pipeline's whole row has no step).
FAMILIES: dict[str, tuple[str, Callable[[pd.DataFrame], pd.Series]]] = {
    "micro": ("all", lambda f: f["regime"] == "micro"),
    "cpu_dataloader": ("all", lambda f: f["regime"] == "cpu_dataloader"),
    "pipeline_dataloader": ("pipelines", lambda f: f["regime"] == "cpu_dataloader"),
    "pipeline_breakdown": (
        "pipelines",
        lambda f: (f["regime"] == "micro") & _blank(f.get("step", pd.Series(index=f.index))),
    ),
    "training": ("all", lambda f: f["regime"] == "training"),
    "gpu_dataloader": ("all", lambda f: f["regime"] == "gpu_dataloader"),
}

# What makes two rows the same work (every column present of these, beside the library).
KEY_COLUMNS: tuple[str, ...] = (
    "regime",
    "scope",
    "dataset",
    "transform",
    "pipeline",
    "step",
    "workers",
    "batch_size",
    "variant",
    "layout",
    "randomness",
    "allocator",
    "channels",
    "resolution",
    "mode",
    "device",
)

COLUMNS: tuple[str, ...] = (
    "regime",
    "pairs",
    "false_calls",
    "level",
    "false_call_rate",
    "passes",
    "machine",
    "job_pairs",
    "measured_pairs",
    "lowest_achieved_level",
    "under_load_pairs",
    "most_other_load_cores",
    "note",
)


def _blank(column: pd.Series) -> pd.Series:
    return column.isna() | (column.astype(str).str.strip() == "")


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _most(values: Iterable[float]) -> float:
    return max((v for v in values if not math.isnan(v)), default=math.nan)


@dataclass(frozen=True)
class Pair:
    """One row measured under both names of an A/A pair, and the decision on it."""

    regime: str
    name_a: str
    name_b: str
    library_base: str
    key: str
    ratio: float
    low: float
    high: float
    achieved_level: float
    n_a: int
    n_b: int
    verdict: str
    under_load: bool
    other_load_cores: float
    job_a: str
    job_b: str

    @property
    def at_level(self) -> bool:
        return self.achieved_level >= decision.DECISION_LEVEL

    @property
    def false_call(self) -> bool:
        return self.verdict in FALSE_CALLS


def _keyed(frame: pd.DataFrame) -> dict[tuple[str, str], Mapping[str, Any]]:
    """(library, key) -> row, for the ok rows of ``frame``."""
    columns = [c for c in KEY_COLUMNS if c in frame.columns]
    out = {}
    for _, row in frame.iterrows():
        if str(row.get("status")) != "ok":
            continue
        key = "|".join(f"{c}={_text(row[c])}" for c in columns if _text(row[c]))
        out[(str(row["library"]), key)] = row
    return out


def family_pairs(regime: str, frame: pd.DataFrame, pairs: Sequence[Sequence[str]]) -> list[Pair]:
    """Every row pair of one kind of row (its rows in ``frame``) under the configured A/A
    ``pairs``, each decided at ``decision.DECISION_LEVEL``."""
    rows = _keyed(frame)
    found = []
    for name_a, name_b in pairs:
        for (library, key), a in rows.items():
            b = rows.get((name_b, key))
            if library != name_a or b is None:
                continue
            values_a, values_b = process_values(a), process_values(b)
            if not values_a or not values_b:
                continue
            try:
                interval = decision.ratio_interval(values_a, values_b)
            except ValueError:  # a zero throughput: no ratio, no pair
                continue
            found.append(
                Pair(
                    regime=regime,
                    name_a=name_a,
                    name_b=name_b,
                    library_base=adapters.base_of(name_a),
                    key=key,
                    ratio=interval.ratio,
                    low=interval.low,
                    high=interval.high,
                    achieved_level=interval.level,
                    n_a=interval.n_a,
                    n_b=interval.n_b,
                    verdict=decision.verdict(interval),
                    under_load=is_true(a.get("under_load")) or is_true(b.get("under_load")),
                    other_load_cores=_most(number(r.get("other_load_cores")) for r in (a, b)),
                    job_a=_text(a.get("source_file")),
                    job_b=_text(b.get("source_file")),
                )
            )
    return found


def summary_line(regime: str, found: Sequence[Pair], machine: str) -> dict[str, Any]:
    """One kind of row's line of the table (module docstring)."""
    at_level = [p for p in found if p.at_level]
    false_calls = sum(p.false_call for p in at_level)
    rate = false_calls / len(at_level) if at_level else math.nan
    passes = len(at_level) >= MIN_PAIRS and rate <= MAX_FALSE_CALL_RATE
    level = decision.DECISION_LEVEL
    if not found:
        note = f"no pairs measured: not passing (needs {MIN_PAIRS})"
    elif len(at_level) < MIN_PAIRS:
        note = (
            f"{len(at_level)} pairs at the {level:.0%} level ({len(found)} measured): fewer than "
            f"{MIN_PAIRS}, not passing"
        )
    elif not passes:
        note = f"{false_calls} false calls of {len(at_level)}: above {MAX_FALSE_CALL_RATE:.0%}"
    else:
        note = f"{false_calls} false calls of {len(at_level)}"
    return {
        "regime": regime,
        "pairs": len(at_level),
        "false_calls": false_calls,
        "level": level,
        "false_call_rate": rate,
        "passes": bool(passes),
        "machine": machine,
        "job_pairs": len({(p.job_a, p.job_b) for p in found}),
        "measured_pairs": len(found),
        "lowest_achieved_level": min((p.achieved_level for p in found), default=math.nan),
        "under_load_pairs": sum(p.under_load for p in found),
        "most_other_load_cores": _most(p.other_load_cores for p in found),
        "note": note,
    }


def calibrate(
    tables: Mapping[str, pd.DataFrame],
    pairs: Sequence[Sequence[str]],
    regimes: Sequence[str],
    machine: str,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The calibration table (one line per kind of row in ``regimes``) and every pair behind
    it, from the run's tables (``tables``: "all", "pipelines"; a missing one has no rows)."""
    lines, details = [], []
    for regime in regimes:
        source, select = FAMILIES[regime]
        frame = tables.get(source)
        if frame is None or frame.empty or "regime" not in frame.columns:
            found: list[Pair] = []
        else:
            if "machine" in frame.columns:
                frame = frame[frame["machine"].astype(str) == machine]
            found = family_pairs(regime, frame[select(frame)], pairs)
        lines.append(summary_line(regime, found, machine))
        details += [{**asdict(p), "false_call": p.false_call} for p in found]
    detail_columns = [*Pair.__dataclass_fields__, "false_call"]
    return (
        pd.DataFrame(lines, columns=list(COLUMNS)),
        pd.DataFrame(details, columns=detail_columns),
    )


def printed(table: pd.DataFrame) -> str:
    """The table in a few lines, for the end of a run: each kind of row, passing or not."""
    lines = []
    for _, row in table.iterrows():
        verdict = "passes" if is_true(row["passes"]) else "does not pass"
        lines.append(f"  {row['regime']}: {verdict}; {row['note']} ({row['job_pairs']} job pairs)")
    return "\n".join(["A/A calibration (results/tables/calibration.csv):", *lines])
