"""Does the scaling model behind ``workers_to_feed`` hold on a machine with more cores?

``workers_to_feed`` (augbench.analysis.starvation) extrapolates a loader's supply past the
largest measured worker count with a declared scaling model (``scaling_model``): linear at the
largest count's per-worker rate where one count of 1 or more workers is measured (a 2-core
machine's default run: 2 workers), or at the gain per worker measured between the two largest
counts where two are. This tool checks both rules out of sample on every committed run of a
larger machine (default: the H100 node's 16-core runs): within each run and series (library,
recipe, batch, dataset; cpu_dataloader, decode scope, ok rows), the rule is fitted on the
run's smallest count (one-count rule) or its two smallest counts (two-count rule) and predicts
every larger count of the same run; the rows it predicts are never inputs. Anchoring on the
run's own rows makes the per-core speed of the machine cancel: the check is of the scaling,
not of the speed of a core.

A row passes when measured / predicted supply is within ``TOLERANCE`` of 1 (15 %: the
tolerance for predicting a training run, policy.TRAINING_PREDICTION_TOLERANCE, fixed before
any outcome was seen). Every row of a count above the inputs counts.

Writes, into ``--out`` (a run folder): ``workers_to_feed_one_count.csv`` and
``workers_to_feed_two_counts.csv`` (one line per predicted row) and README.md (date, commit,
command, which rows were inputs and which were checked, the pooled figures per rule and per
worker count, all generated here).

    uv run python tools/checks/workers_to_feed_check.py \\
        --out docs/results/intel-xeon-16c-nvidia-h100-80gb-hbm3/2026-11-29-workers-to-feed-check
"""

from __future__ import annotations

import argparse
import datetime as dt
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from augbench.analysis.starvation import scaling_model  # noqa: E402
from augbench.policy import TRAINING_PREDICTION_TOLERANCE  # noqa: E402
from augbench.result_format import MEDIAN_THROUGHPUT  # noqa: E402

TOLERANCE = TRAINING_PREDICTION_TOLERANCE
NODE = "intel-xeon-16c-nvidia-h100-80gb-hbm3"
RULES = {"one_count": 1, "two_counts": 2}  # rule -> how many of a run's smallest counts it fits
SERIES = ["library", "transform", "batch_size", "dataset"]
COLUMNS = [
    "run",
    *SERIES,
    "rule",
    "input_workers",
    "input_img_per_s",
    "workers",
    "measured_img_per_s",
    "predicted_img_per_s",
    "measured_over_predicted",
    "within",
    "scaling",
]


def node_rows(results: Path) -> pd.DataFrame:
    """Every ok cpu_dataloader decode-scope row with workers of every run under ``results``
    (``<run>/analysis/all_results.csv``), with its run folder's name."""
    frames = []
    for path in sorted(results.glob("*/analysis/all_results.csv")):
        frame = pd.read_csv(path, low_memory=False)
        frame = frame[
            (frame["regime"] == "cpu_dataloader")
            & (frame["scope"] == "decode")
            & (frame["status"] == "ok")
            & (pd.to_numeric(frame["workers"], errors="coerce") >= 1)
            & (pd.to_numeric(frame[MEDIAN_THROUGHPUT], errors="coerce") > 0)
        ]
        frame = frame[[*SERIES, "workers", MEDIAN_THROUGHPUT]].copy()
        frames.append(frame.assign(run=path.parents[1].name))
    if not frames:
        return pd.DataFrame(columns=["run", *SERIES, "workers", MEDIAN_THROUGHPUT])
    rows = pd.concat(frames, ignore_index=True)
    rows["workers"] = rows["workers"].astype(int)
    return rows


def compare(rows: pd.DataFrame, rule: str) -> pd.DataFrame:
    """One line per row of a count above the rule's inputs, within its run and series."""
    fitted = RULES[rule]
    records = []
    for (run, *key), group in rows.groupby(["run", *SERIES], sort=True, dropna=False):
        rates = group.groupby("workers")[MEDIAN_THROUGHPUT].median().sort_index()
        if len(rates) <= fitted:
            continue
        inputs = rates.iloc[:fitted]
        scaling = scaling_model(inputs.to_dict())
        for _, row in group[group["workers"] > inputs.index.max()].iterrows():
            measured = float(row[MEDIAN_THROUGHPUT])
            predicted = scaling.rate(int(row["workers"]))
            ratio = measured / predicted
            records.append(
                {
                    "run": run,
                    **dict(zip(SERIES, key, strict=True)),
                    "rule": rule,
                    "input_workers": ",".join(str(w) for w in inputs.index),
                    "input_img_per_s": ",".join(f"{r:.1f}" for r in inputs),
                    "workers": int(row["workers"]),
                    "measured_img_per_s": round(measured, 1),
                    "predicted_img_per_s": round(predicted, 1),
                    "measured_over_predicted": round(ratio, 3),
                    "within": abs(ratio - 1) <= TOLERANCE,
                    "scaling": scaling.text.split(", one core")[0],
                }
            )
    return pd.DataFrame.from_records(records, columns=COLUMNS)


def outcome(table: pd.DataFrame) -> tuple[int, int]:
    """Rows within TOLERANCE, of the rows predicted (the ledger's count)."""
    within = table["within"].astype(str).str.lower() == "true"
    return int(within.sum()), len(table)


def _commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or "unknown"


def _counts(table: pd.DataFrame) -> str:
    return " or ".join(sorted(table["input_workers"].unique())) or "none"


def readme(tables: dict[str, pd.DataFrame], rows: pd.DataFrame, command: str, machine: str) -> str:
    runs = ", ".join(sorted(rows["run"].unique()))
    lines = [
        f"# workers_to_feed's scaling model, checked on {machine}'s rows",
        "",
        f"- Date: {dt.datetime.now(dt.UTC):%Y-%m-%d}",
        f"- Commit: {_commit()}",
        f"- Machine of the rows: {machine}; the check is arithmetic on its committed rows",
        "- Command:",
        "",
        "```bash",
        command,
        "```",
        "",
        "What is checked: the scaling model `workers_to_feed` extrapolates with "
        "(augbench.analysis.starvation.scaling_model; docs/starvation.md). Rows: every ok "
        f"`cpu_dataloader` decode-scope row of the machine's runs ({runs}; "
        f"`<run>/analysis/all_results.csv`): {len(rows)} rows. No 2-core row measures the "
        "node's recipe and the node has no 1-2-worker row of it, so each rule is fitted on "
        "each run's own smallest count(s) and predicts that run's larger counts: the per-core "
        "speed cancels, the scaling is what is checked. A run with too few counts for a "
        "rule adds no line to it.",
        "",
        "- `one_count`: inputs the run's smallest count (here "
        f"{_counts(tables['one_count'])} workers); checked every larger count (the rule a "
        "2-core run applies to its one count of 2 workers).",
        "- `two_counts`: inputs the run's two smallest counts (here "
        f"{_counts(tables['two_counts'])} workers); checked every larger count.",
        "",
        f"Criterion (fixed before the outcome): measured / predicted within {TOLERANCE:.0%} "
        "of 1. Every predicted row counts.",
        "",
        "| rule | workers | rows | within | measured / predicted |",
        "|---|---|---|---|---|",
    ]
    for rule, table in tables.items():
        for workers, part in table.groupby("workers"):
            passed, total = outcome(part)
            ratios = ", ".join(f"{r:.2f}" for r in part["measured_over_predicted"])
            lines.append(f"| {rule} | {workers} | {total} | {passed} | {ratios} |")
        passed, total = outcome(table)
        lines.append(f"| {rule} | all | {total} | {passed} | |")
    passed = sum(outcome(t)[0] for t in tables.values())
    total = sum(outcome(t)[1] for t in tables.values())
    lines += [
        "",
        f"Pooled over both rules: {passed} of {total} within {TOLERANCE:.0%}. Every line: "
        + ", ".join(f"[workers_to_feed_{r}.csv](workers_to_feed_{r}.csv)" for r in tables)
        + ".",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--results",
        type=Path,
        default=ROOT / "docs" / "results" / NODE,
        help="the machine's run folders (default: the H100 node's)",
    )
    p.add_argument("--out", type=Path, required=True, help="the run folder to write")
    args = p.parse_args(argv)
    rows = node_rows(args.results)
    if rows.empty:
        print(
            f"no ok cpu_dataloader decode rows with workers under {args.results}: nothing to check"
        )
        return 1
    tables = {rule: compare(rows, rule) for rule in RULES}
    args.out.mkdir(parents=True, exist_ok=True)
    for rule, table in tables.items():
        table.to_csv(args.out / f"workers_to_feed_{rule}.csv", index=False)
    out = args.out.resolve()
    shown = out.relative_to(ROOT) if out.is_relative_to(ROOT) else out
    given = args.results.resolve()
    results = given.relative_to(ROOT) if given.is_relative_to(ROOT) else given
    command = (
        f"uv run python tools/checks/workers_to_feed_check.py --results {results} --out {shown}"
    )
    (args.out / "README.md").write_text(readme(tables, rows, command, given.name))
    for rule, table in tables.items():
        print(f"{rule}: {outcome(table)[0]} of {outcome(table)[1]} within {TOLERANCE:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
