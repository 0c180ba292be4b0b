"""The answer a user came for, per pipeline and machine: which library, how many DataLoader
workers feed the target model, by how much the library wins, and what a million images cost.

Read from rows that exist only (the pipelines' tidy rows and their starvation table):

- **The setting ranked**: the pipeline's end-to-end DataLoader rows (cpu_dataloader, decode
  scope: read + decode + the pipeline, in worker processes) at the largest worker count measured
  ok; where the pipeline has none, its one-thread rows on decoded images (micro). Rows under one
  allocator setting only (glibc where measured), so a setting never competes with itself.
- **Fastest and runner-up**: the two highest medians, each with the interval of its median; the
  margin is their ratio with the ratio's interval (augbench.analysis.speedups); ``tie`` where
  that interval holds 1; called only from an interval of at least policy.ANSWER_MIN_INTERVAL_LEVEL
  (``undecided`` below it, ``unknown`` without one).
- **Workers that feed the target**: from the starvation table (one definition of "fed",
  augbench.starvation_model), for the fastest library: the fewest measured worker count that
  keeps the target model fed, with the predicted data wait and its interval; where no measured
  count feeds it, the wait at the largest count.
- **Cost per million images**: the placement of the ranked regime (config cloud.regimes) priced
  per vCPU-hour (its on-demand price / its vCPUs) for the cores the measured rate used (the
  workers plus the main process's share, at most the measuring machine's cores; one for a
  one-thread row), at the measured rate. It assumes the placement's cores run as fast as the
  measuring machine's (cloud.speed_factors says how far that holds).

What was not measured is said in words (``why``), never as an empty number.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from augbench.analysis.cells import number
from augbench.analysis.speedups import row_interval, speedup_interval, versus
from augbench.intervals import Interval
from augbench.policy import ANSWER_MIN_INTERVAL_LEVEL, MAIN_PROCESS_CORES
from augbench.starvation_model import FED_DEFINITION, Model

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
    "library",
    "img_per_s",
    "ci_low",
    "ci_high",
    "ci_level",
    "runner_up",
    "runner_up_img_per_s",
    "margin",
    "margin_low",
    "margin_high",
    "margin_level",
    "versus_runner_up",
    # The same two libraries one thread on decoded images (micro), where the ranked setting is
    # another: a second, usually more precise, reading of the margin.
    "one_thread_margin",
    "one_thread_low",
    "one_thread_high",
    "one_thread_level",
    "one_thread_versus",
    "other_libraries",
    "target",
    "target_img_per_s",
    "fewest_workers_fed",
    "fed_answer",
    "wait_at_workers",
    "data_wait",
    "data_wait_low",
    "data_wait_high",
    "machine_type",
    "usd_per_million_images",
    "cost_basis",
)

# The end-to-end DataLoader rows of a pipeline, then its DataLoader rows on decoded images, then
# its one-thread rows: the first a pipeline has ok rows in is ranked.
RANKED_SETTINGS: tuple[tuple[str, str], ...] = (
    ("cpu_dataloader", "decode"),
    ("cpu_dataloader", "memory"),
    ("micro", "memory"),
)
PREFERRED_ALLOCATOR = "glibc"


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


def _cores_used(regime: str, workers: int, usable_cores: float) -> float:
    if regime == "micro" or workers <= 0:
        return 1.0
    cores = workers + MAIN_PROCESS_CORES
    return min(cores, usable_cores) if usable_cores > 0 else cores


def _cost(
    regime: str, rate: float, workers: int, usable_cores: float, cloud: dict[str, Any]
) -> tuple[str, float, str]:
    placement = (cloud.get("regimes") or {}).get(regime) or {}
    machine_type = str(placement.get("machine_type") or "")
    if not machine_type:
        return "", math.nan, f"not priced: no cloud.regimes.{regime} placement"
    price = (cloud.get("prices_usd_per_hour") or {}).get(machine_type)
    if price is None:
        return (
            machine_type,
            math.nan,
            f"not priced: no cloud.prices_usd_per_hour.{machine_type}",
        )
    cpus = float(placement.get("cpus") or 1)
    cores = _cores_used(regime, workers, usable_cores)
    usd = float(price) / cpus * cores * 1e6 / (rate * 3600.0)
    return (
        machine_type,
        usd,
        f"{machine_type} at ${float(price):g}/h for {cpus:g} vCPUs, {cores:g} of them busy "
        "at the measured rate",
    )


def _not_ok_words(rows: pd.DataFrame) -> str:
    """``library status (reason)`` for the rows that did not run ok, shortest reasons."""
    words = []
    for _, row in rows.sort_values("library").iterrows():
        reason = row.get("reason")
        short = str(reason).split(":")[0] if isinstance(reason, str) and reason else ""
        words.append(f"{row['library']} {row['status']}" + (f" ({short})" if short else ""))
    return "; ".join(words)


def _fed(
    starved: pd.DataFrame | None, model: Model | None, key: dict[str, Any], library: str
) -> dict[str, Any]:
    """The target model's answer for one library's DataLoader series of the pipeline."""
    empty = {
        "fewest_workers_fed": None,
        "wait_at_workers": None,
        "data_wait": math.nan,
        "data_wait_low": math.nan,
        "data_wait_high": math.nan,
    }
    if model is None:
        return {**empty, "fed_answer": "no target model configured (starvation.target)"}
    if starved is None or starved.empty:
        return {**empty, "fed_answer": "not measured: no DataLoader rows of this pipeline"}
    series = starved[
        (starved["model"] == model.name)
        & (starved["pipeline"].astype(str) == key["pipeline"])
        & (starved["machine"].astype(str) == key["machine"])
        & (starved["dataset"].astype(str) == key["dataset"])
        & (starved["regime"] == "cpu_dataloader")
        & (starved["library"] == library)
        & starved["data_img_per_s"].notna()
    ]
    if series.empty:
        return {
            **empty,
            "fed_answer": f"not measured: no ok DataLoader row of {library} for this pipeline",
        }
    series = series.sort_values("workers")
    fewest = str(series.iloc[0]["fewest_workers_keeping_fed"])
    measured = ", ".join(str(int(w)) for w in series["workers"])
    if fewest.isdigit():
        at = series[series["workers"] == int(fewest)].iloc[0]
        answer = f"{fewest} workers"
        count: int | None = int(fewest)
    else:
        at = series.iloc[-1]
        answer = f"none of the measured worker counts ({measured})"
        count = None
    if not bool(series.iloc[0].get("fed_monotone", True)):
        answer += " (more workers did worse at some count)"
    return {
        "fewest_workers_fed": count,
        "fed_answer": answer,
        "wait_at_workers": int(at["workers"]),
        "data_wait": number(at["data_wait_fraction"]),
        "data_wait_low": number(at["data_wait_low"]),
        "data_wait_high": number(at["data_wait_high"]),
    }


def _ranked_rows(part: pd.DataFrame) -> tuple[str, pd.DataFrame, pd.DataFrame]:
    """The regime ranked, its ok rows at the ranked setting (the largest worker count measured
    ok, in one scope), and its rows there that are not ok; the regime is "" where no setting
    has an ok row."""
    for regime, scope in RANKED_SETTINGS:
        rows = part[(part["regime"] == regime) & (part["scope"] == scope)]
        ok = rows[(rows["status"] == "ok") & (pd.to_numeric(rows["median_throughput"]) > 0)]
        if ok.empty:
            continue
        if regime == "cpu_dataloader":
            workers = ok["workers"].max()
            batch = ok[ok["workers"] == workers]["batch_size"].max()
            at = (rows["workers"] == workers) & (rows["batch_size"] == batch)
            rows, ok = rows[at], ok[(ok["workers"] == workers) & (ok["batch_size"] == batch)]
        return regime, ok, rows[~rows.index.isin(ok.index)]
    return "", part.iloc[0:0], part


def _one_thread(part: pd.DataFrame, best: str, runner: str) -> dict[str, Any]:
    """The margin of ``best`` over ``runner`` in the pipeline's one-thread rows (micro, decoded
    images in memory), where both are ok; empty where not."""
    rows = part[(part["regime"] == "micro") & (part["status"] == "ok")]
    pair = [rows[rows["library"] == lib] for lib in (best, runner)]
    if any(p.empty for p in pair):
        return {}
    a, b = pair[0].iloc[0], pair[1].iloc[0]
    margin = speedup_interval(a, b)
    return {
        "one_thread_margin": float(a["median_throughput"]) / float(b["median_throughput"]),
        "one_thread_low": math.nan if margin.low is None else margin.low,
        "one_thread_high": math.nan if margin.high is None else margin.high,
        "one_thread_level": math.nan if margin.level is None else margin.level,
        "one_thread_versus": _verdict(margin),
    }


def _verdict(margin: Interval) -> str:
    """faster / tie (augbench.analysis.speedups.versus) from an interval of at least
    ANSWER_MIN_INTERVAL_LEVEL; "undecided" from a lower-level one; "unknown" without one."""
    if margin.low is None or margin.high is None:
        return "unknown"
    if margin.level is None or margin.level < ANSWER_MIN_INTERVAL_LEVEL:
        return "undecided"
    return versus(margin)


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
    part = _one_allocator(part)
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
    ranked = ok.sort_values("median_throughput", ascending=False)
    best = ranked.iloc[0]
    interval = row_interval(best)
    workers = int(best["workers"]) if regime == "cpu_dataloader" else -1
    usable = number(best.get("usable_cores"))
    machine_type, usd, basis = _cost(
        regime, float(best["median_throughput"]), workers, usable, cloud
    )
    record.update(
        status="measured",
        why="",
        regime=regime,
        setting=_setting_label(regime, best),
        workers=workers if workers >= 0 else None,
        usable_cores=usable,
        library=best["library"],
        img_per_s=float(best["median_throughput"]),
        ci_low=math.nan if interval.low is None else interval.low,
        ci_high=math.nan if interval.high is None else interval.high,
        ci_level=number(best.get("ci_level")),
        other_libraries=_not_ok_words(not_ok),
        machine_type=machine_type,
        usd_per_million_images=usd,
        cost_basis=basis,
    )
    if len(ranked) > 1:
        runner = ranked.iloc[1]
        margin = speedup_interval(best, runner)
        record.update(
            runner_up=runner["library"],
            runner_up_img_per_s=float(runner["median_throughput"]),
            margin=float(best["median_throughput"]) / float(runner["median_throughput"]),
            margin_low=math.nan if margin.low is None else margin.low,
            margin_high=math.nan if margin.high is None else margin.high,
            margin_level=math.nan if margin.level is None else margin.level,
            versus_runner_up=_verdict(margin),
        )
        if regime != "micro":
            record.update(_one_thread(part, str(best["library"]), str(runner["library"])))
    if regime == "cpu_dataloader" and best["scope"] == "decode":
        record.update(_fed(starved, model, key, str(best["library"])))
    else:
        record.update(
            _fed(None, model, key, "")
            | {
                "fed_answer": "not measured: no end-to-end DataLoader rows of this pipeline "
                "(cpu_dataloader, decode scope)"
            }
        )
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


def _num(value: Any) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return math.nan
    return value


def _rate(value: Any) -> str:
    value = _num(value)
    return "" if math.isnan(value) else f"{value:,.0f}"


def _pct(value: Any) -> str:
    value = _num(value)
    return "" if math.isnan(value) else f"{value:.0%}"


def _level(value: Any) -> str:
    value = _num(value)
    return "" if math.isnan(value) else f", {value:.0%} CI"


def _fastest_cell(r: pd.Series) -> str:
    cell = f"{r['library']} {_rate(r['img_per_s'])} img/s"
    if not math.isnan(_num(r["ci_low"])):
        cell += f" [{_rate(r['ci_low'])}, {_rate(r['ci_high'])}{_level(r['ci_level'])}]"
    return cell


def _runner_cell(r: pd.Series) -> str:
    if not isinstance(r["runner_up"], str) or not r["runner_up"]:
        return "no other library ran it" + (
            f" ({r['other_libraries']})"
            if isinstance(r["other_libraries"], str) and r["other_libraries"]
            else ""
        )
    cell = f"{r['runner_up']} {_rate(r['runner_up_img_per_s'])} img/s: "
    if r["versus_runner_up"] == "tie":
        return cell + (
            f"tie ({_num(r['margin']):.2f}x, interval [{_num(r['margin_low']):.2f}, "
            f"{_num(r['margin_high']):.2f}{_level(r['margin_level'])}] holds 1)"
        )
    if math.isnan(_num(r["margin_low"])):
        return cell + f"fastest is {_num(r['margin']):.2f}x faster (no interval)"
    if r["versus_runner_up"] == "undecided":
        return (
            cell
            + (
                f"{_num(r['margin']):.2f}x [{_num(r['margin_low']):.2f}, "
                f"{_num(r['margin_high']):.2f}{_level(r['margin_level'])}], not decided (a "
                f"margin is called from a {ANSWER_MIN_INTERVAL_LEVEL:.0%} interval; measure "
                "more epochs or runs: cpu_dataloader.runs)"
            )
            + _one_thread_words(r)
        )
    return cell + (
        f"fastest is {_num(r['margin']):.2f}x [{_num(r['margin_low']):.2f}, "
        f"{_num(r['margin_high']):.2f}{_level(r['margin_level'])}] faster"
    )


def _one_thread_words(r: pd.Series) -> str:
    """ "; one thread: 1.18x [1.05, 1.31, 95% CI] faster" where the one-thread margin exists."""
    margin = _num(r.get("one_thread_margin"))
    if math.isnan(margin):
        return ""
    words = {"faster": "faster", "tie": "a tie", "slower": "slower"}.get(
        str(r.get("one_thread_versus")), "not decided"
    )
    return (
        f"; one thread on decoded images: {r['library']} at {margin:.2f}x {r['runner_up']}'s "
        f"rate [{_num(r['one_thread_low']):.2f}, {_num(r['one_thread_high']):.2f}"
        f"{_level(r['one_thread_level'])}], {words}"
    )


def _fed_cell(r: pd.Series) -> str:
    answer = str(r["fed_answer"] or "")
    if math.isnan(_num(r["data_wait"])):
        return answer
    return (
        f"{answer}; at {int(_num(r['wait_at_workers']))} workers the model waits "
        f"{_pct(r['data_wait'])} [{_pct(r['data_wait_low'])}, {_pct(r['data_wait_high'])}]"
    )


def _cost_cell(r: pd.Series) -> str:
    usd = _num(r["usd_per_million_images"])
    if math.isnan(usd):
        return str(r["cost_basis"] or "not priced")
    return f"${usd:,.3f} ({r['machine_type']})"


def _pipeline_cell(r: pd.Series) -> str:
    return f"{r['pipeline']}" + (" (yours)" if bool(r["yours"]) else "")


def markdown(
    rec: pd.DataFrame,
    heading: str = "## The answer: which library, how many workers, what it costs",
) -> list[str]:
    """The summary's first section: one row per pipeline and machine, then how to read it."""
    lines = [heading, ""]
    if rec.empty:
        return [
            *lines,
            "Not measured: no pipeline is configured (`pipelines` in config/config.yaml; your "
            "own: docs/pipelines.md), so there is nothing to recommend.",
            "",
        ]
    target = rec["target"].dropna()
    target = target[target != ""]
    model = (
        f"{target.iloc[0]} ({_rate(rec['target_img_per_s'].dropna().iloc[0])} img/s)"
        if len(target)
        else "no target model"
    )
    head = [
        "pipeline",
        "machine",
        "setting ranked",
        "fastest library",
        "runner-up",
        f"workers that feed {model}",
        "USD per 1M images",
    ]
    body = []
    for _, r in rec.iterrows():
        if r["status"] != "measured":
            body.append(
                [
                    _pipeline_cell(r),
                    r["machine"] if isinstance(r["machine"], str) else "any",
                    "",
                    f"not measured: {r['why']}",
                    "",
                    "",
                    "",
                ]
            )
            continue
        body.append(
            [
                _pipeline_cell(r),
                f"{r['machine']} ({int(_num(r['usable_cores']))} cores)"
                if not math.isnan(_num(r["usable_cores"]))
                else str(r["machine"]),
                str(r["setting"]),
                _fastest_cell(r),
                _runner_cell(r),
                _fed_cell(r),
                _cost_cell(r),
            ]
        )
    lines += ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in body]
    lines += [
        "",
        "Throughputs are medians with the interval of the median, at the level its values allow "
        "(a DataLoader row of two epochs gives a 50 % interval, and two runs can differ by more "
        "than it: measure more epochs, or several runs, `cpu_dataloader.runs`, whose rows hold "
        "the interval over the runs, before trusting a close call); the runner-up's margin "
        "is the ratio of the two medians with the ratio's interval, a **tie** where it holds 1, "
        f"and called only from an interval of at least {ANSWER_MIN_INTERVAL_LEVEL:.0%}. "
        "The workers column is the starvation model's answer for the fastest library (every "
        "count: results/tables/starvation_pipelines.csv). Cost: the ranked regime's cloud "
        "placement priced per vCPU-hour for the cores the measured rate kept busy, at the "
        "measured rate (an estimate where the placement's cores differ from the measuring "
        "machine's). Every row: results/tables/recommendation.csv.",
        "",
        FED_DEFINITION,
        "",
    ]
    return lines


def short_text(rec: pd.DataFrame) -> str:
    """The few lines printed at the end of a run: pipeline, winner, margin, workers, cost."""
    if rec.empty:
        return "Recommendation: no pipeline configured, nothing to recommend."
    lines = []
    for _, r in rec.iterrows():
        name = _pipeline_cell(r)
        if r["status"] != "measured":
            lines.append(f"  {name}: not measured ({r['why']})")
            continue
        margin = (
            "tie with " + str(r["runner_up"])
            if r["versus_runner_up"] == "tie"
            else f"{_num(r['margin']):.2f}x {r['runner_up']}"
            + (", not decided" if r["versus_runner_up"] in ("undecided", "unknown") else "")
            + (
                f"; one thread {_num(r.get('one_thread_margin')):.2f}x, "
                + str(r.get("one_thread_versus"))
                if r["versus_runner_up"] in ("undecided", "unknown")
                and not math.isnan(_num(r.get("one_thread_margin")))
                else ""
            )
            if isinstance(r["runner_up"], str) and r["runner_up"]
            else "only library"
        )
        fed = r["fed_answer"] or ""
        cost = _num(r["usd_per_million_images"])
        lines.append(
            f"  {name} on {r['machine']}: {r['library']} {_rate(r['img_per_s'])} img/s "
            f"({margin}); workers to feed {r['target']}: {fed}"
            + (
                f"; ${cost:,.3f} per 1M images on {r['machine_type']}"
                if not math.isnan(cost)
                else ""
            )
        )
    return "\n".join(["Recommendation (results/analysis/summary.md has the intervals):", *lines])
