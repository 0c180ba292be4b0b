"""The GPU node kit's A/A calibration: torchvision against its second name on every recipe and
against Kornia on Identity in the decode scope, each job in three runs (augbench/gpu_node/plan.py),
decided by the summary as the answer decides a margin. The device-side code runs here on CPU tensors
(the dry mode's switch); on a GPU node it is `prove.sh --calibration`."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from conftest import REPO, jpeg_manifest

from augbench import decision
from augbench.gpu_node import plan, summary

NAMES = ("torchvision", "torchvision~b")
RUNS = 2


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


@pytest.mark.envs
def test_the_calibration_step_measures_both_names_in_runs_on_cpu_tensors(
    tmp_path: Path, torchvision_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dry plan's A/A jobs of torchvision and its second name, run by the node's own step
    runner (augbench.gpu_node.prove) in the torchvision env, then the summary's pairs."""
    # The dry plan's A/A jobs in two runs (the node's three decide; two already make the runs that
    # the summary pairs side by side), on Identity: each job is a fresh interpreter importing torch.
    monkeypatch.setattr(plan, "CALIBRATION_DRY_RUNS", RUNS)
    steps = plan.mode_plan("dry", REPO)["steps"]
    jobs = [j for j in steps["calibration"] if j["library"] in NAMES]
    (tmp_path / "data").mkdir()
    manifest = jpeg_manifest(tmp_path / "data", count=8)  # the dry plan reads 8
    work, out = tmp_path / "work", tmp_path / "out"
    work.mkdir()
    out.mkdir()
    script = f"""
import json, time
from pathlib import Path
from augbench.gpu_node import prove
ctx = prove.Context(Path({str(tmp_path)!r}), Path({str(work)!r}), Path({str(out)!r}), "dry", {{}},
                    prove.Progress(Path({str(out)!r}) / "prove.log", time.time()),
                    time.time() + 400, manifest=Path({str(manifest)!r}))
record = prove.StepRecord("calibration", 400.0)
prove.engine_step(ctx, record, json.loads({json.dumps(json.dumps(jobs))}))
print(json.dumps([j["status"] for j in record.jobs]))
"""
    started = time.time()
    done = subprocess.run(
        [str(torchvision_env), "-c", script], capture_output=True, text=True, timeout=500,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "TMPDIR": "/tmp"},
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["ok"] * len(jobs)
    table = summary.calibration_table(work / "results")
    (pair,) = table["rows"]
    assert (pair["a"], pair["b"], pair["recipe"]) == ("torchvision", "torchvision~b", "Identity")
    assert pair["runs_a"] == pair["runs_b"] == RUNS
    assert pair["verdict"] in decision.VERDICTS
    assert table["measured_pairs"] == 1 and not table["passes"]
    docs = sorted((work / "results" / "calibration").rglob("*.json"))
    assert len(docs) == len(jobs)
    libraries = {json.loads(p.read_text())["metadata"]["library"] for p in docs}
    assert libraries == set(NAMES)
    assert time.time() - started < 500
