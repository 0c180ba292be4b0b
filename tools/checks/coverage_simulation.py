"""How often do the decision rule's intervals hold the truth? Coverage by simulation.

Simulates rows the way they are measured: each of ``n`` fresh processes of a library runs at its
own speed (the between-process term, which dominates), and each of its epochs adds a little
within-process noise; a process's value is the median of its epochs. Both terms are on the log
scale (lognormal rates), and the between-process term comes from one of these models:

- ``lognormal``: normal, sd 0.15 (about +-15 % between processes);
- ``heavy-tailed``: Student t with 3 degrees of freedom, scale 0.12 (a few far-off processes);
- ``slow-processes``: sd 0.05, and one process in four runs 1.6x slower (an allocator history
  that faults its pages in again on every call);
- ``unequal-spread``: the first library sd 0.08, the second 0.24 (the ratio's interval assumes
  a shift of one shape; this model breaks that assumption on purpose).

For n = 3..8 processes per library it reports, per model, with intervals built at the level asked
for (policy.INTERVAL_LEVEL) and calls decided from an achieved level of at least
policy.DECISION_LEVEL:

- ``median_level`` / ``median_coverage``: the exact level of augbench.decision.median_interval
  and how often the interval held the population median of a process's value;
- ``epochs_as_unit_level`` / ``epochs_as_unit_coverage``: the same order-statistic interval
  computed over every epoch as if each were independent (what an interval over one process's
  values, or over pooled values, does): its stated level and how often it held the median;
- ``bootstrap_coverage``: the two-stage bootstrap over processes at a nominal 95 %
  (augbench.intervals.process_median_interval), where ``--bootstrap-simulations`` asks for it;
- ``ratio_level`` / ``ratio_coverage``: augbench.decision.ratio_interval for a true ratio of 1.3;
- ``decided_at_1_3x``: how often verdict() decided that 1.3x margin (and named the right winner);
- ``aa_false_calls``: A/A, the same median twice (the first library's spread against the
  second's: the same library twice, except under ``unequal-spread``, where it is equal work in
  two libraries): how often verdict() called one "faster" or "slower" (an exact interval allows
  at most 1 - its achieved level);
- ``*_se``: the simulation's standard error of each rate.

    python tools/checks/coverage_simulation.py --simulations 10000 --bootstrap-simulations 400 \
        --out docs/results/<machine>/<date>-coverage-simulation

writes ``coverage.csv`` and a README.md (date, commit, command) into ``--out``, and prints the
table. Seeded: the same arguments give the same numbers.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import functools
import math
import random
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from augbench import decision  # noqa: E402
from augbench.intervals import process_median_interval  # noqa: E402

PROCESS_COUNTS = tuple(range(3, 9))
EPOCHS_PER_PROCESS = 2
EPOCH_SD = 0.03
TRUE_RATIO = 1.3
# Draws that fix a model's population median where it has no closed form.
MEDIAN_DRAWS = 200_000

Sampler = Callable[[random.Random], float]


def _student_t3(rng: random.Random) -> float:
    chi2 = sum(rng.gauss(0.0, 1.0) ** 2 for _ in range(3))
    return rng.gauss(0.0, 1.0) / math.sqrt(chi2 / 3.0)


def _slow(rng: random.Random) -> float:
    return rng.gauss(0.0, 0.05) + (math.log(1.6) if rng.random() < 0.25 else 0.0)


# model -> (between-process log term of library a, of library b)
MODELS: dict[str, tuple[Sampler, Sampler]] = {
    "lognormal": (lambda r: r.gauss(0.0, 0.15), lambda r: r.gauss(0.0, 0.15)),
    "heavy-tailed": (lambda r: 0.12 * _student_t3(r), lambda r: 0.12 * _student_t3(r)),
    "slow-processes": (_slow, _slow),
    "unequal-spread": (lambda r: r.gauss(0.0, 0.08), lambda r: r.gauss(0.0, 0.24)),
}
# Models whose process value's log is symmetric about 0 (the median of two epochs is their mean):
# the population median is exactly 1.
SYMMETRIC = frozenset({"lognormal", "heavy-tailed", "unequal-spread"})
COLUMNS = (
    "model",
    "processes",
    "epochs_per_process",
    "simulations",
    "level_asked",
    "median_level",
    "median_coverage",
    "median_coverage_se",
    "epochs_as_unit_level",
    "epochs_as_unit_coverage",
    "bootstrap_simulations",
    "bootstrap_level",
    "bootstrap_coverage",
    "bootstrap_coverage_se",
    "ratio_level",
    "ratio_coverage",
    "ratio_coverage_se",
    "decided_at_1_3x",
    "aa_false_calls",
    "aa_false_calls_se",
)


def process_epochs(between: Sampler, rng: random.Random, scale: float = 1.0) -> list[float]:
    """One process's epoch rates: its own speed, then each epoch's noise (log scale)."""
    own = between(rng)
    return [scale * math.exp(own + rng.gauss(0.0, EPOCH_SD)) for _ in range(EPOCHS_PER_PROCESS)]


@functools.cache
def population_median(model: str, seed: int) -> float:
    """The median of one process's value (the median of its epochs) of the model's first
    library: 1 where its log terms are symmetric about 0, else from MEDIAN_DRAWS processes."""
    if model in SYMMETRIC:
        return 1.0
    rng, between = random.Random(f"median-{seed}-{model}"), MODELS[model][0]
    return statistics.median(
        statistics.median(process_epochs(between, rng)) for _ in range(MEDIAN_DRAWS)
    )


def _rate(hits: int, total: int) -> tuple[float, float]:
    if not total:
        return math.nan, math.nan
    p = hits / total
    return p, math.sqrt(p * (1.0 - p) / total)


def simulate(
    model: str, n: int, simulations: int, bootstrap_simulations: int, seed: int, level: float
) -> dict[str, object]:
    """One line of the table: ``model`` with ``n`` processes per library."""
    between_a, between_b = MODELS[model]
    truth = population_median(model, seed)
    rng = random.Random(f"{seed}-{model}-{n}")
    median_hits = epoch_hits = ratio_hits = decided = false_calls = boot_hits = 0
    for i in range(simulations):
        a = [process_epochs(between_a, rng) for _ in range(n)]
        b = [process_epochs(between_b, rng, 1.0 / TRUE_RATIO) for _ in range(n)]
        a_values = [statistics.median(p) for p in a]
        m = decision.median_interval(a_values, level)
        median_hits += m.low <= truth <= m.high
        pooled = decision.median_interval([v for p in a for v in p], level)
        epoch_hits += pooled.low <= truth <= pooled.high
        r = decision.ratio_interval(a_values, [statistics.median(p) for p in b], level)
        ratio_hits += r.low <= TRUE_RATIO <= r.high
        decided += decision.verdict(r) == decision.FASTER
        # A/A: the same median, the second library's spread (the same work in two libraries)
        twin = [statistics.median(process_epochs(between_b, rng)) for _ in range(n)]
        call = decision.verdict(decision.ratio_interval(a_values, twin, level))
        false_calls += call in (decision.FASTER, decision.SLOWER)
        if i < bootstrap_simulations:
            boot = process_median_interval(a, resamples=1000)
            boot_hits += boot.low <= truth <= boot.high  # type: ignore[operator]
    median_coverage, median_se = _rate(median_hits, simulations)
    ratio_coverage, ratio_se = _rate(ratio_hits, simulations)
    aa, aa_se = _rate(false_calls, simulations)
    boot_count = min(bootstrap_simulations, simulations)
    boot, boot_se = _rate(boot_hits, boot_count)
    return {
        "model": model,
        "processes": n,
        "epochs_per_process": EPOCHS_PER_PROCESS,
        "simulations": simulations,
        "level_asked": level,
        "median_level": decision.median_rank(n, level)[1],
        "median_coverage": median_coverage,
        "median_coverage_se": median_se,
        "epochs_as_unit_level": decision.median_rank(n * EPOCHS_PER_PROCESS, level)[1],
        "epochs_as_unit_coverage": epoch_hits / simulations,
        "bootstrap_simulations": boot_count,
        "bootstrap_level": 0.95 if boot_count else math.nan,
        "bootstrap_coverage": boot,
        "bootstrap_coverage_se": boot_se,
        "ratio_level": decision.ratio_rank(n, n, level)[1],
        "ratio_coverage": ratio_coverage,
        "ratio_coverage_se": ratio_se,
        "decided_at_1_3x": decided / simulations,
        "aa_false_calls": aa,
        "aa_false_calls_se": aa_se,
    }


def table(
    simulations: int,
    bootstrap_simulations: int = 0,
    seed: int = 0,
    level: float = decision.INTERVAL_LEVEL,
    models: tuple[str, ...] = tuple(MODELS),
    counts: tuple[int, ...] = PROCESS_COUNTS,
) -> list[dict[str, object]]:
    return [
        simulate(model, n, simulations, bootstrap_simulations, seed, level)
        for model in models
        for n in counts
    ]


def _cell(value: object) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4f}"
    return str(value)


def write(rows: list[dict[str, object]], out: Path, command: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "coverage.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(COLUMNS))
        writer.writeheader()
        writer.writerows({k: _cell(v) for k, v in row.items()} for row in rows)
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--", "augbench/decision.py", __file__],
        capture_output=True,
        text=True,
    ).stdout.strip()
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    (out / "README.md").write_text(
        "# Coverage of the decision rule's intervals, by simulation\n\n"
        f"- Date: {now}\n"
        f"- Commit: {commit or 'unknown'}"
        f"{' (decision.py or this tool modified)' if dirty else ''}\n"
        "- Machine: any (a simulation: no timing; the numbers depend only on the arguments)\n"
        "- Command:\n\n"
        f"```bash\n{command}\n```\n\n"
        "Simulated rows (tools/checks/coverage_simulation.py: the models, the columns) of "
        f"{EPOCHS_PER_PROCESS} epochs per process, {', '.join(map(str, PROCESS_COUNTS))} "
        f"processes per library, each model {rows[0]['simulations']} times: "
        "[coverage.csv](coverage.csv).\n\n" + "\n".join(findings(rows)) + "\n"
    )


def _shortfall(rows: list[dict[str, object]], stat: str) -> tuple[float, dict[str, object]]:
    """The largest shortfall of a coverage below its level, in standard errors, and its line."""
    worst = max(
        rows,
        key=lambda r: (
            (float(r[f"{stat}_level"]) - float(r[f"{stat}_coverage"]))
            / max(float(r[f"{stat}_coverage_se"]), 1e-12)
        ),
    )
    gap = (float(worst[f"{stat}_level"]) - float(worst[f"{stat}_coverage"])) / max(
        float(worst[f"{stat}_coverage_se"]), 1e-12
    )
    return gap, worst


def findings(rows: list[dict[str, object]]) -> list[str]:
    """What the table says, in sentences (every number from the table)."""
    shift = [r for r in rows if r["model"] != "unequal-spread"]
    unequal = [r for r in rows if r["model"] == "unequal-spread"]
    lines = []
    gap, worst = _shortfall(rows, "median")
    lines.append(
        "- The median's interval over processes: coverage against its exact level, the largest "
        f"shortfall {gap:.1f} standard errors ({worst['model']}, {worst['processes']} processes: "
        f"{_cell(worst['median_coverage'])} at {_cell(worst['median_level'])})."
    )
    gap, worst = _shortfall(shift, "ratio")
    lines.append(
        "- The ratio's interval, where one library is the other's shape shifted: the largest "
        f"shortfall {gap:.1f} standard errors ({worst['model']}, {worst['processes']} "
        f"processes: {_cell(worst['ratio_coverage'])} at {_cell(worst['ratio_level'])}); A/A "
        "false calls at most "
        f"{_cell(max(float(r['aa_false_calls']) for r in shift))} (the level allows "
        f"{_cell(max(1 - float(r['ratio_level']) for r in shift))})."
    )
    if unequal:
        low = min(unequal, key=lambda r: float(r["ratio_coverage"]))
        high = max(unequal, key=lambda r: float(r["aa_false_calls"]))
        lines.append(
            "- With unequal spread (sd 0.08 against 0.24) the ratio's interval covers less: "
            f"{_cell(low['ratio_coverage'])} at {_cell(low['ratio_level'])} "
            f"({low['processes']} processes), and A/A false calls reach "
            f"{_cell(high['aa_false_calls'])} ({high['processes']} processes)."
        )
    epochs = min(rows, key=lambda r: float(r["epochs_as_unit_coverage"]))
    lines.append(
        "- Epochs taken as the unit: as low as "
        f"{_cell(epochs['epochs_as_unit_coverage'])} at a stated "
        f"{_cell(epochs['epochs_as_unit_level'])} ({epochs['model']}, {epochs['processes']} "
        "processes)."
    )
    booted = [r for r in rows if int(str(r["bootstrap_simulations"])) > 0]
    if booted:
        for n in (3, 4):
            at = [float(r["bootstrap_coverage"]) for r in booted if r["processes"] == n]
            if at:
                lines.append(
                    f"- The two-stage bootstrap at a nominal 95 %, {n} processes: "
                    f"{_cell(min(at))}-{_cell(max(at))} over the models "
                    f"({booted[0]['bootstrap_simulations']} simulations each)."
                )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--simulations", type=int, default=10000)
    parser.add_argument(
        "--bootstrap-simulations",
        type=int,
        default=0,
        help="also the two-stage bootstrap's coverage, on this many of the simulations (slow)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--level", type=float, default=decision.INTERVAL_LEVEL)
    parser.add_argument("--out", type=Path, help="folder for coverage.csv and README.md")
    args = parser.parse_args(argv)
    if args.simulations < 1:
        parser.error(f"--simulations must be at least 1, got {args.simulations}")
    if not 0.0 < args.level < 1.0:
        parser.error(f"--level must be between 0 and 1, got {args.level}")
    rows = table(args.simulations, args.bootstrap_simulations, args.seed, args.level)
    shown = ("model", "processes", "median_level", "median_coverage", "epochs_as_unit_level",
             "epochs_as_unit_coverage", "bootstrap_coverage", "ratio_level", "ratio_coverage",
             "decided_at_1_3x", "aa_false_calls")  # fmt: skip
    print("\t".join(shown))
    for row in rows:
        print("\t".join(_cell(row[c]) for c in shown))
    if args.out:
        command = "python tools/checks/coverage_simulation.py " + " ".join(
            argv if argv is not None else sys.argv[1:]
        )
        write(rows, args.out, command)
        print(f"wrote {args.out / 'coverage.csv'} and {args.out / 'README.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
