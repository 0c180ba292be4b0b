"""The machine-speed probe (augbench.planning.machine_speed): a run's readings, and the factor an
estimate from that run scales this machine's seconds by."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from augbench.planning import machine_speed
from augbench.planning.machine_speed import Reading


def test_a_reading_times_interpreter_starts_and_decodes() -> None:
    reading = machine_speed.probe()
    assert reading.start_s > 0 and reading.decode_s > 0
    assert reading.seconds == pytest.approx(reading.start_s + reading.decode_s)


def test_a_run_keeps_every_reading_and_is_read_at_their_median(tmp_path: Path) -> None:
    for seconds in (1.0, 3.0, 2.0):
        machine_speed.record(tmp_path, "box", Reading(seconds / 2, seconds / 2))
    path = machine_speed.record_path(tmp_path, "box")
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    assert [float(r["seconds"]) for r in rows] == [1.0, 3.0, 2.0]
    assert machine_speed.recorded_seconds(tmp_path, "box") == 2.0
    # A reading of another probe version is not this one's to compare.
    with path.open("a") as fh:
        fh.write(f"2026-01-01T00:00:00Z\t{machine_speed.PROBE_VERSION + 1}\t90.0\t45.0\t45.0\n")
        fh.write(f"2026-01-01T00:00:00Z\t{machine_speed.PROBE_VERSION + 1}\t90.0\t45.0\t45.0\n")
    assert machine_speed.recorded_seconds(tmp_path, "box") == 2.0


def test_the_factor_is_now_over_then_on_the_same_machine_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    machine_speed.record(run, "box", Reading(0.5, 0.5))
    found = machine_speed.factor(run, "box", Reading(0.75, 0.75))
    assert found is not None and found.value == pytest.approx(1.5)
    assert "x 1.50" in found.line(run)
    # Another machine's label, or a run that recorded nothing: its seconds as measured.
    assert machine_speed.factor(run, "other-box", Reading(0.75, 0.75)) is None
    assert machine_speed.factor(tmp_path / "empty", "box", Reading(0.75, 0.75)) is None
    # The run being priced is this directory: its seconds are now's.
    monkeypatch.chdir(run)
    assert machine_speed.factor(Path("."), "box", Reading(0.75, 0.75)) is None
