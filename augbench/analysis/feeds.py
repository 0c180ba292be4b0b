"""What feeds a pipeline's DataLoader fastest: the decoder (augbench.workload.decoders) and the
loader (augbench.workload.loaders) as factors of the answer (augbench.analysis.recommendation).

The libraries are ranked on the default feed (each library's own decode in worker processes:
``native``, ``process``), like with like. Beside that ranking, among every ok end-to-end row of
the pipeline at the ranked setting (cpu_dataloader, decode scope, the same workers and batch),
whatever its decoder and loader:

- **the fastest feed**: the row with the highest median, its library, decoder and loader;
- **its gain** over the default feed of the same library at that setting: the ratio of the
  medians with the interval and verdict of augbench.decision over the rows' process values, the
  rule the library margin is decided by (never decided where either row was measured under load).

Where only the default feed was measured, ``feed_answer`` says which config keys add others.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from augbench import decision
from augbench.analysis.cells import is_true, number, text
from augbench.analysis.speedups import margin
from augbench.result_format import MEDIAN_THROUGHPUT
from augbench.workload import adapters, decoders, loaders

COLUMNS: tuple[str, ...] = (
    "feed_library",
    "feed_decoder",
    "feed_loader",
    "feed_img_per_s",
    # fastest feed / the default feed of its library (1 where the default is the fastest)
    "feed_gain",
    "feed_gain_low",
    "feed_gain_high",
    "feed_gain_level",
    "feed_verdict",
    "feed_answer",
)
ONLY_DEFAULT = (
    "only each library's own decode in worker processes was measured "
    "(cpu_dataloader.decoders and cpu_dataloader.loaders add others)"
)


def decoder_of(row: pd.Series | dict[str, Any]) -> str:
    """The row's declared decoder; native where the table names none (written before decoders
    were a factor)."""
    found = text(row.get("decoder"))
    return found if found in decoders.NAMES else decoders.NATIVE


def loader_of(row: pd.Series | dict[str, Any]) -> str:
    return text(row.get("loader")) or loaders.DEFAULT


def is_default(row: pd.Series | dict[str, Any]) -> bool:
    return (decoder_of(row), loader_of(row)) == (decoders.NATIVE, loaders.DEFAULT)


def default_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of the default feed (the library ranking's)."""
    if rows.empty:
        return rows
    return rows[[is_default(row) for _, row in rows.iterrows()]]


def rate_of(row: pd.Series) -> float:
    """The row's median over its processes (``throughput_median``), else its median."""
    median = number(row.get("throughput_median"))
    return median if math.isfinite(median) else number(row.get(MEDIAN_THROUGHPUT))


def answer(rows: pd.DataFrame, best: pd.Series) -> dict[str, Any]:
    """The feed columns (module docstring) for the pipeline's ``rows`` (every feed, one
    allocator setting) given the ranked winner ``best`` (a default-feed row)."""
    out: dict[str, Any] = dict.fromkeys(COLUMNS)
    if best.get("regime") != "cpu_dataloader" or best.get("scope") != "decode":
        out["feed_answer"] = "no end-to-end DataLoader rows to compare feeds in"
        return out
    at = rows[
        (rows["regime"] == "cpu_dataloader")
        & (rows["scope"] == "decode")
        & (pd.to_numeric(rows["workers"], errors="coerce") == number(best["workers"]))
        & (pd.to_numeric(rows["batch_size"], errors="coerce") == number(best["batch_size"]))
        & (rows["status"] == "ok")
    ]
    at = at.assign(_rate=[rate_of(r) for _, r in at.iterrows()])
    at = at[at["_rate"] > 0]
    if at.empty or all(is_default(r) for _, r in at.iterrows()):
        out["feed_answer"] = ONLY_DEFAULT
        return out
    top = at.sort_values("_rate", ascending=False, kind="stable").iloc[0]
    defaults = pd.Series([is_default(r) for _, r in at.iterrows()], index=at.index, dtype=bool)
    own = at[(at["library"] == top["library"]) & defaults]
    out.update(
        feed_library=str(top["library"]),
        feed_decoder=decoder_of(top),
        feed_loader=loader_of(top),
        feed_img_per_s=float(top["_rate"]),
    )
    if is_default(top):
        out.update(feed_gain=1.0, feed_verdict="default fastest")
        out["feed_answer"] = "each library's own decode in worker processes is the fastest feed"
        return out
    if own.empty:
        out["feed_answer"] = f"no default-feed row of {top['library']} to compare with"
        return out
    found = margin(top, own.iloc[0])
    verdict = decision.verdict(found)
    loaded = is_true(top.get("under_load")) or is_true(own.iloc[0].get("under_load"))
    if loaded and verdict in (decision.FASTER, decision.SLOWER):
        verdict = decision.NOT_DECIDED
    ratio = found.ratio if math.isfinite(found.ratio) else top["_rate"] / rate_of(own.iloc[0])
    out.update(
        feed_gain=ratio,
        feed_gain_low=found.low,
        feed_gain_high=found.high,
        feed_gain_level=found.level,
        feed_verdict=verdict,
    )
    out["feed_answer"] = sentence(out, loaded)
    return out


def sentence(feed: dict[str, Any], loaded: bool = False) -> str:
    """``torchvision with the simplejpeg decoder and thread loader: 1.42x its own decode in
    worker processes [1.20, 1.66]`` and the verdict's words where it is not decided."""
    parts = []
    if feed["feed_decoder"] != decoders.NATIVE:
        parts.append(f"the {feed['feed_decoder']} decoder")
    if feed["feed_loader"] != loaders.DEFAULT:
        parts.append(f"the {feed['feed_loader']} loader")
    what = f"{title(str(feed['feed_library']))} with {' and '.join(parts)}"
    low, high = number(feed["feed_gain_low"]), number(feed["feed_gain_high"])
    level = number(feed["feed_gain_level"])
    # An interval is printed where the processes give one (one process a side gives none).
    shown = all(math.isfinite(v) for v in (low, high, level)) and level > 0
    interval = f" [{low:.2f}, {high:.2f}]" if shown else ""
    verdict = feed["feed_verdict"]
    said = {
        decision.FASTER: "",
        decision.SLOWER: " (slower)",
        decision.NO_CLEAR_WINNER: " (no clear gain)",
    }.get(verdict, " (not decided" + ("; measured under load)" if loaded else ")"))
    return (
        f"{what}: {number(feed['feed_gain']):.2f}x its own decode in worker processes"
        f"{interval}{said}"
    )


def measured(rec: pd.DataFrame) -> bool:
    """Whether any row of an answer table compared feeds (a feed besides the default was
    measured): the answer then has a column for it."""
    return "feed_library" in rec.columns and rec["feed_library"].map(text).ne("").any()


def cell(r: pd.Series) -> str:
    """The answer's cell: the fastest feed and its gain, or why there is none."""
    if not text(r.get("feed_library")):
        return text(r.get("feed_answer")) or "–"
    if r.get("feed_verdict") == "default fastest":
        return f"{title(str(r['feed_library']))}'s own decode in worker processes"
    return sentence(r.to_dict())


def title(library: str) -> str:
    """How tables name a library (its adapter's title)."""
    try:
        return adapters.declared(library).title or library
    except KeyError:
        return library
