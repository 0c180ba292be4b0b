"""workers_to_feed: measured where a measured count feeds the model, else extrapolated by the
declared scaling model, never none; and the tool that checks the scaling on the H100 node."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from augbench.analysis import starvation
from augbench.analysis.starvation import FEED_COLUMNS, scaling_model
from augbench.planning.starvation_model import Model

REPO = Path(__file__).resolve().parents[1]
NODE = REPO / "docs" / "results" / "intel-xeon-16c-nvidia-h100-80gb-hbm3"


def _row(workers: int, thr: float, spread: float = 0.02, **extra: object) -> dict:
    return {
        "machine": "m-2c",
        "usable_cores": 2,
        "dataset": "d-abc",
        "regime": "cpu_dataloader",
        "scope": "decode",
        "batch_size": 32,
        "variant": "",
        "library": "albumentationsx",
        "transform": "train_light",
        "workers": workers,
        "status": "ok",
        "reason": "",
        "median_throughput": thr,
        "ci_low": thr * (1 - spread),
        "ci_high": thr * (1 + spread),
        **extra,
    }


def _feed(rows: list[dict], rate: float) -> pd.Series:
    out = starvation.table(pd.DataFrame(rows), [Model("m", rate)])
    # Series-level: every row of the series carries the same answer.
    assert len(out[list(FEED_COLUMNS)].astype(str).drop_duplicates()) == 1
    return out.iloc[0]


def test_a_target_no_measured_count_feeds_gets_an_extrapolated_count() -> None:
    # 100 img/s at 1 worker, 190 at 2: +90 per added worker past 2. Fed over the whole interval
    # (the low end, 2 % below, reaches 95 % of 1000 img/s) from 190 + 9 * 90 = 1000 at 11.
    feed = _feed([_row(0, 80.0), _row(1, 100.0), _row(2, 190.0)], 1000.0)
    assert feed["fewest_workers_keeping_fed"] == "none of the measured counts"
    assert feed["workers_to_feed"] == 11
    assert feed["workers_to_feed_basis"] == "extrapolated"
    assert bool(feed["fed_at_workers_to_feed"]) and feed["wait_at_workers_to_feed"] < 0.05
    assert feed["share_of_need"] == pytest.approx(0.19) and feed["share_of_need_workers"] == 2
    assert "+90 img/s per worker (measured 1->2" in feed["scaling"]
    assert "one core per worker past this machine's 2 cores" in feed["scaling"]


def test_fed_at_a_measured_count_is_measured() -> None:
    feed = _feed([_row(1, 100.0), _row(2, 190.0)], 150.0)
    assert feed["workers_to_feed"] == 2 and feed["workers_to_feed_basis"] == "measured"
    assert feed["scaling"] == "as measured" and bool(feed["fed_at_workers_to_feed"])
    assert feed["share_of_need"] == pytest.approx(190 / 150)


def test_one_measured_count_scales_at_its_per_worker_rate() -> None:
    feed = _feed([_row(2, 400.0, spread=0.0)], 2000.0)
    # 200 img/s per worker: 2,000 img/s at 10 workers.
    assert feed["workers_to_feed"] == 10 and feed["workers_to_feed_basis"] == "extrapolated"
    assert feed["scaling"].startswith("linear past 2: +200 img/s per worker (2 workers'")


def test_a_hand_over_that_starves_at_any_supply_still_gives_a_count() -> None:
    # A 20 ms hand-over against a 32 ms step: at least 38 % wait whatever the supply. The count
    # is the fewest at which the loader no longer sets the pace (batch / (step + hand-over)
    # = 32 / 0.052 = 615 img/s: 4 workers of 160), not fed, with the wait it leaves.
    probe = {"handover_idle_ms": 20.0, "handover_busy_ms": 20.0}
    feed = _feed([_row(2, 320.0, **probe)], 1000.0)
    assert feed["workers_to_feed"] == 4 and feed["workers_to_feed_basis"] == "extrapolated"
    assert not bool(feed["fed_at_workers_to_feed"])
    assert feed["wait_at_workers_to_feed"] == pytest.approx(20 / 52)
    assert "the hand-over alone leaves at least a 38% wait" in feed["scaling"]
    # Where a measured count already sets no pace, the count is measured, still not fed.
    feed = _feed([_row(2, 700.0, **probe)], 1000.0)
    assert feed["workers_to_feed"] == 2 and feed["workers_to_feed_basis"] == "measured"
    assert not bool(feed["fed_at_workers_to_feed"])


def test_scaling_model_rules() -> None:
    assert scaling_model({}) is None and scaling_model({2: float("nan")}) is None
    worse = scaling_model({4: 400.0, 8: 350.0}, 16)
    # A gain that is not positive is not extrapolated from: the per-worker rate, said so.
    assert worse.per_added_worker == pytest.approx(350 / 8)
    assert "the measured gain 4->8 was not positive" in worse.text
    higher = scaling_model({1: 100.0, 2: 300.0})
    assert higher.per_added_worker == pytest.approx(150.0)  # capped at the per-worker rate
    main_only = scaling_model({0: 120.0})
    assert main_only.rate(3) == pytest.approx(360.0)
    assert scaling_model({0: 50.0, 2: 180.0}).rate(4) == pytest.approx(360.0)  # 0 not a count


def test_no_ok_row_and_no_sweep_give_no_count() -> None:
    skipped = _row(2, float("nan"), status="skipped", reason="x")
    feed = _feed([skipped], 1000.0)
    assert pd.isna(feed["workers_to_feed"]) and pd.isna(feed["share_of_need"])
    dali = _feed([_row(-1, 700.0, regime="dali", library="dali")], 1000.0)
    assert pd.isna(dali["workers_to_feed"])


def test_the_check_tool_on_the_node_rows(tmp_path: Path) -> None:
    out = tmp_path / "check"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "tools" / "checks" / "workers_to_feed_check.py"),
            "--results",
            str(NODE),
            "--out",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    one = pd.read_csv(out / "workers_to_feed_one_count.csv")
    two = pd.read_csv(out / "workers_to_feed_two_counts.csv")
    # Every node run's rows above its smallest count (one rule), above its two smallest (two).
    assert len(one) == 8 and len(two) == 4
    for table in (one, two):
        inputs = table["input_workers"].astype(str).str.split(",")
        pairs = zip(table["workers"], inputs, strict=True)
        assert all(w > max(int(i) for i in ws) for w, ws in pairs)
        ratio = table["measured_img_per_s"] / table["predicted_img_per_s"]
        assert ratio.round(3).tolist() == pytest.approx(table["measured_over_predicted"].tolist())
    readme = (out / "README.md").read_text()
    assert "Commit: " in readme and "Criterion" in readme and "15%" in readme
    assert "one_count: " in done.stdout and "two_counts: " in done.stdout
