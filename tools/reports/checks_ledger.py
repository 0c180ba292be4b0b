"""The ledger of the project's checks: every committed run of each, pooled.

Writes docs/results/checks.md (each check's rule, its models, every run with its date, commit,
machine, folder and outcome, and the pooled count) and docs/results/checks.csv (one line per
run) from the checks, models and runs declared in tools/reports/checks_registry.py. A page that
quotes a check's figure links it as ``[X of Y](docs/results/checks.md#<id>)``
with the pooled figure of that id as the text (tests/test_checks_ledger.py).

    uv run python tools/reports/checks_ledger.py            # rewrite both files
    uv run python tools/reports/checks_ledger.py --check    # exit 1 if they are not current

Each outcome is computed from the run's committed file with the rule of the check's own tool:

- training-check: a training row passes where ``within_tolerance`` is true
  (augbench.analysis.training: measured / predicted throughput within policy's
  TRAINING_PREDICTION_TOLERANCE and data wait within TRAINING_WAIT_TOLERANCE); a table that holds
  pooled and per-run predictions counts its pooled rows, from the supply's steady rate;
- pipeline-rows: a row passes where its ratio, or its ratio at equal faults, is within the
  tolerance (tools/checks/compose_vs_rows.py, the ``within`` columns it writes);
- allocator-effect: the pairs whose effect lies beyond the null spread (``effect``) out of the
  pairs with a ratio;
- cost-validation: a rule with at least MIN_JOBS jobs passes on time and memory targets
  (tools/checks/cost_validation.py: TIME_TARGET, MEMORY_TARGET);
- training-memory: a training job passes where its mem_mb / max_pss is within MEMORY_TARGET.

A run whose file a later state of the same run extends (more rounds added with
``--keep-existing``) is listed once, as the later state; the earlier file is named, not counted.
A model that changed after a run is counted on the runs made after the change only: each check
lists its models and every run's model, and pools each model's runs apart as well as all runs.
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from augbench.analysis.cells import is_true  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checks_registry import (  # noqa: E402
    CHECKS,
    NOT_RUNS,
    RUNS,
    Run,
    cost_validation,
    workers_to_feed_check,
)

RESULTS = ROOT / "docs" / "results"
LEDGER_MD = RESULTS / "checks.md"
LEDGER_CSV = RESULTS / "checks.csv"


def run_path(run: Run, name: str | None = None) -> Path:
    return RESULTS / run.machine / run.folder / (name or run.file)


def training_outcome(path: Path) -> tuple[int, int]:
    """Rows within both targets and rows with a prediction, as the check tool counts them."""
    if path.suffix == ".md":
        return _summary_training_outcome(path)
    table = pd.read_csv(path)
    table = table[table["predicted_img_per_s"].notna()]
    if "pooling" in table.columns:
        table = table[table["pooling"].astype(str).str.startswith("pooled")]
    if "prediction_input" in table.columns:
        table = table[table["prediction_input"] == "steady rate"]
    return int(table["within_tolerance"].map(is_true).sum()), len(table)


def _summary_training_outcome(path: Path) -> tuple[int, int]:
    """A run whose training table is only in its summary (the first node run): the rows of its
    Training section with a ratio; a ratio the summary marks "(differs)" is outside a target."""
    text = path.read_text()
    section = text.split("## Training", 1)[1].split("\n## ", 1)[0]
    header, *rows = [line for line in section.splitlines() if line.startswith("| ")]
    column = [c.strip() for c in header.strip("|").split("|")].index("measured / predicted")
    ratios = [
        cells[column]
        for cells in ([c.strip() for c in row.strip("|").split("|")] for row in rows)
        if re.match(r"\d", cells[column])
    ]
    return sum("differs" not in r for r in ratios), len(ratios)


def pipeline_outcome(path: Path) -> tuple[int, int]:
    rows = list(csv.DictReader(path.open(), delimiter="\t"))
    passed = sum(r["within"] == "yes" or r.get("within_at_equal_faults") == "yes" for r in rows)
    return passed, len(rows)


def allocator_outcome(path: Path) -> tuple[int, int]:
    table = pd.read_csv(path)
    table = table[table["effect"].notna()]
    return int((table["effect"] != "none").sum()), len(table)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def cost_outcome(path: Path) -> tuple[int, int]:
    """Rules with at least MIN_JOBS jobs within both targets, of those rules: the tool's own
    verdict (``within_targets``, from the unrounded ratios), else the targets applied to the
    rounded ratios the file shows."""
    passed = total = 0
    for row in csv.DictReader(path.open(), delimiter="\t"):
        if int(row["jobs"]) < cost_validation.MIN_JOBS:
            continue
        if row.get("within_targets") in ("True", "False"):
            passed += row["within_targets"] == "True"
            total += 1
            continue
        within = cost_validation._within(
            float(row["measured_over_predicted"]), cost_validation.TIME_TARGET
        )
        for key in ("mem_over_measured", "rss_over_measured"):
            for end in ("min", "max"):
                value = _number(row[f"{key}_{end}"])
                if value is not None:
                    within = within and cost_validation._within(
                        value, cost_validation.MEMORY_TARGET
                    )
        passed += within
        total += 1
    return passed, total


def memory_outcome(path: Path) -> tuple[int, int]:
    rows = list(csv.DictReader(path.open(), delimiter="\t"))
    ratios = [float(r["mem_over_pss"]) for r in rows]
    passed = sum(cost_validation._within(r, cost_validation.MEMORY_TARGET) for r in ratios)
    return passed, len(ratios)


def calibration_outcome(path: Path) -> tuple[int, int]:
    pairs = pd.read_csv(path)
    return int((~pairs["false_call"].astype(str).eq("True")).sum()), len(pairs)


def repeat_outcome(path: Path) -> tuple[int, int]:
    rows = pd.read_csv(path)
    rows = rows[rows["kind"] == "row"]
    return int(rows["repeats"].astype(str).eq("True").sum()), len(rows)


def feed_outcome(path: Path) -> tuple[int, int]:
    return workers_to_feed_check.outcome(pd.read_csv(path))


OUTCOME = {
    "training-check": training_outcome,
    "pipeline-rows": pipeline_outcome,
    "allocator-effect": allocator_outcome,
    "cost-validation": cost_outcome,
    "training-memory": memory_outcome,
    "workers-to-feed": feed_outcome,
    "default-runs": repeat_outcome,
    "calibration": calibration_outcome,
}


def figure(passed: int, total: int) -> str:
    return f"{passed} of {total}"


def outcomes() -> dict[Run, tuple[int, int]]:
    return {run: OUTCOME[run.check](run_path(run)) for run in RUNS}


def figures(results: dict[Run, tuple[int, int]]) -> dict[str, str]:
    """Every anchor of the ledger and its pooled figure: a check, a model, a series."""
    out: dict[str, str] = {}

    def pool(runs: list[Run]) -> str:
        return figure(sum(results[r][0] for r in runs), sum(results[r][1] for r in runs))

    for check in CHECKS:
        runs = [r for r in RUNS if r.check == check.id]
        out[check.id] = pool(runs) if runs else "0 runs"
        for model in check.models:
            out[f"{check.id}-model-{model.key}"] = pool([r for r in runs if r.model == model.key])
        for key, _ in check.series:
            out[f"{check.id}-{key}"] = pool([r for r in runs if r.series == key])
    return out


def render_csv(results: dict[Run, tuple[int, int]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        ["check", "date", "commit", "machine", "folder", "file", "model", "series", "what",
         "passed", "total", "outcome", "extends"]
    )  # fmt: skip
    for run in RUNS:
        passed, total = results[run]
        writer.writerow(
            [run.check, run.date, run.commit, run.machine, f"{run.machine}/{run.folder}",
             run.file, run.model, run.series, run.what, passed, total, figure(passed, total),
             ";".join(run.extends)]
        )  # fmt: skip
    return buffer.getvalue()


def render_md(results: dict[Run, tuple[int, int]]) -> str:
    pooled = figures(results)
    lines = [
        "# Checks: every committed run, pooled",
        "",
        "Generated by `tools/reports/checks_ledger.py` from the committed run folders "
        "(`uv run python tools/reports/checks_ledger.py`); the same lines as "
        "[checks.csv](checks.csv). Each check's outcome is computed from its run's file by "
        "the rule of its own tool. A page quoting a figure links the anchor below whose pooled "
        "figure it quotes.",
        "",
        "| check | runs | pooled over all runs | current model |",
        "|---|---|---|---|",
    ]
    for check in CHECKS:
        runs = [r for r in RUNS if r.check == check.id]
        current = (
            f"[{pooled[f'{check.id}-model-{check.models[-1].key}']}]"
            f"(#{check.id}-model-{check.models[-1].key})"
            if check.models
            else ""
        )
        lines.append(
            f"| [{check.title}](#{check.id}) | {len(runs)} | {pooled[check.id]} | {current} |"
        )
    for check in CHECKS:
        runs = [r for r in RUNS if r.check == check.id]
        lines += ["", f'<a id="{check.id}"></a>', "", f"## {check.title}", ""]
        lines += [f"Id `{check.id}`. Rule: {check.rule}", ""]
        if not runs:
            lines += ["No run of this check is committed: **0 runs**, nothing pooled."]
            continue
        lines += [f"Pooled over all {len(runs)} runs: **{pooled[check.id]}**.", ""]
        if check.models:
            lines += ["| model | changed in | what | runs | pooled |", "|---|---|---|---|---|"]
            for model in check.models:
                anchor = f"{check.id}-model-{model.key}"
                count = sum(r.model == model.key for r in runs)
                lines.append(
                    f'| <a id="{anchor}"></a>`{anchor}` | {model.commit or "(first)"} | '
                    f"{model.description} | {count} | {pooled[anchor]} |"
                )
            lines += [
                "",
                "A model's runs are those made with it; runs made before a change are not "
                "counted for the changed model.",
                "",
            ]
        if check.series:
            lines += ["| series | what | runs | pooled |", "|---|---|---|---|"]
            for key, description in check.series:
                anchor = f"{check.id}-{key}"
                count = sum(r.series == key for r in runs)
                lines.append(
                    f'| <a id="{anchor}"></a>`{anchor}` | {description} | {count} | '
                    f"{pooled[anchor]} |"
                )
            lines.append("")
        lines += [
            "| date | machine | run | file | commit | model | what | outcome |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for run in runs:
            link = (
                f"[{run.folder}]({run.machine}/{run.folder}/README.md)"
                if run.folder  # a machine's own table (calibration.csv) sits beside its runs
                else f"[{run.machine}]({run.machine}/{Path(run.file).stem.split('_')[0]}.md)"
            )
            lines.append(
                f"| {run.date} | {run.machine} | {link} | `{run.file}` | {run.commit} | "
                f"{run.model} | {run.what} | {figure(*results[run])} |"
            )
        extended = [(run, name) for run in runs for name in run.extends]
        if extended:
            lines += ["", "Not counted: earlier states of a run above, extended by it (the same "
                      "runs, with more rounds added):", ""]  # fmt: skip
            for run, name in extended:
                lines.append(
                    f"- `{run.machine}/{run.folder}/{name}` "
                    f"({figure(*OUTCOME[run.check](run_path(run, name)))}), "
                    f"extended by `{run.file}` ({figure(*results[run])})"
                )
    not_runs = [f"- `{path}`: {why}" for path, why in NOT_RUNS.items()]
    lines += ["", "## Files of a check's kind that are not runs of it", "", *not_runs, ""]
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--check", action="store_true", help="exit 1 if the files are not current")
    args = p.parse_args()
    results = outcomes()
    wanted = {LEDGER_MD: render_md(results), LEDGER_CSV: render_csv(results)}
    if args.check:
        stale = [str(path.relative_to(ROOT)) for path, text in wanted.items()
                 if not path.exists() or path.read_text() != text]  # fmt: skip
        if stale:
            print(f"not current: {', '.join(stale)} (run tools/reports/checks_ledger.py)")
            return 1
        return 0
    for path, text in wanted.items():
        path.write_text(text)
    for anchor, value in figures(results).items():
        print(f"{anchor}\t{value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
