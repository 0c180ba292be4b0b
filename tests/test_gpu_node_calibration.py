"""The GPU node kit's A/A calibration: torchvision against its second name on every recipe and
against Kornia on Identity in the decode scope, each job in three runs (augbench/gpu_node/plan.py),
decided by the summary as the answer decides a margin. The device-side code runs on CPU tensors in
the dry mode (tests/test_gpu_node.py runs its calibration step); on a GPU node it is
`prove.sh --calibration`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO

from augbench import decision
from augbench.gpu_node import plan, summary

NAMES = ("torchvision", "torchvision~b")


@pytest.fixture(scope="module")
def full_plan() -> dict:
    return plan.build_plan(REPO)


def test_the_calibration_mode_runs_each_pairs_job_in_runs_within_its_budget(
    full_plan: dict,
) -> None:
    mode = full_plan["modes"]["calibration"]
    (jobs,) = mode["steps"].values()
    assert list(mode["steps"]) == ["calibration"]
    runs = [int(j["wildcards"]["run"].removeprefix("-run")) for j in jobs]
    assert runs == sorted(runs) and set(runs) == set(range(1, plan.CALIBRATION_RUNS + 1))
    assert {j["library"] for j in jobs} == {"torchvision", "torchvision~b", "kornia"}
    assert {(j["wildcards"]["scope"], j["wildcards"]["randomness"]) for j in jobs} == {
        ("decode", "per-sample")
    }
    recipes = {j["library"]: j["engine"][j["engine"].index("--transforms") + 1] for j in jobs}
    assert recipes["kornia"] == "Identity"  # the one recipe on which the two do equal work
    assert recipes["torchvision"] == recipes["torchvision~b"]
    assert recipes["torchvision"].split(",") == ["Identity", *plan.CALIBRATION_TRANSFORMS]
    outputs = [j["output"] for j in jobs]
    assert len(set(outputs)) == len(jobs)
    assert all(o.startswith(plan.CALIBRATION_DIR) and o.endswith(".json") for o in outputs)
    assert "--gpu" in jobs[0]["engine"] and "required" in jobs[0]["engine"]
    reserve = plan.FINISH_RESERVE_S
    assert sum(mode["budgets_s"].values()) + 30 + reserve <= mode["total_budget_s"] <= 570


def test_the_dry_mode_runs_the_calibration_step_once_on_identity_on_cpu_tensors(
    full_plan: dict,
) -> None:
    dry = full_plan["modes"]["dry"]
    jobs = dry["steps"]["calibration"]
    # The reference pair only: the other pairs' Identity jobs are the GPU DataLoader step's.
    assert {j["library"] for j in jobs} == set(NAMES)
    assert len(jobs) == len(NAMES) * plan.CALIBRATION_DRY_RUNS
    for job in jobs:
        engine = job["engine"]
        assert engine[engine.index("--transforms") + 1] == plan.CALIBRATION_DRY_RECIPES
        assert "--allow-cpu-device" in engine
    # The node mode's own steps are unchanged: A/A is its own mode there.
    assert "calibration" not in full_plan["modes"]["node"]["steps"]


def _result(folder: Path, library: str, run: int, rows: dict[str, float]) -> None:
    path = folder / "gpu_dataloader" / library / f"decode_w2_per-sample_s000-run{run}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    results = {name: {"status": "ok", "median_throughput": v} for name, v in rows.items()}
    meta = {"library": library, "scope": "decode", "regime": "gpu_dataloader"}
    path.write_text(json.dumps({"metadata": meta, "results": results}))


def test_the_summary_decides_each_pair_and_counts_false_calls(tmp_path: Path) -> None:
    results = tmp_path / "results"
    folder = results / "calibration" / "raw" / "m" / "d"
    for run, jitter in enumerate((1.0, 1.02, 0.98), start=1):
        _result(folder, "torchvision", run, {"Identity": 1000 * jitter, "Flip": 900 * jitter})
        _result(folder, "torchvision~b", run, {"Identity": 1001 * jitter, "Flip": 600 * jitter})
        # Kornia is paired on Identity only: its other rows are other work.
        _result(folder, "kornia", run, {"Identity": 999 / jitter, "Flip": 10.0})
    table = summary.calibration_table(results)
    pairs = {(p["b"], p["recipe"]): p for p in table["rows"]}
    assert set(pairs) == {("torchvision~b", "Identity"), ("torchvision~b", "Flip"),
                          ("kornia", "Identity")}  # fmt: skip
    assert all(p["runs_a"] == p["runs_b"] == 3 for p in pairs.values())
    assert all(p["level"] >= decision.DECISION_LEVEL for p in pairs.values())
    assert pairs[("torchvision~b", "Flip")]["verdict"] == decision.FASTER  # a false call
    assert table["false_calls"] == 1 and table["pairs"] == 3 and not table["passes"]
    assert "3 pairs" in table["note"] and "fewer than 20" in table["note"]
    doc = {
        "mode": "calibration", "machine": "m", "elapsed_s": 1.0, "budget_s": 570.0,
        "environment": {}, "bundle": {"built_from": None, "python_version": "3.12",
                                      "built_at": "x"},
        "steps": [], "rows": {}, "gpu_dataloader": {"rows": {}}, "pipeline": {"rows": {}},
        "training": [], "calibration": table, "sync_check": None, "not_run": [],
        "lock_differences": {}, "non_ok_rows": [],
    }  # fmt: skip
    text = summary.markdown(doc)
    assert "## A/A calibration" in text and "| torchvision | kornia | decode | Identity |" in text
    assert "-gpu-calibration-" in text
    assert summary.calibration_table(tmp_path / "none")["measured_pairs"] == 0
