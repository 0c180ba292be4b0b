"""Run a pytest selection several times beside busy-loop processes, to check that the tests that
time things still pass when other work competes for the cores (as on a shared CI machine).

    .venv/bin/python tests/helpers/beside_hog.py --hogs 2 --repeat 3 -- \\
        tests/test_pipelines.py::test_the_harness_check_can_fail

Each hog is ``python -c 'while True: pass'`` under ``timeout``, so it dies even if this script
is killed; the script also ends its own hogs, by their ids, when it is done. ``--hogs 0`` runs
the same selection on its own. Prints one line per run (pass or fail counts) and a last line
with the totals; exits 1 if any run failed.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HOG = "while True: pass"


def start_hogs(count: int, limit_s: int) -> list[subprocess.Popen]:
    return [
        subprocess.Popen(["timeout", str(limit_s), sys.executable, "-c", HOG]) for _ in range(count)
    ]


def stop_hogs(hogs: list[subprocess.Popen]) -> None:
    for hog in hogs:
        hog.terminate()  # timeout passes the signal on to its python
    for hog in hogs:
        hog.wait()


def counts(output: str) -> dict[str, int]:
    """The passed/failed/skipped/error counts of pytest's summary line."""
    found = dict.fromkeys(("passed", "failed", "skipped", "error"), 0)
    for number, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)", output):
        found[word.rstrip("s") if word.startswith("error") else word] += int(number)
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--hogs", type=int, default=2, help="busy-loop processes beside the tests")
    p.add_argument("--repeat", type=int, default=3, help="runs of the selection")
    p.add_argument("--limit-s", type=int, default=1800, help="the hogs' lifetime at most")
    p.add_argument("selection", nargs="+", help="pytest arguments (test ids, -k ...)")
    args = p.parse_args(argv)
    pytest = [sys.executable, "-m", "pytest", "-n0", "-q", "-p", "no:cacheprovider"]
    total = dict.fromkeys(("passed", "failed", "skipped", "error"), 0)
    hogs = start_hogs(args.hogs, args.limit_s)
    try:
        time.sleep(0.5 if hogs else 0.0)  # the hogs running before the first test starts
        for run in range(1, args.repeat + 1):
            started = time.monotonic()
            proc = subprocess.run(
                [*pytest, *args.selection], cwd=REPO, capture_output=True, text=True, check=False
            )
            found = counts(proc.stdout.splitlines()[-1] if proc.stdout else "")
            for key, value in found.items():
                total[key] += value
            took = time.monotonic() - started
            print(f"run {run} beside {args.hogs} hogs: {found} in {took:.1f} s", flush=True)
            if found["failed"] or found["error"] or proc.returncode not in (0, 5):
                print(proc.stdout[-4000:], flush=True)
    finally:
        stop_hogs(hogs)
    print(f"total beside {args.hogs} hogs, {args.repeat} runs: {total}")
    return 1 if total["failed"] or total["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
