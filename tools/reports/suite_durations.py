"""Where did a run of the test suite spend its time, by test module? Reads pytest's output of a
run made with ``--durations=0`` (every set-up, call and tear-down, docs/results/amd-epyc-2c/
2026-12-01-test-suite/) and prints, as a TSV, per module its summed seconds, its longest
entry and its share of the whole, largest first. The sum over modules is the workers' time:
with pytest-xdist on N cores, a run can take no less than it divided by N.

    PYTEST_ADDOPTS=--durations=0 .uv/bin/uv run --locked pytest > pytest.log
    uv run python tools/reports/suite_durations.py pytest.log [--output modules.tsv]

pytest leaves out entries under 5 ms: they count as nothing here.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

ENTRY = re.compile(r"^(?P<seconds>\d+(?:\.\d+)?)s (?:setup|call|teardown)\s+(?P<test>\S+)")
HEADER = ("module", "seconds", "longest_s", "entries", "share")


def by_module(lines: list[str]) -> dict[str, list[float]]:
    """Each test module's entries' seconds, from pytest's ``--durations`` lines."""
    found: dict[str, list[float]] = defaultdict(list)
    for line in lines:
        match = ENTRY.match(line)
        if match:
            found[match["test"].split("::")[0]].append(float(match["seconds"]))
    return dict(found)


def table(found: dict[str, list[float]]) -> list[tuple[str, ...]]:
    """The rows of :data:`HEADER`, the largest module first, and a last row of the total."""
    total = sum(sum(seconds) for seconds in found.values())
    rows = [
        (module, f"{sum(s):.1f}", f"{max(s):.1f}", str(len(s)), f"{sum(s) / total:.3f}")
        for module, s in sorted(found.items(), key=lambda kv: (-sum(kv[1]), kv[0]))
    ]
    entries = sum(len(s) for s in found.values())
    longest = max(max(s) for s in found.values())
    return [*rows, ("total", f"{total:.1f}", f"{longest:.1f}", str(entries), "1.000")]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("log", type=Path, help="pytest's output of a run with --durations=0")
    p.add_argument("--output", type=Path, help="write the TSV here instead of printing it")
    args = p.parse_args()
    found = by_module(args.log.read_text(errors="replace").splitlines())
    if not found:
        print(f"{args.log}: no --durations lines (run pytest with --durations=0)", file=sys.stderr)
        return 1
    text = "".join("\t".join(row) + "\n" for row in (HEADER, *table(found)))
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
