"""Check the cost and memory models against a measured run (docs/cloud.md#checked-against-a-run).

    uv run python tools/checks/cost_validation.py --predict-from SMOKE_RUN --measured LITE_RUN \
        --output OUT.tsv [--configfile FILE] [--config preset=paper-lite ...]
    uv run python tools/checks/cost_validation.py --prediction jobs.tsv --measured LITE_RUN \
        --output OUT.tsv

1. Predicts the measured run's configuration with rule ``cost`` (``snakemake cost`` in a scratch
   directory, ``cloud.estimate_from`` = SMOKE_RUN): results/cost/jobs.tsv lists every planned job
   with its predicted local seconds (expected and at most) and memory (augbench.planning.cost,
   augbench.planning.memory). ``--prediction`` reads such a jobs.tsv made already instead (one
   prediction held against several runs).
2. Reads the measured run's Snakemake benchmark files (``s``, ``max_rss``, ``max_pss``) of the
   same jobs, and the peaks each job's own sampler recorded in its result files' metadata
   (``job_memory``, augbench.measuring.memory_peak): Snakemake samples every 30 s after a job's
   first 30 s, so a long job's peak is the larger of the two.
3. Writes one row per rule: jobs, predicted and measured seconds (sums over the rule's jobs) and
   their ratio, the largest predicted and measured memory, and the range over the rule's jobs of
   predicted / measured memory, for two pairs (``--jobs-output``: also one row per timed job,
   with its measured time split into its rows' own work, as the model counts it when it learns,
   and the rest, the job's fixed time, and its process rounds):

   - ``mem_mb`` (what the job takes from its machine) against what the job really held: its
     ``max_rss`` when its processes share no pages (one process, or a pyperf manager and its
     worker), its ``max_pss`` when it forks DataLoader workers (their copy-on-write pages are the
     main process's, counted once in a PSS sum and once per process in an RSS sum);
   - ``rss_mb`` against Snakemake's ``max_rss`` (that per-process sum) for every job.

   For every rule with at least 3 jobs the targets are: measured / predicted time within
   0.75-1.25, and for both pairs predicted >= measured and <= 2x it; ``within_targets`` says
   (``n/a`` for a rule with fewer jobs: too few to check).

    uv run python tools/checks/cost_validation.py --pool docs/results/MACHINE/*/cost_validation.tsv

pools such files: of the timed rules (the regimes' job kinds) with at least 3 jobs, how many rule
results, the range and median of measured / predicted time, and how many fall outside its target.

The measured run and SMOKE_RUN must be finished workflow runs on the same machine; both runs'
configuration options go in ``--configfile`` and ``--config`` (default: the paper-lite preset, as
committed).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from augbench.planning.cost import read_result  # noqa: E402
from augbench.planning.fixed_costs import benchmark_number, benchmark_row  # noqa: E402
from augbench.planning.regimes.pricing import Learned  # noqa: E402

DEFAULT_CONFIG = ["preset=paper-lite"]  # its libraries and regimes: the preset's
COLUMNS = (
    "rule", "jobs", "predicted_s", "predicted_max_s", "measured_s", "measured_over_predicted",
    "predicted_mem_mb", "measured_mem_mb", "mem_over_measured_min", "mem_over_measured_max",
    "measured_max_pss_mb",
    "predicted_rss_mb", "measured_max_rss_mb", "rss_over_measured_min", "rss_over_measured_max",
    "within_targets",
)  # fmt: skip
TIME_TARGET = (0.75, 1.25)
MEMORY_TARGET = (1.0, 2.0)
MIN_JOBS = 3


def predict(
    smoke: Path, config: list[str], envs_dir: Path, configfile: Path | None = None
) -> list[dict[str, str]]:
    """Rows of results/cost/jobs.tsv for ``config``, learned from the ``smoke`` run."""
    with tempfile.TemporaryDirectory(prefix="cost-validation-") as scratch:
        cmd = [
            sys.executable, "-m", "snakemake", "cost", "--cores", "1",
            "-s", str(ROOT / "Snakefile"), "-d", scratch,
            *(["--configfile", str(configfile)] if configfile else []), "--config", *config,
            f"cloud={{estimate_from: {smoke}}}", f"envs={{dir: {envs_dir}}}",
        ]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=os.environ)
        if done.returncode != 0:
            sys.exit(f"snakemake cost failed:\n{done.stderr[-3000:]}")
        with (Path(scratch) / "results/cost/jobs.tsv").open(newline="") as fh:
            return list(csv.DictReader(fh, delimiter="\t"))


def measured_setup(run: Path, rule: str) -> list[dict[str, str]]:
    return [
        row
        for tsv in sorted((run / "benchmarks" / "setup" / rule).glob("*.tsv"))
        if (row := benchmark_row(tsv)) is not None
    ]


def job_memory(run: Path, outputs: list[str]) -> dict[str, float]:
    """The largest peaks a job's sampler recorded over its result files (0 where none did)."""
    peaks = {"peak_rss_mb": 0.0, "peak_pss_mb": 0.0}
    for output in outputs:
        try:
            recorded = json.loads((run / output).read_text())["metadata"].get("job_memory")
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for key in peaks:
            peaks[key] = max(peaks[key], float((recorded or {}).get(key) or 0.0))
    return peaks


JOB_COLUMNS = ["rule", "benchmark", "predicted_s", "predicted_max_s", "measured_s",
               "measured_over_predicted", "work_s", "rest_s", "rounds", "mem_mb", "held_mb",
               "rss_mb", "max_rss_mb"]  # fmt: skip


def measured_work(run: Path, rule: str, outputs: list[str]) -> tuple[float, int] | None:
    """The seconds of a job's rows' own work as the cost model counts them when it learns
    (augbench.planning.cost.read_result), summed over its result files, and its process rounds
    (the most of any file); None where a file teaches nothing (a kind priced by its wall time)."""
    work, rounds = 0.0, 0
    for output in outputs:
        read = read_result(run / output, rule, Learned())
        if read is None:
            return None
        _, file_work, _, _, file_rounds, _, _ = read
        work, rounds = work + file_work, max(rounds, file_rounds)
    return work, rounds


def compare(
    predicted: list[dict[str, str]], run: Path, per_job: list[dict[str, object]] | None = None
) -> list[dict[str, object]]:
    """One row per rule; ``per_job`` (where given) gets one row per timed job (JOB_COLUMNS)."""
    # One benchmark file per job: a job writing several result files is the sum of its rows.
    jobs: dict[tuple[str, str], dict[str, float]] = {}
    by_rule: dict[str, list[dict[str, float]]] = defaultdict(list)
    setup: dict[str, list[float]] = defaultdict(list)
    for row in predicted:
        if not row["benchmark"]:
            setup[row["rule"]].append(float(row["expected_s"]))
            continue
        key = (row["rule"], row["benchmark"])
        memory = {"mem": float(row["mem_mb"]), "rss": float(row["rss_mb"]),
                  "forked": float(row["forked"])}  # fmt: skip
        job = jobs.setdefault(key, {"expected": 0.0, "max": 0.0, "outputs": [], **memory})
        job["outputs"].append(row["output"])
        job["expected"] += float(row["expected_s"])
        job["max"] += float(row["max_s"])
    for (rule, bench), job in jobs.items():
        measured = benchmark_row(run / bench)
        if measured is None:
            sys.exit(f"{run / bench}: no benchmark file; is {run} a finished run of this config?")
        outputs = job.pop("outputs")
        sampled = job_memory(run, outputs)
        job["s"] = float(measured["s"])
        for name in ("rss", "pss"):
            benchmark = benchmark_number(measured.get(f"max_{name}")) or 0.0
            job[f"max_{name}"] = max(benchmark, sampled[f"peak_{name}_mb"])
        job["held"] = job["max_pss"] if job["forked"] else job["max_rss"]
        by_rule[rule].append(job)
        if per_job is not None:
            split = measured_work(run, rule, outputs)
            work, rounds = (f"{split[0]:.2f}", str(split[1])) if split else ("n/a", "n/a")
            rest = f"{job['s'] - split[0]:.2f}" if split else "n/a"
            per_job.append({
                "rule": rule, "benchmark": bench, "predicted_s": f"{job['expected']:.2f}",
                "predicted_max_s": f"{job['max']:.2f}", "measured_s": f"{job['s']:.2f}",
                "measured_over_predicted": f"{job['s'] / job['expected']:.2f}"
                if job["expected"] else "n/a",
                "work_s": work, "rest_s": rest, "rounds": rounds,
                "mem_mb": f"{job['mem']:.0f}", "held_mb": f"{job['held']:.0f}",
                "rss_mb": f"{job['rss']:.0f}", "max_rss_mb": f"{job['max_rss']:.0f}",
            })  # fmt: skip
    out: list[dict[str, object]] = []
    for rule, members in by_rule.items():
        out.append(summarize(rule, members))
    for rule, seconds in setup.items():
        measured = measured_setup(run, rule)
        got = sum(float(r["s"]) for r in measured)
        ok = _verdict(len(seconds), _within(got / sum(seconds), TIME_TARGET))
        out.append({
            "rule": rule, "jobs": len(seconds), "predicted_s": f"{sum(seconds):.1f}",
            "predicted_max_s": f"{sum(seconds):.1f}", "measured_s": f"{got:.1f}",
            "measured_over_predicted": f"{got / sum(seconds):.2f}" if sum(seconds) else "n/a",
            **{c: "n/a" for c in COLUMNS[6:-1]}, "within_targets": ok,
        })  # fmt: skip
    return out


def _within(value: float, bounds: tuple[float, float]) -> bool:
    return bounds[0] <= value <= bounds[1]


def _verdict(jobs: int, within: bool) -> str:
    """True / False for a rule with at least MIN_JOBS jobs; n/a for fewer (a rule of one or two
    jobs says nothing of the model: one slow start-up decides it)."""
    return "n/a" if jobs < MIN_JOBS else str(within)


def summarize(rule: str, members: list[dict[str, float]]) -> dict[str, object]:
    predicted = sum(j["expected"] for j in members)
    measured = sum(j["s"] for j in members)
    mem = [j["mem"] / j["held"] for j in members if j["held"]]
    rss = [j["rss"] / j["max_rss"] for j in members if j["max_rss"]]
    ratio = measured / predicted if predicted else float("nan")
    ok = _verdict(
        len(members),
        _within(ratio, TIME_TARGET)
        and all(_within(r, MEMORY_TARGET) for r in mem)
        and all(_within(r, MEMORY_TARGET) for r in rss),
    )
    return {
        "rule": rule, "jobs": len(members), "predicted_s": f"{predicted:.1f}",
        "predicted_max_s": f"{sum(j['max'] for j in members):.1f}", "measured_s": f"{measured:.1f}",
        "measured_over_predicted": f"{ratio:.2f}",
        "predicted_mem_mb": f"{max(j['mem'] for j in members):.0f}",
        "measured_mem_mb": f"{max(j['held'] for j in members):.0f}",
        "mem_over_measured_min": f"{min(mem):.2f}" if mem else "n/a",
        "mem_over_measured_max": f"{max(mem):.2f}" if mem else "n/a",
        "measured_max_pss_mb": f"{max(j['max_pss'] for j in members):.0f}",
        "predicted_rss_mb": f"{max(j['rss'] for j in members):.0f}",
        "measured_max_rss_mb": f"{max(j['max_rss'] for j in members):.0f}",
        "rss_over_measured_min": f"{min(rss):.2f}" if rss else "n/a",
        "rss_over_measured_max": f"{max(rss):.2f}" if rss else "n/a",
        "within_targets": ok,
    }  # fmt: skip


def pooled_time(outputs: list[Path]) -> str:
    """One line over the timed rules with at least MIN_JOBS jobs in ``outputs`` (files this tool
    wrote): their count, the range and median of measured / predicted time, how many are outside
    TIME_TARGET."""
    from augbench.planning import regimes

    ratios = []
    for path in outputs:
        with path.open(newline="") as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                if row["rule"] in regimes.KINDS and int(row["jobs"]) >= MIN_JOBS:
                    ratios.append(float(row["measured_over_predicted"]))
    if not ratios:
        return f"no timed rule with at least {MIN_JOBS} jobs in {len(outputs)} file(s)"
    outside = sum(not TIME_TARGET[0] <= r <= TIME_TARGET[1] for r in ratios)
    return (
        f"{len(ratios)} rule results in {len(outputs)} file(s): measured / predicted time "
        f"{min(ratios):.2f}-{max(ratios):.2f}, median {statistics.median(ratios):.2f}; "
        f"{outside} outside {TIME_TARGET[0]}-{TIME_TARGET[1]}"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--predict-from", type=Path, help="the finished run the prediction learns from")
    p.add_argument(
        "--prediction", type=Path,
        help="a prediction made already (results/cost/jobs.tsv of `snakemake cost` with this "
        "configuration), instead of --predict-from",
    )  # fmt: skip
    p.add_argument("--measured", type=Path, help="the finished run to check")
    p.add_argument("--pool", type=Path, nargs="+", help="only pool these outputs of the check")
    p.add_argument("--output", type=Path, default=ROOT / "results" / "cost_validation.tsv")
    p.add_argument("--jobs-output", type=Path, help="also one row per timed job, to this file")
    p.add_argument("--envs-dir", type=Path, default=ROOT / ".venvs")
    p.add_argument("--configfile", type=Path, help="the measured run's config file, if any")
    p.add_argument("--config", nargs="*", default=None, help="key=value pairs (after the file)")
    args = p.parse_args()
    if args.pool:
        print(pooled_time(args.pool))
        return 0
    if args.measured is None:
        p.error("give --measured (the finished run to check), or --pool")
    if (args.predict_from is None) == (args.prediction is None):
        p.error("give --predict-from (a finished run) or --prediction (a jobs.tsv)")
    config = args.config if args.config is not None else ([] if args.configfile else DEFAULT_CONFIG)
    if args.prediction is not None:
        with args.prediction.open(newline="") as fh:
            predicted = list(csv.DictReader(fh, delimiter="\t"))
    else:
        predicted = predict(
            args.predict_from.resolve(),
            config,
            args.envs_dir.resolve(),
            args.configfile.resolve() if args.configfile else None,
        )
    per_job: list[dict[str, object]] = []
    rows = compare(predicted, args.measured.resolve(), per_job)
    if args.jobs_output is not None:
        args.jobs_output.parent.mkdir(parents=True, exist_ok=True)
        with args.jobs_output.open("w", newline="") as fh:
            out = csv.DictWriter(fh, JOB_COLUMNS, delimiter="\t")
            out.writeheader()
            out.writerows(per_job)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with args.output.open("w", newline="") as fh:
        out = csv.DictWriter(fh, COLUMNS, delimiter="\t")
        out.writeheader()
        out.writerows(rows)
    width = max(len(str(r["rule"])) for r in rows) + 2
    for r in rows:
        print(f"{r['rule']:<{width}}{r['jobs']:>4}  time {r['measured_over_predicted']:>5}  "
              f"mem {r['mem_over_measured_min']}-{r['mem_over_measured_max']}  "
              f"rss {r['rss_over_measured_min']}-{r['rss_over_measured_max']}  "
              f"{ {'True': 'ok', 'False': 'MISS'}.get(r['within_targets'], 'n/a')}")  # fmt: skip
    print(f"-> {args.output}")
    return 0 if all(r["within_targets"] != "False" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
