"""Where does a run of the test suite spend the machine's CPU, by test module and by kind of
process? Runs pytest (the arguments after ``--``; none: the README's whole suite) while this
process reads every process's CPU time from /proc five times a second, and a pytest plugin (this
file, loaded with ``-p``) writes when each test starts and ends, on which pytest worker. Each
process is charged to the test its worker was running when it started; a process no worker
started is ``(outside the tests)`` (the machine's daemons, and the jobs a test's SLURM cluster
starts from its own daemons), pytest's own processes' time ``(pytest itself)``.

pytest's ``--durations`` (suite_durations.py) gives a test's wall time on its worker; this gives
the CPU time of everything the test started: Snakemake, its jobs, the library envs' processes and
their DataLoader workers. A suite that keeps N cores busy takes its CPU time divided by N.

    uv run python tools/reports/suite_processes.py --output profile [-- pytest arguments]

Writes to the output folder: modules.tsv (CPU seconds per test module, largest first), kinds.tsv
(per kind of process), summary.txt (wall time, CPU time seen, how busy the cores were, pytest's
exit code), processes.jsonl.gz (each process: its command, CPU time, test and kind) and
tests.jsonl (when each test ran, on which worker). Linux only. A
process that lives less than the sampling period (0.2 s) can be missed: its CPU time is small.
The tool's own sampling costs about 2 % of one core.
"""

from __future__ import annotations

import argparse
import bisect
import gzip
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

PERIOD_S = 0.2
PROCESSES = "processes.jsonl.gz"
# A process's command line is read again this many samples after the last read: an engine's
# wrapper replaces itself with the engine (exec), keeping its pid.
REREAD_EVERY = 5
TESTS_LOG_ENV = "AUGBENCH_SUITE_TESTS_LOG"
OUTSIDE, PYTEST = "(outside the tests)", "(pytest itself)"
# A library env's interpreter: .venvs/<library> of a checkout, venvs/<library> of an image.
LIBRARY_ENV = re.compile(r"/\.?venvs/[^/]+/bin/python")
# The kinds the tables count on their own: a library env's processes (a column of modules.tsv),
# and pytest's own processes.
LIBRARY_KIND = "library env process (engines, probes, DataLoader workers)"
PYTEST_KIND = "pytest (the tests it runs itself)"
COMPILERS = {"cc", "cc1", "cc1plus", "gcc", "g++", "as", "ld", "collect2"}


# -- the plugin: runs inside pytest (and each pytest-xdist worker) -----------------------------
def pytest_runtest_logstart(nodeid: str, location: object) -> None:
    _log_test(nodeid, "start")


def pytest_runtest_logfinish(nodeid: str, location: object) -> None:
    _log_test(nodeid, "finish")


def _log_test(nodeid: str, event: str) -> None:
    path = os.environ.get(TESTS_LOG_ENV)
    if path:
        record = {"pid": os.getpid(), "test": nodeid, "event": event, "time": time.time()}
        with open(path, "a") as log:
            log.write(json.dumps(record) + "\n")


# -- the sampler ------------------------------------------------------------------------------
def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def sample(processes: dict[tuple[int, int], dict], tick: int, clock_ticks: int) -> None:
    """One pass over /proc: each process's CPU seconds so far (its threads included, its children
    not), parent and command line, keyed by (pid, start time) so that a reused pid is another
    process."""
    own = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == own:
            continue
        stat = _read(f"/proc/{name}/stat")
        if stat is None:
            continue
        text = stat.decode(errors="replace")
        close = text.rindex(")")
        fields = text[close + 2 :].split()
        key = (int(name), int(fields[19]))
        record = processes.get(key)
        if record is None:
            record = processes[key] = {
                "pid": key[0], "ppid": int(fields[1]), "comm": text[text.index("(") + 1 : close],
                "first": time.time(), "cmd": "", "read_at": -REREAD_EVERY,
            }  # fmt: skip
        if tick - record["read_at"] >= REREAD_EVERY:
            cmd = _read(f"/proc/{name}/cmdline")
            if cmd:
                record["cmd"] = cmd.replace(b"\0", b" ").decode(errors="replace").strip()[:600]
            record["read_at"] = tick
        record["cpu_s"] = (int(fields[11]) + int(fields[12])) / clock_ticks


# -- charging and the tables ------------------------------------------------------------------
def test_spans(events: list[dict]) -> dict[int, list[tuple[float, float, str]]]:
    """Per pytest process, its tests' (start, end, test id) in time order."""
    spans: dict[int, list[tuple[float, float, str]]] = {}
    started: dict[int, dict] = {}
    for event in sorted(events, key=lambda e: e["time"]):
        if event["event"] == "start":
            started[event["pid"]] = event
        elif event["pid"] in started:
            begun = started.pop(event["pid"])
            spans.setdefault(event["pid"], []).append((begun["time"], event["time"], event["test"]))
    return spans


def kind(record: dict) -> str:
    """What a process was, from its command line (the last one read) and its name."""
    cmd, comm = record["cmd"], record["comm"]
    words = cmd.split()
    program = words[0] if words else ""
    if comm in COMPILERS:
        return "compiler (a library built from source)"
    if not cmd:
        return "kernel threads"
    if LIBRARY_ENV.search(program):
        return LIBRARY_KIND
    if ".snakemake/scripts/" in cmd:
        return "workflow script (tables, figures, answer)"
    if "forkserver" in cmd or "snakemake" in program:
        return "Snakemake"
    if comm == "uv" or program.endswith("/uv"):
        return "uv (env builds)"
    if "python" in program or "python" in comm:
        return "other Python"
    return f"other ({comm})"


def charge(
    processes: list[dict], spans: dict[int, list[tuple[float, float, str]]], pytest_pid: int
) -> list[dict]:
    """Each process with the test it is charged to: the one its nearest pytest ancestor was
    running when the process was first seen (``pytest_pid``: the pytest this tool started)."""
    parent = {p["pid"]: p["ppid"] for p in processes}
    starts = {pid: [s[0] for s in runs] for pid, runs in spans.items()}
    charged = []
    for process in processes:
        pid, test = process["pid"], OUTSIDE
        if pid in spans or pid == pytest_pid:
            test = PYTEST
        else:
            for _ in range(64):
                pid = parent.get(pid, 0)
                if pid in spans:
                    i = bisect.bisect_right(starts[pid], process["first"] + 0.5) - 1
                    test = spans[pid][max(i, 0)][2]
                    break
                if pid <= 1:
                    break
        charged.append({**process, "test": test, "kind": kind_of(process, test)})
    return charged


def kind_of(process: dict, test: str) -> str:
    return PYTEST_KIND if test == PYTEST else kind(process)


def tables(charged: list[dict]) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """(modules.tsv's rows, kinds.tsv's rows), each with its header and the largest first."""
    total = sum(p["cpu_s"] for p in charged) or 1.0
    modules: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    library: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    kind_counts: Counter[str] = Counter()
    for p in charged:
        module = p["test"].split("::")[0]
        modules[module] += p["cpu_s"]
        counts[module] += 1
        library[module] += p["kind"] == LIBRARY_KIND
        kinds[p["kind"]] += p["cpu_s"]
        kind_counts[p["kind"]] += 1
    module_rows = [("module", "cpu_s", "processes", "library_env_processes", "share")] + [
        (m, f"{s:.1f}", str(counts[m]), str(library[m]), f"{s / total:.3f}")
        for m, s in modules.most_common()
    ]
    kind_rows = [("kind", "cpu_s", "processes", "share")] + [
        (k, f"{s:.1f}", str(kind_counts[k]), f"{s / total:.3f}") for k, s in kinds.most_common()
    ]
    return module_rows, kind_rows


def tsv(rows: list[tuple[str, ...]]) -> str:
    return "".join("\t".join(row) + "\n" for row in rows)


def write_tables(out: Path, charged: list[dict]) -> None:
    module_rows, kind_rows = tables(charged)
    (out / "modules.tsv").write_text(tsv(module_rows))
    (out / "kinds.tsv").write_text(tsv(kind_rows))


def main() -> int:
    argv = sys.argv[1:]
    pytest_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    own_args = argv[: argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--output", type=Path, required=True, help="folder for the tables (made)")
    p.add_argument(
        "--tables-only", action="store_true",
        help=f"run nothing: write the tables again from the folder's {PROCESSES}",
    )  # fmt: skip
    args = p.parse_args(own_args)
    if args.tables_only:
        with gzip.open(args.output / PROCESSES, "rt") as fh:
            lines = fh.read().splitlines()
        charged = [json.loads(line) for line in lines if line]
        write_tables(args.output, [{**c, "kind": kind_of(c, c["test"])} for c in charged])
        return 0
    if not Path("/proc/self/stat").exists():
        print("suite_processes.py reads /proc: Linux only", file=sys.stderr)
        return 1
    out = args.output
    out.mkdir(parents=True, exist_ok=True)
    tests_log = out / "tests.jsonl"
    tests_log.write_text("")
    here = str(Path(__file__).resolve().parent)
    env = {
        **os.environ,
        TESTS_LOG_ENV: str(tests_log.resolve()),
        "PYTHONPATH": os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p),
    }
    command = [sys.executable, "-m", "pytest", "-p", Path(__file__).stem, *pytest_args]
    processes: dict[tuple[int, int], dict] = {}
    clock_ticks = os.sysconf("SC_CLK_TCK")
    # What ran before pytest counts from here on only (a daemon's time since it started is not
    # the suite's).
    sample(processes, 0, clock_ticks)
    before = {key: record["cpu_s"] for key, record in processes.items()}
    began = time.time()
    run = subprocess.Popen(command, env=env)
    tick = 1
    while run.poll() is None:
        sample(processes, tick, clock_ticks)
        tick += 1
        time.sleep(PERIOD_S)
    sample(processes, tick, clock_ticks)
    wall = time.time() - began
    for key, cpu_s in before.items():
        processes[key]["cpu_s"] -= cpu_s
    seen = list(processes.values())
    events = [json.loads(line) for line in tests_log.read_text().splitlines() if line]
    charged = charge(seen, test_spans(events), run.pid)
    write_tables(out, charged)
    with gzip.open(out / PROCESSES, "wt") as fh:
        for process in charged:
            fh.write(json.dumps({k: v for k, v in process.items() if k != "read_at"}) + "\n")
    cores = len(os.sched_getaffinity(0))
    cpu = sum(p["cpu_s"] for p in charged)
    summary = (
        f"pytest {' '.join(pytest_args) or '(the whole suite)'}: exit code {run.returncode}\n"
        f"wall time {wall:.0f} s on {cores} cores; CPU time seen {cpu:.0f} s in "
        f"{len(charged)} processes, {cpu / (wall * cores):.0%} of the cores' time\n"
    )
    (out / "summary.txt").write_text(summary)
    sys.stdout.write(summary)
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
