"""The answer a user came for, per pipeline and machine: which library, by how much, whether the
margin is decided, what share of the target model's need the winner delivers, how many DataLoader
workers feed it, and what a million images cost.

Read from rows that exist only (the pipelines' tidy rows and their starvation table):

- **The setting ranked**: the pipeline's end-to-end DataLoader rows (cpu_dataloader, decode
  scope: read + decode + the pipeline, in worker processes) at the largest worker count measured
  ok; where the pipeline has none, its DataLoader rows on decoded images, then its one-thread
  rows (micro). Rows under one allocator setting only (glibc where measured).
- **Winner and runner-up**: the two highest medians. Their margin is the ratio of the medians
  with the interval and verdict of augbench.decision over the rows' process values (one value
  per process): decided ("faster") only at an achieved level of at least
  policy.DECISION_LEVEL, "no clear winner" where the interval holds 1, "not decided" below the
  level, and never decided where either row was measured under load (augbench.measuring.quietness).
- **Feeding the model**: the winner's ``share_of_need``, ``workers_to_feed``, its
  ``workers_to_feed_basis`` and ``scaling``, read from the starvation table
  (augbench.analysis.starvation: one definition of "fed").
- **Cost per million images**: the placement of the ranked regime (config cloud.regimes) priced
  per vCPU-hour for the cores the measured rate used, at the measured rate; ``measured`` where
  the rows ran on that placement (their ``machine_actual``), else ``estimated from <machine>``.

What was not measured is said in words (``why``), never as an empty number.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from augbench import decision
from augbench.analysis import feeds, runs
from augbench.analysis.cells import is_true, number
from augbench.analysis.feeds import rate_of, title
from augbench.analysis.speedups import margin
from augbench.analysis.starvation import FEED_COLUMNS
from augbench.planning.starvation_model import Model
from augbench.policy import DECISION_LEVEL, MAIN_PROCESS_CORES
from augbench.result_format import MEDIAN_THROUGHPUT

COLUMNS: tuple[str, ...] = (
    "pipeline",
    "yours",
    "machine",
    "usable_cores",
    "dataset",
    "status",
    "why",
    "regime",
    "setting",
    "workers",
    "batch_size",
    # What decoded the ranked rows' files and made their samples in parallel
    # (augbench.workload.decoders, .loaders): a DataLoader setting's; empty for one-thread rows.
    "decoder",
    "loader",
    # The winner (the highest median) and its interval at the ACHIEVED level.
    "library",
    "library_version",
    "img_per_s",
    "ci_low",
    "ci_high",
    "ci_level",
    "processes",
    "under_load",
    "runner_up",
    "runner_up_version",
    "runner_up_img_per_s",
    "runner_up_ci_low",
    "runner_up_ci_high",
    "runner_up_ci_level",
    "runner_up_processes",
    "runner_up_under_load",
    # winner / runner-up (augbench.decision.ratio_interval) and the verdict the page prints:
    # faster, slower, no clear winner, not decided (below the level or under load), only library.
    "margin",
    "margin_low",
    "margin_high",
    "margin_level",
    "decision_verdict",
    "verdict",
    "decided",
    "verdict_text",
    # Every library's row at the ranked setting: {library: {version, status, img_per_s, low,
    # high, level, processes, under_load, reason}} as JSON.
    "libraries",
    "other_libraries",
    # The same two libraries one thread on decoded images (micro), where the ranked setting is
    # another: its own column on the page, never in the verdict's cell.
    "one_thread_margin",
    "one_thread_low",
    "one_thread_high",
    "one_thread_level",
    "one_thread_verdict",
    "target",
    "target_img_per_s",
    # The fastest decoder x loader at the ranked setting and its gain over the default feed
    # (augbench.analysis.feeds).
    *feeds.COLUMNS,
    # The starvation table's answer for the winner's series (augbench.analysis.starvation).
    *FEED_COLUMNS,
    "fed_answer",
    "machine_type",
    "usd_per_million_images",
    "cost_basis",
    "cost_marker",
)

# The end-to-end DataLoader rows of a pipeline, then its DataLoader rows on decoded images, then
# its one-thread rows: the first a pipeline has ok rows in is ranked.
RANKED_SETTINGS: tuple[tuple[str, str], ...] = (
    ("cpu_dataloader", "decode"),
    ("cpu_dataloader", "memory"),
    ("micro", "memory"),
)
PREFERRED_ALLOCATOR = "glibc"
ONLY_LIBRARY = "only library"
# Results written before a table had workers_to_feed: the tables are rebuilt from the rows.
OLD_TABLE = "(written before it had workers_to_feed: `snakemake --until figures` rebuilds it)"


def _one_allocator(rows: pd.DataFrame) -> pd.DataFrame:
    if "allocator_setting" not in rows.columns or rows["allocator_setting"].nunique() < 2:
        return rows
    settings = rows["allocator_setting"].astype(str)
    keep = PREFERRED_ALLOCATOR if (settings == PREFERRED_ALLOCATOR).any() else settings.mode()[0]
    return rows[settings == keep]


def _setting_label(regime: str, row: pd.Series) -> str:
    if regime == "micro":
        return "one thread, decoded images in memory"
    what = "read + decode" if row["scope"] == "decode" else "decoded images in memory"
    return (
        f"DataLoader, {what} + pipeline, {int(row['workers'])} workers, "
        f"batch {int(row['batch_size'])}"
    )


def row_interval(row: pd.Series) -> dict[str, float]:
    """The row's median over its processes with that median's interval at the achieved level:
    its own columns (augbench.analysis.runs.PROCESS_COLUMNS), else computed from its values
    (older tables)."""
    if math.isfinite(number(row.get("throughput_median"))):
        found = {c: number(row.get(f"throughput_{c}")) for c in ("median", "low", "high", "level")}
        found["processes"] = number(row.get("processes"))
    else:
        interval = runs.process_interval(row)
        found = {
            "median": interval.median,
            "low": interval.low,
            "high": interval.high,
            "level": interval.level,
            "processes": float(interval.n),
        }
    return {"img_per_s": found.pop("median"), **found}


def _cores_used(regime: str, workers: int, usable_cores: float) -> float:
    if regime == "micro" or workers <= 0:
        return 1.0
    cores = workers + MAIN_PROCESS_CORES
    return min(cores, usable_cores) if usable_cores > 0 else cores


def _cost(
    regime: str, row: pd.Series, workers: int, usable_cores: float, cloud: dict[str, Any]
) -> dict[str, Any]:
    rate = rate_of(row)
    placement = (cloud.get("regimes") or {}).get(regime) or {}
    machine_type = str(placement.get("machine_type") or "")
    out: dict[str, Any] = {"machine_type": machine_type, "usd_per_million_images": math.nan}
    if not machine_type:
        return out | {"cost_basis": f"not priced: no cloud.regimes.{regime} placement"}
    price = (cloud.get("prices_usd_per_hour") or {}).get(machine_type)
    if price is None:
        return out | {"cost_basis": f"not priced: no cloud.prices_usd_per_hour.{machine_type}"}
    cpus = float(placement.get("cpus") or 1)
    cores = _cores_used(regime, workers, usable_cores)
    actual = str(row.get("machine_actual") or "")
    on_placement = actual in (machine_type, f"gce-{machine_type}")
    return out | {
        "usd_per_million_images": float(price) / cpus * cores * 1e6 / (rate * 3600.0),
        "cost_basis": f"{machine_type} at ${float(price):g}/h for {cpus:g} vCPUs, {cores:g} of "
        "them busy at the measured rate",
        "cost_marker": "measured" if on_placement else f"estimated from {row['machine']}",
    }


def short_reason(row: pd.Series) -> str:
    """A not-ok row in as few words as possible: ``no PadIfNeeded`` for a missing step, else
    its status."""
    reason = row.get("reason")
    if row.get("status") == "unsupported" and isinstance(reason, str):
        head = reason.split(":")[0].split()
        if len(head) >= 3 and head[0] == "step":
            return f"no {head[2]}"
    return str(row.get("status") or "not measured")


def _not_ok_words(rows: pd.DataFrame) -> str:
    """``library status (reason)`` for the rows that did not run ok, shortest reasons."""
    words = []
    for _, row in rows.sort_values("library").iterrows():
        reason = row.get("reason")
        short = str(reason).split(":")[0] if isinstance(reason, str) and reason else ""
        words.append(f"{row['library']} {row['status']}" + (f" ({short})" if short else ""))
    return "; ".join(words)


def _libraries(ok: pd.DataFrame, not_ok: pd.DataFrame) -> str:
    cells: dict[str, dict[str, Any]] = {}
    for _, row in ok.iterrows():
        found = row_interval(row)
        cells[str(row["library"])] = {
            "version": _text(row.get("library_version")),
            "status": "ok",
            "img_per_s": found["img_per_s"],
            "low": found["low"],
            "high": found["high"],
            "level": found["level"],
            "processes": found["processes"],
            "under_load": is_true(row.get("under_load")),
        }
    for _, row in not_ok.iterrows():
        cells.setdefault(
            str(row["library"]),
            {
                "version": _text(row.get("library_version")),
                "status": str(row["status"]),
                "reason": short_reason(row),
            },
        )
    return json.dumps(
        {lib: {k: _finite_or_none(v) for k, v in c.items()} for lib, c in sorted(cells.items())},
        sort_keys=True,
    )


def _finite_or_none(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _feed(
    starved: pd.DataFrame | None, model: Model | None, key: dict[str, Any], best: pd.Series
) -> dict[str, Any]:
    """The target model's answer for the winner's DataLoader series of the pipeline, from the
    starvation table's feed columns; their absence is said in ``fed_answer``."""
    if model is None:
        return {"fed_answer": "no target model configured (starvation.target)"}
    # The loader's supply: an end-to-end row's rate (a row on decoded images is not one).
    share = rate_of(best) / model.img_per_s
    out: dict[str, Any] = {"share_of_need": share}
    if best["regime"] != "cpu_dataloader" or best["scope"] != "decode":
        return {
            "fed_answer": "not measured: no end-to-end DataLoader rows of this pipeline "
            "(cpu_dataloader, decode scope)"
        }
    if starved is None or starved.empty:
        return out | {"fed_answer": "not measured: no starvation table for this pipeline"}
    if "workers_to_feed" not in starved.columns:
        return out | {"fed_answer": "not in this starvation table " + OLD_TABLE}
    series = starved[
        (starved["model"] == model.name)
        & (starved["pipeline"].astype(str) == key["pipeline"])
        & (starved["machine"].astype(str) == key["machine"])
        & (starved["dataset"].astype(str) == key["dataset"])
        & (starved["regime"] == "cpu_dataloader")
        & (starved["scope"].astype(str) == "decode")
        & (pd.to_numeric(starved["batch_size"], errors="coerce") == int(best["batch_size"]))
        & (starved["library"] == best["library"])
    ]
    if series.empty:
        return out | {
            "fed_answer": f"not measured: no DataLoader row of {best['library']} for this pipeline"
        }
    row = series.iloc[0]  # the feed columns are the series', on each of its rows
    found = {c: row.get(c) for c in FEED_COLUMNS if c in series.columns}
    workers = number(found.get("workers_to_feed"))
    basis = _text(found.get("workers_to_feed_basis")) or "basis not given"
    share_found = number(found.get("share_of_need"))
    fed = found.get("fed_at_workers_to_feed")
    words = f"{int(workers)} ({basis})" if math.isfinite(workers) else ""
    if words and _text(fed) and not is_true(fed):
        wait = number(found.get("wait_at_workers_to_feed"))
        words = f"{int(workers)} ({basis}; waits {_pct(wait)})"
    return out | {
        **{c: _finite_or_none(v) for c, v in found.items()},
        "share_of_need": share_found if math.isfinite(share_found) else share,
        "workers_to_feed": int(workers) if math.isfinite(workers) else None,
        "fed_answer": words or "no count in the starvation table (no ok DataLoader row)",
    }


def _ranked_rows(part: pd.DataFrame) -> tuple[str, pd.DataFrame, pd.DataFrame]:
    """The regime ranked, its ok rows at the ranked setting (the largest worker count measured
    ok, in one scope), and its rows there that are not ok; the regime is "" where no setting
    has an ok row."""
    for regime, scope in RANKED_SETTINGS:
        rows = part[(part["regime"] == regime) & (part["scope"] == scope)]
        ok = rows[(rows["status"] == "ok") & (pd.to_numeric(rows[MEDIAN_THROUGHPUT]) > 0)]
        if ok.empty:
            continue
        if regime == "cpu_dataloader":
            workers = ok["workers"].max()
            batch = ok[ok["workers"] == workers]["batch_size"].max()
            at = (rows["workers"] == workers) & (rows["batch_size"] == batch)
            rows, ok = rows[at], ok[(ok["workers"] == workers) & (ok["batch_size"] == batch)]
        return regime, ok, rows[~rows.index.isin(ok.index)]
    return "", part.iloc[0:0], part


def _ratio(r: decision.RatioInterval, a: pd.Series, b: pd.Series) -> float:
    return r.ratio if math.isfinite(r.ratio) else rate_of(a) / rate_of(b)


def _one_thread(part: pd.DataFrame, best: str, runner: str) -> dict[str, Any]:
    """The margin of ``best`` over ``runner`` in the pipeline's one-thread rows (micro, decoded
    images in memory), where both are ok; empty where not."""
    rows = part[(part["regime"] == "micro") & (part["status"] == "ok")]
    pair = [rows[rows["library"] == lib] for lib in (best, runner)]
    if any(p.empty for p in pair):
        return {}
    a, b = pair[0].iloc[0], pair[1].iloc[0]
    found = margin(a, b)
    loaded = is_true(a.get("under_load")) or is_true(b.get("under_load"))
    return {
        "one_thread_margin": _ratio(found, a, b),
        "one_thread_low": found.low,
        "one_thread_high": found.high,
        "one_thread_level": found.level,
        "one_thread_verdict": decision.NOT_DECIDED if loaded else decision.verdict(found),
    }


def _judged(best: pd.Series, runner: pd.Series) -> dict[str, Any]:
    """The margin of the winner over the runner-up and the page's verdict (module doc): never
    decided where either row was measured under load."""
    found = margin(best, runner)
    said = decision.verdict(found)
    loaded = [str(r["library"]) for r in (best, runner) if is_true(r.get("under_load"))]
    final = decision.NOT_DECIDED if loaded and said in (decision.FASTER, decision.SLOWER) else said
    return {
        "margin": _ratio(found, best, runner),
        "margin_low": found.low,
        "margin_high": found.high,
        "margin_level": found.level,
        "decision_verdict": said,
        "verdict": final,
        "decided": final in (decision.FASTER, decision.SLOWER),
        "_loaded": loaded,
        "_processes": (found.n_a, found.n_b),
    }


def _answer(
    key: dict[str, Any],
    part: pd.DataFrame,
    starved: pd.DataFrame | None,
    model: Model | None,
    cloud: dict[str, Any],
) -> dict[str, Any]:
    record: dict[str, Any] = {c: None for c in COLUMNS} | key
    record.update(
        target=model.name if model else "", target_img_per_s=model.img_per_s if model else math.nan
    )
    every_feed = _one_allocator(part)
    # Libraries are ranked on their own decode in worker processes; other feeds are compared
    # beside it (augbench.analysis.feeds).
    part = feeds.default_rows(every_feed)
    regime, ok, not_ok = _ranked_rows(part)
    if not regime:
        record.update(
            status="not measured",
            why=(
                f"no library ran it ok: {_not_ok_words(not_ok)}"
                if len(not_ok)
                else "no rows of this pipeline on this machine"
            ),
        )
        return record
    ranked = ok.assign(_rate=[rate_of(r) for _, r in ok.iterrows()]).sort_values(
        "_rate", ascending=False
    )
    best = ranked.iloc[0]
    found = row_interval(best)
    workers = int(best["workers"]) if regime == "cpu_dataloader" else -1
    usable = number(best.get("usable_cores"))
    record.update(
        status="measured",
        why="",
        regime=regime,
        setting=_setting_label(regime, best),
        workers=workers if workers >= 0 else None,
        batch_size=int(best["batch_size"]) if regime == "cpu_dataloader" else None,
        decoder=feeds.decoder_of(best) if regime == "cpu_dataloader" else "",
        loader=feeds.loader_of(best) if regime == "cpu_dataloader" else "",
        usable_cores=usable,
        library=best["library"],
        library_version=_text(best.get("library_version")),
        img_per_s=found["img_per_s"],
        ci_low=found["low"],
        ci_high=found["high"],
        ci_level=found["level"],
        processes=found["processes"],
        under_load=is_true(best.get("under_load")),
        libraries=_libraries(ok, not_ok),
        other_libraries=_not_ok_words(not_ok),
        **_cost(regime, best, workers, usable, cloud),
    )
    if len(ranked) > 1:
        runner = ranked.iloc[1]
        other = row_interval(runner)
        judged = _judged(best, runner)
        loaded, processes = judged.pop("_loaded"), judged.pop("_processes")
        record.update(
            runner_up=runner["library"],
            runner_up_version=_text(runner.get("library_version")),
            runner_up_img_per_s=other["img_per_s"],
            runner_up_ci_low=other["low"],
            runner_up_ci_high=other["high"],
            runner_up_ci_level=other["level"],
            runner_up_processes=other["processes"],
            runner_up_under_load=is_true(runner.get("under_load")),
            **judged,
        )
        record["verdict_text"] = sentence(record, loaded, processes)
        if regime != "micro":
            record.update(_one_thread(part, str(best["library"]), str(runner["library"])))
    else:
        record.update(verdict=ONLY_LIBRARY, decided=False)
        record["verdict_text"] = sentence(record, [], (1, 0))
    record.update(feeds.answer(every_feed, best))
    record.update(_feed(starved, model, key, best))
    return record


def recommend(
    rows: pd.DataFrame | None,
    starved: pd.DataFrame | None,
    pipelines: list[dict[str, Any]],
    model: Model | None,
    cloud: dict[str, Any],
) -> pd.DataFrame:
    """One row per configured pipeline (``pipelines``: name and ``yours``, the user's own first,
    in config order) and machine (and dataset) it has rows on; a pipeline without rows is one
    ``not measured`` row saying why."""
    order = sorted(range(len(pipelines)), key=lambda i: (not pipelines[i]["yours"], i))
    rows = rows if rows is not None else pd.DataFrame()
    whole = (
        rows[rows["variant"] == "pipeline"]
        if not rows.empty and "variant" in rows.columns
        else rows.iloc[0:0]
    )
    records = []
    for index in order:
        name, yours = str(pipelines[index]["name"]), bool(pipelines[index]["yours"])
        part = whole[whole["pipeline"].astype(str) == name] if len(whole) else whole
        if part.empty:
            records.append(
                {c: None for c in COLUMNS}
                | {
                    "pipeline": name,
                    "yours": yours,
                    "status": "not measured",
                    "why": "no rows yet: its jobs have not run (or none of the configured "
                    "regimes runs pipelines)",
                }
            )
            continue
        for (machine, dataset), group in part.groupby(
            [part["machine"].astype(str), part["dataset"].astype(str)], sort=True
        ):
            key = {"pipeline": name, "yours": yours, "machine": machine, "dataset": dataset}
            records.append(_answer(key, group, starved, model, cloud))
    return pd.DataFrame.from_records(records, columns=list(COLUMNS))


# -- words -------------------------------------------------------------------------------------


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def _num(value: Any) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return math.nan
    return value


def _rate(value: Any) -> str:
    value = _num(value)
    return "" if math.isnan(value) else f"{value:,.0f}"


def _x(value: float) -> str:
    """A ratio as the page prints it: two decimals under 2, one from 2."""
    return f"{value:.1f}" if value >= 2 else f"{value:.2f}"


def _names(libraries: str) -> str:
    """``Pillow, torchvision`` from a library list's ``; ``-separated names."""
    return ", ".join(title(lib) for lib in libraries.split("; ") if lib)


def _within(low: float, high: float) -> int:
    return max(1, math.ceil(100 * max(high - 1.0, 1.0 - low) - 1e-9))


def _level_words(level: float) -> str:
    if not math.isfinite(level) or level <= 0:
        return "no"
    return f"{level:.0%}".replace("%", " %")


def sentence(r: dict[str, Any] | pd.Series, loaded: list[str], processes: tuple[int, int]) -> str:
    """The pipeline's verdict in one sentence (docs/answer.md has every form)."""
    cells = _cells(r)
    if r["verdict"] == ONLY_LIBRARY:
        others: dict[str, list[str]] = {}
        for lib, cell in cells.items():
            if cell.get("status") != "ok":
                others.setdefault(str(cell.get("reason") or cell.get("status")), []).append(lib)
        words = "; ".join(
            f"{', '.join(title(lib) for lib in libs)}: {why}" for why, libs in others.items()
        )
        load = " (measured under load)" if is_true(r.get("under_load")) else ""
        return ONLY_LIBRARY + load + (f" ({words})" if words else "")
    a, b = title(str(r["library"])), title(str(r["runner_up"]))
    ratio, low, high = _num(r["margin"]), _num(r["margin_low"]), _num(r["margin_high"])
    load = f"; {', '.join(title(lib) for lib in loaded)} measured under load" if loaded else ""
    found = r["decision_verdict"]
    if found == decision.FASTER and not loaded:
        return f"{a} is {_x(ratio)}x faster than {b} [{_x(low)}, {_x(high)}]"
    if found == decision.SLOWER and not loaded:  # the interval says the runner-up is faster
        return f"{b} is {_x(1 / ratio)}x faster than {a} [{_x(1 / high)}, {_x(1 / low)}]"
    if found == decision.NO_CLEAR_WINNER:
        return f"no clear winner: {a} and {b} within {_within(low, high)} %{load}"
    if found in (decision.FASTER, decision.SLOWER):
        return f"not decided: {a} {_x(ratio)}x {b}{load}"
    n_a, n_b = processes
    count = f"{n_a}" if n_a == n_b else f"{n_a} and {n_b}"
    count += " process" if n_a == n_b == 1 else " processes"
    return (
        f"not decided ({count}, {_level_words(_num(r['margin_level']))} interval): "
        f"{a} {_x(ratio)}x {b}{load}"
    )


def _cells(r: dict[str, Any] | pd.Series) -> dict[str, dict[str, Any]]:
    text = r.get("libraries")
    if isinstance(text, str) and text.startswith("{"):
        return json.loads(text)
    return {}


def _lib_cell(r: pd.Series, library: str) -> str:
    cell = _cells(r).get(library)
    if cell is None:
        if library == r.get("library"):  # a table from before the libraries column
            return _rate(r["img_per_s"])
        if library == r.get("runner_up"):
            return _rate(r["runner_up_img_per_s"])
        return "–"
    if cell.get("status") != "ok":
        return str(cell.get("reason") or cell.get("status"))
    rate = _rate(cell.get("img_per_s"))
    return f"**{rate}**" if library == r.get("library") and is_true(r.get("decided")) else rate


def _one_thread_cell(r: pd.Series) -> str:
    margin = _num(r.get("one_thread_margin"))
    if math.isnan(margin):
        return "–"
    low, high = _num(r.get("one_thread_low")), _num(r.get("one_thread_high"))
    found = str(r.get("one_thread_verdict") or "")
    if found == decision.NO_CLEAR_WINNER:
        return f"within {_within(low, high)} %"
    if found in (decision.FASTER, decision.SLOWER):
        return f"{_x(margin)}x [{_x(low)}, {_x(high)}]"
    return f"{_x(margin)}x, not decided"


def _share_cell(r: pd.Series) -> str:
    return _pct(r.get("share_of_need"))


def _pct(value: Any) -> str:
    value = _num(value)
    return "–" if math.isnan(value) else f"{value:.0%}".replace("%", " %")


def _feed_cell(r: pd.Series) -> str:
    if math.isfinite(_num(r.get("workers_to_feed"))):
        return _text(r.get("fed_answer"))
    return "–"


def _cost_cell(r: pd.Series) -> str:
    usd = _num(r["usd_per_million_images"])
    if math.isnan(usd):
        return "not priced"
    marker = _text(r.get("cost_marker")) or f"estimated from {r['machine']}"
    return f"${usd:,.3f} {marker}"


def _pipeline_cell(r: pd.Series) -> str:
    return f"{r['pipeline']}" + (" (yours)" if is_true(r["yours"]) else "")


def _library_order(part: pd.DataFrame) -> list[tuple[str, str]]:
    """(library, header) of every library of a machine's rows: the most wins first, then the
    most pipelines run."""
    seen: dict[str, int] = {}
    ran: dict[str, int] = {}
    versions: dict[str, str] = {}
    for _, r in part.iterrows():
        # A table from before the libraries column: the winner and the runner-up.
        named = [str(r["library"]), *([str(r["runner_up"])] if _text(r.get("runner_up")) else [])]
        cells = _cells(r) or {lib: {} for lib in named}
        for lib, cell in cells.items():
            seen[lib] = seen.get(lib, 0) + int(lib == r.get("library"))
            ran[lib] = ran.get(lib, 0) + int(cell.get("status", "ok") == "ok")
            versions.setdefault(lib, str(cell.get("version") or ""))
    order = sorted(seen, key=lambda lib: (-seen[lib], -ran[lib], lib))
    heads = []
    for lib in order:
        name, version = title(lib), versions[lib]
        heads.append((lib, name if not version or version in name else f"{name} {version}"))
    return heads


def _table(head: list[str], body: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    return lines + ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in body]


def _processes_words(part: pd.DataFrame) -> str:
    both = pd.concat([part["processes"], part["runner_up_processes"]])
    counts = sorted({int(n) for n in pd.to_numeric(both, errors="coerce").dropna()})
    if not counts:
        return ""
    span = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    return f" of {span} process" + ("" if counts == [1] else "es")


def _has_one_thread(rec: pd.DataFrame) -> bool:
    return bool(pd.to_numeric(rec["one_thread_margin"], errors="coerce").notna().any())


def _machine_section(part: pd.DataFrame, depth: str) -> list[str]:
    first = part.iloc[0]
    cores = _num(first["usable_cores"])
    machine = str(first["machine"])
    datasets = part["dataset"].astype(str).unique()
    heads = _library_order(part)
    has_target = bool(_text(first.get("target")))
    # A run without the one-thread breakdown (pipeline_runs.breakdown: false) has no such column.
    one_thread = _has_one_thread(part)
    head = ["pipeline", *(h for _, h in heads), "verdict", *(["one thread"] if one_thread else [])]
    fed_by = feeds.measured(part)  # a decoder or loader besides the default was measured
    head += ["fastest decoder x loader"] if fed_by else []
    if has_target:
        head += [
            f"share of {first['target']}'s {_rate(first['target_img_per_s'])} img/s",
            "workers to feed",
        ]
    head.append("USD per 1M images")
    body = []
    for _, r in part.iterrows():
        row = [_pipeline_cell(r), *(_lib_cell(r, lib) for lib, _ in heads)]
        verdict = _text(r.get("verdict_text")) or _text(r.get("verdict")) or "–"
        row += [verdict, *([_one_thread_cell(r)] if one_thread else [])]
        row += [feeds.cell(r)] if fed_by else []
        if has_target:
            row += [_share_cell(r), _feed_cell(r)]
        body.append([*row, _cost_cell(r)])
    settings: dict[str, list[str]] = {}
    for _, r in part.iterrows():
        settings.setdefault(str(r["setting"]), []).append(str(r["pipeline"]))
    if len(settings) == 1:
        setting = f"Setting: {next(iter(settings))}"
    else:
        setting = "Settings: " + "; ".join(f"{s} ({', '.join(p)})" for s, p in settings.items())
    under = [
        f"Machine: {machine}"
        + (f", {int(cores)} cores" if math.isfinite(cores) else "")
        + f", dataset {', '.join(datasets)}. {setting}; median img/s{_processes_words(part)}.",
    ]
    priced = part[pd.to_numeric(part["usd_per_million_images"], errors="coerce").notna()]
    if len(priced):
        basis = str(priced.iloc[0]["cost_basis"]).split(", ")[0]
        under.append(f"Cost: {basis}, the busy ones at the measured rate.")
    lines = [f"{depth} {machine}", "", *_table(head, body), "", " ".join(under), ""]
    if has_target:  # why a row has no count, once per reason
        counted = pd.to_numeric(part["workers_to_feed"], errors="coerce").notna()
        why: dict[str, list[str]] = {}
        for _, r in part[~counted].iterrows():
            why.setdefault(_text(r.get("fed_answer")), []).append(str(r["pipeline"]))
        for reason, names in why.items():
            if reason:
                lines += [f"Workers to feed, {', '.join(names)}: {reason}.", ""]
    return lines


def markdown(rec: pd.DataFrame, depth: int = 2) -> list[str]:
    """The answer: under a ``depth``-level heading, one table per machine (a row per pipeline,
    a column per library), its machine and setting once under it, then the definitions."""
    hashes = "#" * depth
    lines = [f"{hashes} The answer", ""]
    if rec.empty:
        return [
            *lines,
            "Not measured: no pipeline is configured (`pipelines` in config/config.yaml; your "
            "own: docs/pipelines.md), so there is nothing to recommend.",
            "",
        ]
    if "verdict_text" not in rec.columns or "workers_to_feed" not in rec.columns:
        # A table from before the verdicts and the feed columns: said once, not per row.
        lines += [f"This table was {OLD_TABLE[1:-1]}, with the verdicts.", ""]
        rec = rec.assign(fed_answer="", one_thread_margin=None)
    for column in COLUMNS:  # older tables: every column the words read, empty
        if column not in rec.columns:
            rec = rec.assign(**{column: None})
    measured = rec[rec["status"] == "measured"]
    for _, part in measured.groupby(measured["machine"].astype(str), sort=True):
        lines += _machine_section(part, hashes + "#")
    for _, r in rec[rec["status"] != "measured"].iterrows():
        lines += [f"Not measured: {_pipeline_cell(r)}: {r['why']}", ""]
    lines += [
        "**Bold**: a decided winner, the interval of the two fastest libraries' ratio "
        f"excluding 1 at an achieved level of at least {DECISION_LEVEL * 100:.0f} %, no row "
        "under load. "
        + ("One thread: the same two libraries on decoded images. " if _has_one_thread(rec) else "")
        + "Every column: results/tables/recommendation.csv; how to read it: docs/answer.md.",
        "",
    ]
    return lines


def short_text(rec: pd.DataFrame) -> str:
    """The few lines printed at the end of a run: pipeline, winner and verdict, feeding, cost."""
    if rec.empty:
        return "Recommendation: no pipeline configured, nothing to recommend."
    for column in COLUMNS:
        if column not in rec.columns:
            rec = rec.assign(**{column: None})
    lines = []
    for _, r in rec.iterrows():
        name = _pipeline_cell(r)
        if r["status"] != "measured":
            lines.append(f"  {name}: not measured ({r['why']})")
            continue
        verdict = _text(r.get("verdict_text")) or _text(r.get("verdict"))
        feed = ""
        if _text(r.get("target")):
            share = _share_cell(r)
            feed = (
                (f"; {share} of {r['target']}'s need" if share != "–" else "")
                + "; workers to feed it: "
                + (_feed_cell(r) if _feed_cell(r) != "–" else _text(r.get("fed_answer")))
            )
        if feeds.measured(rec.loc[[r.name]]):
            feed += f"; fastest feed: {feeds.cell(r)}"
        cost = _num(r["usd_per_million_images"])
        lines.append(
            f"  {name} on {r['machine']}: {title(str(r['library']))} {_rate(r['img_per_s'])} "
            f"img/s ({verdict}){feed}"
            + (f"; {_cost_cell(r)} per 1M images" if not math.isnan(cost) else "")
        )
    return "\n".join(["Recommendation (every column: results/tables/recommendation.csv):", *lines])
