"""The training regime's tables (augbench/measuring/engines/training.py, docs/training.md): each
measured training loop beside the starvation model's prediction **out of sample**.

A training row's prediction never comes from its own job. Its inputs are:

- the **supply**: the cpu_dataloader regime's ``decode`` row of the same machine, dataset,
  library, recipe (or pipeline), worker count, batch size and allocator setting, another job
  (its steady rate, each timed epoch past its first round of batches, with its interval, and
  its job's hand-over probe: augbench.measuring.engines.dataloader.baselines.measure_handover). A
  training loop reads its loader as a stream; an epoch from iter() also pays its start once
  (the workers resumed, their first batches made from idle), which put the epochs' rate 0-6 %
  below the steady rate on a 2-core VM (docs/training.md). A result file without the steady
  rate is predicted from its epochs' rate, and ``supply_basis`` says which;
- the **model rate**: the stand-in's nominal rate (``sleep:<ms>``: batch / ms), or the row's own
  model-alone rate (the step on a resident batch, before the loader starts; pooled runs: the
  median of the runs' rates, with its interval over the runs, ``model_ci_low/high``).

**Several runs of one setting** (result files of the same job from several runs, e.g. folders
given together to ``plot_from``) are pooled, for the supply and for the training row alike: each
run is a process of its own, the value is the median of all their values and the interval is
the bootstrap over processes (augbench.intervals.process_median_interval), so that the spread
between processes, which one process's values do not hold, is inside it (``runs`` and
``supply_runs`` say how many).

Rows without a supply row (another batch size, a worker count or recipe the cpu_dataloader regime
did not measure, the GPU feed, DALI's own loader) say "no out-of-sample prediction" and why.

``predicted_vs_measured``: per machine, accelerator (``variant``), library, recipe and worker
count, the measured throughput and data wait (median of the row's blocks, with the interval of
the median), the prediction with its interval (from the supply's and the model rate's),
measured / predicted, the wait difference, whether both are within
``policy.TRAINING_PREDICTION_TOLERANCE`` and
``policy.TRAINING_WAIT_TOLERANCE``, the fed verdict of the measured wait and of the predicted
wait (augbench.planning.starvation_model.verdict, one threshold: ``policy.FED_WAIT``), and per
series the fewest workers fed (monotone in workers, or flagged). ``summary_lines``: the summary's
section.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from typing import Any

import pandas as pd

from augbench import intervals
from augbench.analysis.cells import decoded, is_true, number
from augbench.analysis.faults import is_bound, row_faults
from augbench.analysis.runs import (
    STEADY_POOL,
    THROUGHPUT_POOL,
    WAIT_POOL,
    pooled_runs,
    process_values,
    run_values,
)
from augbench.analysis.starvation import batch_mb, first_read_s, handover_s
from augbench.planning.starvation_model import FED_DEFINITION, Supply, fewest_fed, predict, verdict
from augbench.policy import FED_WAIT, TRAINING_PREDICTION_TOLERANCE, TRAINING_WAIT_TOLERANCE
from augbench.result_format import MEDIAN_THROUGHPUT
from augbench.workload import adapters, decoders
from augbench.workload.adapters.base import DALI_PIPELINE

# The decoder of the cpu feed's workers (augbench.workload.decoders; native: the library's own).
SERIES: tuple[str, ...] = ("machine", "dataset", "variant", "library", "transform", "decoder")
# What a supply row must share with a training row to stand for its loader.
MATCH: tuple[str, ...] = (
    "machine",
    "dataset",
    "library",
    "transform",
    "decoder",
    "loader",
    "workers",
    "batch_size",
    "allocator_setting",
)
SUPPLY_BASIS: dict[str, str] = {
    "stream": "stream: the supply's epochs past their first round of batches",
    "epochs": "epochs: from iter() to the last batch (the result file has no steady rate)",
}
SLEEP = re.compile(r"^sleep:(?P<ms>\d+(\.\d+)?)$")
# A stand-in step of that many ms of the main process's CPU time
# (augbench.measuring.engines.training).
CPU_STEP = re.compile(r"^cpu:(?P<ms>\d+(\.\d+)?)$")
NO_PREDICTION = "no out-of-sample prediction"
COLUMNS: tuple[str, ...] = (
    *SERIES,
    "workers",
    "batch_size",
    "status",
    "reason",
    "images_per_second",
    "ci_low",
    "ci_high",
    "data_wait",
    "data_wait_low",
    "data_wait_high",
    "verdict",
    "supply_img_per_s",
    "supply_ci_low",
    "supply_ci_high",
    "supply_basis",
    "supply_epoch_img_per_s",
    "supply_allocator_bound",
    "supply_faults_per_image",
    "supply_output_pages",
    "handover_ms",
    "first_read_ms",
    "model_img_per_s",
    "model_ci_low",
    "model_ci_high",
    "model_source",
    "data_over_model",
    "predicted_img_per_s",
    "predicted_low",
    "predicted_high",
    "predicted_data_wait",
    "predicted_wait_low",
    "predicted_wait_high",
    "predicted_verdict",
    "measured_vs_predicted",
    "wait_difference",
    "within_tolerance",
    "within_interval",
    "prediction",
    "step_ms_p50",
    "step_ms_p95",
    "batch_wait_ms_p95",
    "batch_wait_ms_max",
    "batch_waits",
    "fewest_workers_fed",
    "fed_monotone",
    "supply_source",
    "oversubscribed",
    "model_cpu_share",
    "model_cpu_share_source",
    "cores",
    "loader_period_ms",
    "process_img_per_s",
    "process_data_waits",
    "under_load",
    "other_load_cores",
    "supply_under_load",
    "supply_other_load_cores",
    "runs",
    "supply_runs",
)
# A training job's own probes that a pooled row keeps one of per run (each run one process), as
# pooled_runs keeps its per-job probes: the step alone's CPU share.
PER_RUN: tuple[str, ...] = ("model_cpu_share",)
# What makes training rows runs of one setting (pooled when several result files hold it).
TRAINING_SETTING: tuple[str, ...] = (*SERIES, "feed", "workers", "batch_size", "allocator_setting")


def _value(cell: Any, key: str) -> float:
    """``key`` of a dict cell (percentiles), NaN where the row has none."""
    cell = decoded(cell)
    return float(cell[key]) if isinstance(cell, dict) and key in cell else math.nan


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def supply_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The cpu_dataloader decode rows that are ok: what a training row's loader delivers."""
    if frame.empty or "regime" not in frame.columns:
        return frame.iloc[:0]
    part = frame[
        (frame["regime"] == "cpu_dataloader")
        & (frame["scope"].fillna("") == "decode")
        & (frame["status"] == "ok")
    ]
    return part


def pooled_supply(runs: pd.DataFrame) -> pd.Series:
    """The supply of several runs of one cpu_dataloader setting: their epochs and steady rates
    pooled, the median of their jobs' hand-over probes and page faults, and the page faults of
    the most-faulting run (``MOST_FAULTS``: what allocator-bound is judged on):
    augbench.analysis.runs."""
    return pooled_runs(runs, THROUGHPUT_POOL, STEADY_POOL)


def supply_rate(supply: pd.Series) -> tuple[float, float, float, bool]:
    """The rate a training loop's prediction takes from its supply row, with its interval, and
    whether it is the steady rate: a training loop reads its loader as a stream, so the steady
    rate where the row's job recorded one (each timed epoch past its first round of batches),
    else its epochs' rate."""
    stream = number(supply.get("steady_throughput")) > 0
    prefix = "steady_" if stream else ""
    rate = number(supply.get("steady_throughput" if stream else MEDIAN_THROUGHPUT))
    low, high = number(supply.get(f"{prefix}ci_low")), number(supply.get(f"{prefix}ci_high"))
    return rate, low, high, stream


def pooled_training(runs: pd.DataFrame) -> pd.Series:
    """Several runs of one training setting: the ok runs' blocks pooled (throughput and data
    wait) and the median of their model-alone rates, with that median's interval over the runs
    (each run a process: a step's rate differs between processes, by up to 1.4x on one H100
    node);
    where none is ok, the latest run."""
    ok = runs[runs["status"] == "ok"]
    if ok.empty:
        return pooled_runs(runs)
    row = pooled_runs(ok, THROUGHPUT_POOL, WAIT_POOL)
    for column in PER_RUN:  # one value per run, as the per-job probes of pooled_runs
        if column in ok and len(ok) > 1:
            each = [v for _, run in ok.iterrows() for v in run_values(run, column)]
            row[column] = statistics.median(each) if each else math.nan
            row[f"{column}_by_run"] = json.dumps(each)
    rates = [[v] for _, run in ok.iterrows() for v in run_values(run, "model_img_per_s") if v > 0]
    if len(rates) > 1:
        spread = intervals.process_median_interval(rates)
        row["model_ci_low"], row["model_ci_high"] = spread.low, spread.high
    return row


def _key(row: pd.Series | dict[str, Any]) -> tuple[str, ...]:
    out = []
    for col in MATCH:
        value = row.get(col)
        if col in ("workers", "batch_size"):
            value = int(number(value)) if not math.isnan(number(value)) else -1
        out.append(_text(value))
    return tuple(out)


def _stand_in(row: pd.Series) -> re.Match[str] | None:
    """The ``sleep:<ms>`` or ``cpu:<ms>`` stand-in a row trained (None for a real model, which
    reads its batches; a stand-in only sleeps or computes)."""
    accelerator = _text(row.get("accelerator"))
    return SLEEP.match(accelerator) or CPU_STEP.match(accelerator)


def model_cpu_share(row: pd.Series) -> tuple[float, str]:
    """The cores the model's step keeps busy, and where the number comes from: measured with
    the step alone (``model_cpu_share``, the runs' median where the row pools several); else a
    sleeping stand-in 0, a CPU stand-in 1, a model on the CPU 1 (its one thread: the job's
    thread policy), a model on a GPU 0 (not measured)."""
    shares = [v for v in run_values(row, "model_cpu_share") if v >= 0]
    if shares:
        return statistics.median(shares), "measured with the step alone"
    accelerator = _text(row.get("accelerator"))
    if SLEEP.match(accelerator):
        return 0.0, "a sleeping stand-in"
    if CPU_STEP.match(accelerator) or _text(row.get("device")) == "cpu":
        return 1.0, "one thread on the CPU (the thread policy)"
    return 0.0, "a GPU step (not measured)"


def _model_rate(row: pd.Series) -> tuple[float, str]:
    """The model's img/s for the prediction and where it comes from: a sleeping stand-in's
    nominal rate; a step that computes (a model, the ``cpu:`` stand-in) measured alone, since
    how long its work takes depends on the machine."""
    sleep = SLEEP.match(_text(row.get("accelerator")))
    if sleep:
        batch = number(row.get("batch_size"))
        return batch * 1000.0 / float(sleep["ms"]), f"the stand-in's nominal rate ({sleep[0]})"
    if number(row.get("model_ci_high")) > 0:
        return number(row.get("model_img_per_s")), "the model alone, measured in each run's job"
    return number(row.get("model_img_per_s")), "the model alone, measured in the row's job"


def _model_ends(row: pd.Series, model_rate: float) -> list[float]:
    """The model rates the prediction's interval spans: the rate, and the ends of its interval
    over the runs where the row pools several (a stand-in's nominal rate has none)."""
    if SLEEP.match(_text(row.get("accelerator"))):
        return [model_rate]
    ends = (number(row.get("model_ci_low")), number(row.get("model_ci_high")))
    return [model_rate, *(r for r in ends if r > 0)]


def _why_no_supply(row: pd.Series) -> str | None:
    """Why a training row cannot have an out-of-sample supply, before looking for one."""
    if _text(row.get("feed")) == "gpu":
        return (
            "the GPU feed's loader (workers cutting uint8 crops, the recipe on the device) is "
            "measured by no other regime"
        )
    library = str(row.get("library"))
    if library in adapters.with_capability(DALI_PIPELINE):
        title = adapters.declared(library).title
        return (
            f"{title}'s loader runs in the training process's own threads; no other job measures it"
        )
    return None


def _prediction(supply: pd.Series, row: pd.Series, model_rate: float) -> dict[str, Any]:
    """The prediction and its interval (from the supply's and the model rate's) for one
    training row."""
    workers = int(number(row.get("workers")))
    batch = int(number(row.get("batch_size")))
    read = 0.0
    reads = _stand_in(row) is None
    if workers > 0:
        size = batch_mb(row)
        idle, busy = handover_s(supply, size, reads)
        if math.isnan(idle):
            return {"prediction": f"{NO_PREDICTION}: the supply's job has no hand-over probe"}
        if reads:
            read = first_read_s(supply, size)
    else:
        idle = busy = 0.0

    cores = int(number(row.get("usable_cores"))) if number(row.get("usable_cores")) > 0 else 0
    share, share_source = model_cpu_share(row)

    def at(rate: float, model: float = model_rate) -> Any:
        return predict(Supply(rate, workers, batch, idle, busy, read, cores), model, share)

    rate, low, high, stream = supply_rate(supply)
    faults = row_faults(supply)
    pages = supply.get("output_pages")
    middle = at(rate)
    # The prediction over the supply's interval and the model rate's (their ends and medians,
    # every pair: the hand-over's share makes it not always monotone in the rates).
    rates = [r for r in (rate, low, high) if r > 0]
    ends = [at(r, m) for r in rates for m in _model_ends(row, model_rate)]
    return {
        "supply_img_per_s": rate,
        "supply_ci_low": low,
        "supply_ci_high": high,
        "supply_basis": SUPPLY_BASIS["stream" if stream else "epochs"],
        "supply_epoch_img_per_s": number(supply.get(MEDIAN_THROUGHPUT)),
        # The supply's loader page-faulted beyond its transfer (augbench.analysis.faults) in its
        # most-faulting run (pooled_supply): its rate then depends on its process's allocator
        # history, which another process does not share (docs/training.md).
        "supply_allocator_bound": is_bound(faults, pages, supply.get("workers")),
        "supply_faults_per_image": number(faults),
        "supply_output_pages": number(pages),
        "handover_ms": 1000.0 * middle.handover_s,
        "first_read_ms": 1000.0 * read,
        "data_over_model": rate / model_rate,
        "predicted_img_per_s": middle.images_per_second,
        "predicted_low": min(p.images_per_second for p in ends),
        "predicted_high": max(p.images_per_second for p in ends),
        "predicted_data_wait": middle.data_wait_fraction,
        # The low end also spans a step that shares its core with the workers (its wall time
        # stretched) where the model keeps cores from them (augbench.planning.starvation_model).
        "predicted_wait_low": min(min(p.data_wait_fraction, p.data_wait_shared) for p in ends),
        "predicted_wait_high": max(p.data_wait_fraction for p in ends),
        "predicted_verdict": verdict(
            min(min(p.data_wait_fraction, p.data_wait_shared) for p in ends),
            max(p.data_wait_fraction for p in ends),
        ),
        "model_cpu_share": share,
        "model_cpu_share_source": share_source,
        "cores": cores or math.nan,
        "loader_period_ms": 1000.0 * middle.loader_period_s,
        "prediction": middle.rule,
        "supply_source": _text(supply.get("source_file")),
        "supply_under_load": supply.get("under_load"),
        "supply_other_load_cores": number(supply.get("other_load_cores")),
        "supply_runs": supply.get("runs", 1),
    }


def oversubscribed(row: pd.Series) -> bool | None:
    """Whether the loader's workers and the training process ask for more cores than the job
    had (workers + 1 > usable cores): then each runs slower than it did alone, and the
    prediction, which takes their alone rates, does not model it. None where cores are unknown."""
    cores = number(row.get("usable_cores"))
    if not cores > 0:
        return None
    return bool(int(row["workers"]) + 1 > cores)


def _overlap(low: float, high: float, other_low: float, other_high: float) -> bool | None:
    if any(math.isnan(number(v)) for v in (low, high, other_low, other_high)):
        return None
    return bool(max(low, other_low) <= min(high, other_high))


def within_interval(record: dict[str, Any]) -> bool | None:
    """Whether the measured row and its prediction agree within their intervals: the measured
    throughput's and data wait's intervals each overlap the prediction's, which spans the ends
    of its inputs' intervals (the supply's runs, the model's). A row off the tolerances but
    within its interval missed by no more than its inputs' own spread: more runs of the supply
    narrow it. A row within the tolerances can be outside its interval where one process's
    interval is narrower than the spread between processes (one run a side). None without
    intervals."""
    throughput = _overlap(
        record["ci_low"], record["ci_high"], record["predicted_low"], record["predicted_high"]
    )
    wait = _overlap(
        record["data_wait_low"],
        record["data_wait_high"],
        record["predicted_wait_low"],
        record["predicted_wait_high"],
    )
    if throughput is None or wait is None:
        return None
    return throughput and wait


def predicted_vs_measured(frame: pd.DataFrame) -> pd.DataFrame:
    rows = frame[frame["regime"] == "training"] if "regime" in frame.columns else frame.iloc[:0]
    supplies: dict[tuple[str, ...], pd.Series] = {}
    candidates = supply_rows(frame)
    if not candidates.empty:
        keys = candidates.apply(_key, axis=1)
        for key, runs in candidates.groupby(keys, sort=False):
            supplies[key] = pooled_supply(runs)
    if not rows.empty:
        settings = [c for c in TRAINING_SETTING if c in rows.columns]
        rows = pd.DataFrame(
            [pooled_training(runs) for _, runs in rows.groupby(settings, sort=False, dropna=False)]
        )
    records = []
    for _, row in rows.iterrows():
        ok = row["status"] == "ok"
        model_rate, model_source = _model_rate(row)
        record: dict[str, Any] = {
            **{k: row.get(k) for k in SERIES},
            "workers": int(row["workers"]),
            "batch_size": row.get("batch_size"),
            "status": row["status"],
            "reason": row.get("reason") if not ok else "",
            "images_per_second": number(row.get(MEDIAN_THROUGHPUT)),
            "ci_low": number(row.get("ci_low")),
            "ci_high": number(row.get("ci_high")),
            "data_wait": number(row.get("data_wait_median")),
            "data_wait_low": number(row.get("data_wait_ci_low")),
            "data_wait_high": number(row.get("data_wait_ci_high")),
            "model_img_per_s": model_rate,
            "model_ci_low": number(row.get("model_ci_low")),
            "model_ci_high": number(row.get("model_ci_high")),
            "model_source": model_source,
            "step_ms_p50": _value(row.get("step_ms"), "p50"),
            "step_ms_p95": _value(row.get("step_ms"), "p95"),
            "batch_wait_ms_p95": _value(row.get("batch_wait_ms"), "p95"),
            "batch_wait_ms_max": _value(row.get("batch_wait_ms"), "max"),
            "batch_waits": _value(row.get("batch_wait_ms"), "n"),
            "oversubscribed": oversubscribed(row),
            # One value per run (each a process of its own): the unit of a decided call
            # (augbench.decision), the median of the run's blocks of throughput and data wait.
            "process_img_per_s": json.dumps(process_values(row)) if ok else "",
            "process_data_waits": json.dumps(process_values(row, *WAIT_POOL[:2])) if ok else "",
            # How quiet the machine was (augbench.measuring.quietness; the loudest run of a pooled
            # row).
            "under_load": row.get("under_load"),
            "other_load_cores": number(row.get("other_load_cores")),
            "runs": row.get("runs", 1),
        }
        record["verdict"] = verdict(record["data_wait_low"], record["data_wait_high"]) if ok else ""
        why = _why_no_supply(row)
        supply = supplies.get(_key(row)) if why is None else None
        if why is None and supply is None:
            why = (
                f"no ok cpu_dataloader decode row of {row.get('transform')} at "
                f"{int(row['workers'])} workers, batch {row.get('batch_size')} on this machine, "
                "dataset and allocator setting (add them to cpu_dataloader.transforms, workers "
                "and batch_size)"
            )
        if why is not None:
            record["prediction"] = f"{NO_PREDICTION}: {why}"
        elif not ok or not model_rate > 0:
            record["prediction"] = f"{NO_PREDICTION}: the row has no measured model rate"
        else:
            record.update(_prediction(supply, row, model_rate))
        predicted = number(record.get("predicted_img_per_s"))
        if ok and predicted > 0:
            ratio = record["images_per_second"] / predicted
            difference = record["data_wait"] - record["predicted_data_wait"]
            record["measured_vs_predicted"] = ratio
            record["wait_difference"] = difference
            record["within_tolerance"] = bool(
                abs(ratio - 1.0) <= TRAINING_PREDICTION_TOLERANCE
                and abs(difference) <= TRAINING_WAIT_TOLERANCE
            )
            record["within_interval"] = within_interval(record)
        records.append(record)
    table = pd.DataFrame.from_records(records, columns=list(COLUMNS))
    table["fewest_workers_fed"] = pd.Series(dtype=object)
    table["fed_monotone"] = pd.Series(dtype=object)
    for _, series in table.groupby(list(SERIES), dropna=False):
        measured = series[series["status"] == "ok"]
        fewest, monotone = fewest_fed(
            dict(zip(measured["workers"], measured["verdict"], strict=True))
        )
        table.loc[series.index, "fewest_workers_fed"] = fewest
        table.loc[series.index, "fed_monotone"] = monotone
    return table.sort_values([*SERIES, "workers"]).reset_index(drop=True)


def _pct(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.1%}"


def _between(low: float, high: float, fmt: str) -> str:
    if math.isnan(low) or math.isnan(high):
        return ""
    return f" [{format(low, fmt)}, {format(high, fmt)}]"


def _pooled_note(table: pd.DataFrame) -> list[str]:
    """What the summary says where rows pool several runs of their setting."""
    runs = pd.to_numeric(table["runs"], errors="coerce").fillna(1)
    supply_runs = pd.to_numeric(table["supply_runs"], errors="coerce").fillna(1)
    pooled = int(((runs > 1) | (supply_runs > 1)).sum())
    if not pooled:
        return []

    def span(counts: pd.Series) -> str:
        low, high = int(counts.min()), int(counts.max())
        return str(low) if low == high else f"{low}-{high}"

    return [
        f"{pooled} rows pool several runs of their setting (training runs {span(runs)}, supply "
        f"runs {span(supply_runs)}: `runs` and `supply_runs` in the training table, "
        "tables/training.csv); their values are the medians of all the runs' values and their "
        "intervals are over the runs.",
        "",
    ]


def summary_lines(frame: pd.DataFrame) -> list[str]:
    table = predicted_vs_measured(frame)
    if table.empty:
        return []
    lines = [
        "## Training: measured against the starvation model, out of sample",
        "",
        "Each row is a real training loop (or the sleep stand-in) fed by the library's "
        "DataLoader. Its prediction comes from another job: the cpu_dataloader row of the same "
        "recipe, workers and batch (the loader's rate and hand-over) and the model's rate "
        "(the stand-in's nominal rate, or the model alone), with the cores a step on the CPU "
        "keeps from the workers. Values are medians over the row's "
        "blocks with the interval of the median in brackets. "
        f"A row is flagged beyond {TRAINING_PREDICTION_TOLERANCE:.0%} in throughput or "
        f"{TRAINING_WAIT_TOLERANCE:.0%} points of data wait.",
        "",
        FED_DEFINITION,
        "",
        *_pooled_note(table),
        "| accelerator | library | recipe | workers | img/s | predicted | measured / predicted "
        "| data wait | predicted wait | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for _, r in table.iterrows():
        head = f"| {r['variant']} | {r['library']} | {r['transform']} | {r['workers']} | "
        if r["status"] != "ok":
            lines.append(f"{head}{r['status']}: {r['reason']} | | | | | |")
            continue
        measured = f"{r['images_per_second']:.1f}{_between(r['ci_low'], r['ci_high'], '.0f')}"
        wait = f"{_pct(r['data_wait'])}{_between(r['data_wait_low'], r['data_wait_high'], '.1%')}"
        if math.isnan(number(r.get("predicted_img_per_s"))):
            lines.append(f"{head}{measured} | {r['prediction']} | | {wait} | | {r['verdict']} |")
            continue
        flag = "" if r["within_tolerance"] else " **(differs)**"
        lines.append(
            f"{head}{measured} | {r['predicted_img_per_s']:.1f}"
            f"{_between(r['predicted_low'], r['predicted_high'], '.0f')} | "
            f"{r['measured_vs_predicted']:.2f}{flag} | {wait} | "
            f"{_pct(r['predicted_data_wait'])} | {r['verdict']} |"
        )
        if not r["within_tolerance"]:
            bound = is_true(r.get("supply_allocator_bound"))
            notes.append(
                f"- {r['library']} {r['transform']} with {r['workers']} worker(s) "
                f"({r['variant']}): measured {r['images_per_second']:.1f} img/s is "
                f"{r['measured_vs_predicted']:.2f}x the prediction and its data wait "
                f"{_pct(r['data_wait'])} against {_pct(r['predicted_data_wait'])} predicted "
                f"(supply {r['supply_img_per_s']:.0f} img/s, model "
                f"{r['model_img_per_s']:.0f} img/s, data / model {r['data_over_model']:.2f})"
                + (
                    "; the supply's loader is allocator-bound, so its rate depends on its "
                    "process's allocator history (docs/allocator.md: glibc-steady removes it)"
                    if bound
                    else ""
                )
                + (
                    "; its intervals overlap the prediction's, which spans the spread of the "
                    "supply's runs: within what the inputs' spread allows (more supply runs "
                    "narrow it)"
                    if is_true(r.get("within_interval"))
                    else "; beyond the prediction's interval"
                    if str(r.get("within_interval")) == "False"
                    else ""
                )
                + (
                    f"; its {r['workers']} workers and the model's step share the job's "
                    f"{r['cores']:.0f} cores, which the prediction counts (the step keeps "
                    f"{r['model_cpu_share']:.2f} of a core busy)."
                    if str(r.get("oversubscribed")) == "True"
                    and number(r.get("model_cpu_share")) > 0.05
                    and number(r.get("cores")) > 0
                    else f"; its {r['workers']} workers and the training process ask for more "
                    "cores than the job had, so each ran slower than alone, which the "
                    "prediction (their alone rates) does not model."
                    if str(r.get("oversubscribed")) == "True"
                    else "."
                )
            )
    lines.append("")
    for _, r in table.drop_duplicates(list(SERIES)).iterrows():
        value = r["fewest_workers_fed"]
        if value is not None and not pd.isna(value):
            said = f"{int(value)} worker(s) keep it fed (data wait under {FED_WAIT:.0%})"
        else:
            said = f"no measured worker count keeps the data wait under {FED_WAIT:.0%}"
        if (
            r["fed_monotone"] is not None
            and not pd.isna(r["fed_monotone"])
            and not r["fed_monotone"]
        ):
            said += "; not monotone: a count above a fed one is starved"
        named = _text(r.get("decoder"))
        decoder = f", {named} decoder" if named not in ("", decoders.NATIVE) else ""
        lines.append(f"- {r['library']} {r['transform']} ({r['variant']}{decoder}): {said}.")
    return [*lines, "", *notes, *([""] if notes else [])]
