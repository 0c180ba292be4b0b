"""How quiet the machine was during a job (augbench/measuring/quietness.py): reading /proc, the
arithmetic of other processes' load, the verdict, and its columns in the tidy table, speedups and
summary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from augbench.analysis import speedups, summary, tidy
from augbench.measuring import quietness
from augbench.policy import (
    QUIETNESS_MIN_WALL_SECONDS,
    UNDER_LOAD_CLOCK_DROP,
    UNDER_LOAD_OTHER_CORES_FRACTION,
    UNDER_LOAD_STEAL_FRACTION,
)

LINUX = pytest.mark.skipif(not Path("/proc/stat").exists(), reason="needs Linux /proc")

STAT = """cpu  300 10 100 5000 20 5 15 50 7 0
cpu0 100 10 50 2500 10 0 5 20 7 0
cpu1 200 0 50 2500 10 5 10 30 0 0
intr 1 2 3
ctxt 99
"""


def test_proc_stat_counts_busy_steal_and_total_jiffies_of_the_counted_cpus() -> None:
    machine = quietness.parse_proc_stat(STAT)
    # busy = user + nice + system + irq + softirq; guest (inside user) is not added again.
    assert machine == quietness.CpuJiffies(busy=430, steal=50, total=5500)
    assert quietness.parse_proc_stat(STAT, (1,)) == quietness.CpuJiffies(265, 30, 2805)
    # A counted CPU the file does not list: the whole machine rather than a partial sum.
    assert quietness.parse_proc_stat(STAT, (0, 7)) == machine
    assert quietness.parse_proc_stat("intr 1 2\n") is None


def test_loadavg_cpuinfo_and_pid_stat_parse() -> None:
    assert quietness.parse_loadavg("0.84 0.91 0.66 2/93 14031\n") == [0.84, 0.91, 0.66]
    assert quietness.parse_loadavg("") is None
    cpuinfo = "processor\t: 0\ncpu MHz\t\t: 2000.5\n\nprocessor\t: 1\ncpu MHz\t\t: 3000.0\n\n"
    assert quietness.parse_cpuinfo_mhz(cpuinfo) == [2000.5, 3000.0]
    assert quietness.parse_cpuinfo_mhz(cpuinfo, (1,)) == [3000.0]
    # A command name with spaces and parentheses: fields are counted from its last ')'.
    fields = ["S", "42", *["0"] * 9, "7", "3", "2", "1", *["0"] * 30]
    assert quietness.parse_pid_stat("123 (py (worker) 1) " + " ".join(fields)) == (42, 13)


@LINUX
def test_real_proc_files_read_here() -> None:
    cpus = quietness.counted_cpus()
    jiffies = quietness.parse_proc_stat(Path("/proc/stat").read_text(), cpus)
    assert jiffies is not None and jiffies.total > jiffies.busy > 0 and jiffies.steal >= 0
    loadavg = quietness.parse_loadavg(Path("/proc/loadavg").read_text())
    assert loadavg is not None and len(loadavg) == 3 and min(loadavg) >= 0
    mine = quietness.parse_pid_stat(Path(f"/proc/{os.getpid()}/stat").read_text())
    assert mine is not None and mine[0] == os.getppid()
    clock = quietness.cpu_mhz(cpus)
    if clock is not None:  # a machine may expose no clock at all
        assert 0 < clock["min"] <= clock["median"] <= clock["max"]


@LINUX
def test_own_cpu_counts_live_children_then_reaped_ones() -> None:
    # Other live descendants of this test process (an earlier test's server, under a pytest
    # worker) count too: the child's share is what the reading gains over theirs.
    others = quietness.descendants_cpu_seconds()
    before = quietness.own_cpu_seconds()
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        # Until the child has used 0.2 s of CPU: on a loaded machine it gets only a share of a
        # core, so a fixed wait would measure the other tenants. A count that never sees the
        # live child still fails, at the deadline.
        deadline = time.monotonic() + 30
        live = 0.0
        while live <= 0.2 and time.monotonic() < deadline:
            time.sleep(0.1)
            live = quietness.descendants_cpu_seconds() - others
        assert live > 0.2  # not reaped yet: only /proc knows its time
    finally:
        child.kill()
        child.wait()
    # Reaped: /proc no longer lists it (the others may have run a little meanwhile) ...
    assert quietness.descendants_cpu_seconds() - others < 0.1
    assert quietness.own_cpu_seconds() - before >= live  # ... and getrusage's children hold it


def _reading(t: float, busy: int, steal: int, total: int, own: float) -> quietness.Reading:
    return quietness.Reading(
        monotonic=t,
        epoch=t,
        jiffies=quietness.CpuJiffies(busy, steal, total),
        own_cpu_seconds=own,
        loadavg=[0.1, 0.1, 0.1],
        cpu_mhz={"min": 2000.0, "median": 2000.0, "max": 2000.0, "source": "test"},
    )


def test_a_job_whose_own_cpu_is_the_machines_busy_time_reads_no_other_load() -> None:
    # 10 s on 2 CPUs (2000 jiffies at 100 Hz): the machine was busy 8 s, all of it the job's.
    span = quietness.between(_reading(0, 1000, 0, 10000, 1.0), _reading(10, 1800, 0, 12000, 9.0))
    assert span["other_busy_seconds"] == pytest.approx(0.0)
    assert span["other_load_cores"] == pytest.approx(0.0)
    assert span["steal_fraction"] == 0.0


def test_other_processes_busy_time_reads_as_cores_and_steal_as_a_share() -> None:
    # The machine busy 18 s in 10 s, the job 8 s of it: others used one core on average.
    span = quietness.between(_reading(0, 0, 0, 0, 0.0), _reading(10, 1800, 100, 2000, 8.0))
    assert span["other_load_cores"] == pytest.approx(1.0)
    assert span["steal_seconds"] == pytest.approx(1.0)
    assert span["steal_fraction"] == pytest.approx(0.05)


def test_no_proc_gives_no_reading() -> None:
    empty = quietness.Reading(0, 0, None, None, None, None)
    span = quietness.between(empty, quietness.Reading(5, 5, None, None, None, None))
    assert span["other_load_cores"] is None and span["steal_fraction"] is None
    assert quietness.verdict({"wall_seconds": 5, "other_load_cores": None}) == (None, "")


def _block(**changes: float | None) -> dict:
    block = {
        "cpus": 2,
        "wall_seconds": 10.0,
        "other_load_cores": 0.0,
        "steal_fraction": 0.0,
        "cpu_mhz_max_change": 0.0,
    }
    return {**block, **changes}


def test_verdict_names_each_threshold_crossed() -> None:
    limit = UNDER_LOAD_OTHER_CORES_FRACTION * 2
    assert quietness.verdict(_block()) == (False, "")
    assert quietness.verdict(_block(other_load_cores=limit * 0.9)) == (False, "")
    loaded, why = quietness.verdict(_block(other_load_cores=1.0))
    assert loaded and "other processes used 1.00 cores" in why
    loaded, why = quietness.verdict(_block(steal_fraction=UNDER_LOAD_STEAL_FRACTION + 0.01))
    assert loaded and why.startswith("steal")
    loaded, why = quietness.verdict(_block(cpu_mhz_max_change=-(UNDER_LOAD_CLOCK_DROP + 0.05)))
    assert loaded and "clock" in why
    # No verdict without a block, or from a span too short for the jiffies' resolution.
    assert quietness.verdict(None) == (None, "")
    short = _block(wall_seconds=QUIETNESS_MIN_WALL_SECONDS / 2, other_load_cores=1.0)
    assert quietness.verdict(short) == (None, "")


def test_only_an_engine_launched_with_python_m_samples_its_start() -> None:
    assert quietness.launched_as_engine(["python", "-m", "augbench.measuring.engines.micro", "--x"])
    assert quietness.launched_as_engine(
        ["py", "-X", "dev", "-m", "augbench.measuring.engines.dali"]
    )
    assert not quietness.launched_as_engine(["python", "-m", "pytest"])
    assert not quietness.launched_as_engine(
        ["python", "augbench/measuring/engines/micro_worker.py"]
    )
    assert not quietness.launched_as_engine(
        ["python", "-c", "from multiprocessing.spawn import spawn_main", "--multiprocessing-fork"]
    )


@LINUX
def test_the_engine_start_goes_to_the_first_job_only(monkeypatch: pytest.MonkeyPatch) -> None:
    engine_start = quietness.start(0.0)
    monkeypatch.setattr(quietness, "_engine_start", engine_start)
    assert quietness.job_start() is engine_start
    later = quietness.job_start()
    assert later is not engine_start and later.pre_start is None  # not an engine process here
    assert quietness.claim_engine_start() is None


@LINUX
def test_finish_records_both_ends_and_the_span() -> None:
    snapshot = quietness.start(0.05)
    # Busy for 0.2 s of wall time and of this process's own CPU time: on a loaded machine a
    # busy loop gets only a share of a core, so the wall time alone would not give the CPU.
    deadline, cpu_from = time.monotonic() + 0.2, time.process_time()
    while time.monotonic() < deadline or time.process_time() - cpu_from < 0.2:
        pass
    block = quietness.finish(snapshot)
    json.dumps(block)  # goes into the result file as it is
    assert block["source"] == "linux /proc" and block["cpus"] >= 1
    assert block["pre_start"]["wall_seconds"] >= 0.05
    for end in ("start", "end"):
        assert len(block[end]["loadavg"]) == 3 and block[end]["busy_jiffies"] > 0
    assert block["wall_seconds"] >= 0.2 and block["own_cpu_seconds"] >= 0.15
    assert block["other_load_cores"] is not None


def _result_file(path: Path, block: dict | None) -> Path:
    meta = {"machine": "m", "regime": "micro", "scope": "memory", "library": "pillow"}
    if block is not None:
        meta["quietness"] = block
    row = {"status": "ok", "median_throughput": 100.0, "std_throughput": 1.0}
    path.write_text(json.dumps({"metadata": meta, "results": {"Blur": row}}))
    return path


def test_tidy_flags_rows_of_a_job_measured_under_load(tmp_path: Path) -> None:
    loaded = tidy.rows_from_file(_result_file(tmp_path / "a.json", _block(other_load_cores=0.98)))
    assert loaded[0]["under_load"] is True
    assert loaded[0]["other_load_cores"] == 0.98 and loaded[0]["steal_fraction"] == 0.0
    assert "other processes used 0.98 cores" in loaded[0]["load_reason"]
    quiet = tidy.rows_from_file(_result_file(tmp_path / "b.json", _block(other_load_cores=0.01)))
    assert quiet[0]["under_load"] is False and quiet[0]["load_reason"] == ""
    foreign = tidy.rows_from_file(_result_file(tmp_path / "c.json", None))
    assert foreign[0]["under_load"] is None and foreign[0]["other_load_cores"] is None


def _frame(folder: Path, loads: dict[str, float | None]) -> pd.DataFrame:
    folder.mkdir(exist_ok=True)
    for library, load in loads.items():
        block = None if load is None else _block(other_load_cores=load)
        meta = {"machine": "m", "regime": "micro", "scope": "memory", "library": library}
        if block is not None:
            meta["quietness"] = block
        rows = {t: {"status": "ok", "median_throughput": v, "std_throughput": 1.0}
                for t, v in (("Blur", 100.0), ("Flip", 50.0))}  # fmt: skip
        (folder / f"{library}.json").write_text(json.dumps({"metadata": meta, "results": rows}))
    return tidy.load([folder])


def test_summary_lists_rows_under_load_and_speedups_keep_them_flagged(tmp_path: Path) -> None:
    frame = _frame(tmp_path / "results", {"pillow": 1.2, "kornia": 0.0})
    section = "\n".join(summary.under_load_section(frame))
    assert "2 of 4 ok rows" in section and "| micro | pillow | 2/2 |" in section
    assert "1.20" in section
    # Through the CSV (text cells) as the summary rule reads it.
    frame.to_csv(tmp_path / "all.csv", index=False)
    table = speedups.compute(pd.read_csv(tmp_path / "all.csv"))
    assert len(table) == 4  # kept, not dropped
    assert table["under_load"].tolist() == [True] * 4  # kornia's rows compare against pillow's


def test_summary_says_so_when_no_row_was_under_load(tmp_path: Path) -> None:
    quiet = summary.under_load_section(_frame(tmp_path / "q", {"pillow": 0.0}))
    assert any(line.startswith("None of 2 ok rows") for line in quiet)
    foreign = summary.under_load_section(_frame(tmp_path / "f", {"pillow": None}))
    assert any("records the machine's quietness" in line for line in foreign)
