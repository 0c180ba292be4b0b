"""The offline GPU node (augbench/gpu_node, tools/gpu_node): the wheel bundle (pinned wheels that
fit the node's interpreter, the size limit), the node command's refusals (another Python
version, no CUDA device: one line, exit 1, no OUT), the `system` env manager's marker, the plan's
engine jobs, and the node command's CPU dry mode end to end with a library env standing in for
the node's Python (the bundle's Kornia installed into its temporary target).

Downloads are cached in .augbench/gpu-node/wheels (ignored by git): the tests marked slow reach
PyPI only the first time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest
import yaml
from conftest import REPO, jpeg_manifest, run_engine

from augbench import decision
from augbench.gpu_node import bundle, plan
from augbench.planning import provision
from augbench.workload import gpu_recipes

BUNDLE_SCRIPT = REPO / "tools/gpu_node/bundle"
PROVE = REPO / "tools/gpu_node/prove.sh"
WHEEL_CACHE = REPO / ".augbench/gpu-node/wheels"


def run_bundle(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BUNDLE_SCRIPT), *args], capture_output=True, text=True, timeout=600
    )


def run_prove(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(PROVE), *args], capture_output=True, text=True, timeout=600,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def python_version(python: Path | str) -> str:
    code = "import sys; print('%d.%d' % sys.version_info[:2])"
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True).stdout.strip()


def fake_bundle(folder: Path, version: str) -> Path:
    """Just what the node command reads before anything runs: the manifest's Python version."""
    folder.mkdir()
    (folder / "bundle.json").write_text(json.dumps({"python_version": version}))
    return folder


# -- the bundle ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("filename", "fits"),
    [
        ("kornia-0.9.0-py3-none-any.whl", True),
        ("kornia_rs-0.2.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", True),
        ("x-1.0-cp38-abi3-manylinux_2_28_x86_64.whl", True),
        ("kornia_rs-0.2.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", False),
        ("kornia_rs-0.2.0-cp312-cp312-manylinux_2_17_aarch64.whl", False),
        ("kornia_rs-0.2.0-cp312-cp312-macosx_11_0_arm64.whl", False),
        ("x-1.0-cp313-abi3-manylinux_2_28_x86_64.whl", False),
    ],
)
def test_wheels_must_fit_cpython_312_on_manylinux_x86_64(filename: str, fits: bool) -> None:
    problem = bundle.wheel_problem(filename, "3.12")
    assert (problem is None) == fits, problem
    if not fits:
        assert "do not fit cp312 on manylinux x86_64" in problem


def test_requirements_are_pinned_by_the_locks() -> None:
    pins = provision.lock_pins(REPO / "envs/kornia.txt")
    reqs = {r.name: r for r in bundle.requirements(REPO, ["pyyaml==6.0.3"])}
    assert set(reqs) == {"kornia", "kornia-rs", "tqdm", "pip", "pyyaml"}
    for name in ("kornia", "kornia-rs", "tqdm"):
        assert reqs[name].version == pins[name] and reqs[name].pinned_by == "envs/kornia.txt"
    # Nothing the GPU regimes' torchvision/Kornia paths do not import, and never DALI.
    assert not {"albumentationsx", "pyperf", "nvidia-dali-cuda120"} & set(reqs)


def test_an_oversize_bundle_is_refused_with_every_size_and_nothing_written(
    tmp_path: Path,
) -> None:
    """Offline: the cache holds (tiny) wheels of every pinned requirement, and one more wheel of
    61 MiB (a sparse file) is added: the build stops before copying anything."""
    cache = tmp_path / "cache" / "cp312"
    cache.mkdir(parents=True)
    for req in bundle.requirements(REPO, []):
        dist = req.name.replace("-", "_")
        (cache / f"{dist}-{req.version}-py3-none-any.whl").write_bytes(b"PK fake wheel")
    huge = tmp_path / "huge-1.0-py3-none-any.whl"
    with huge.open("wb") as fh:
        fh.truncate(61 * 2**20)
    out = tmp_path / "bundle"
    proc = run_bundle(
        "--python-version", "3.12", "--out", str(out), "--cache", str(tmp_path / "cache"),
        "--add-wheel", str(huge),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "over the 60 MiB limit" in proc.stderr
    assert "wheels/huge-1.0-py3-none-any.whl" in proc.stderr and "61.00 MiB" in proc.stderr
    for listed in ("augbench-project.tar.gz", "dataset-sources/astronaut.png", "prove.sh"):
        assert listed in proc.stderr
    assert not out.exists()
    assert not list(tmp_path.glob(".bundle.*"))  # no half-built folder either


@pytest.mark.slow
def test_a_real_bundle_for_python_312_has_pinned_cp312_manylinux_wheels(tmp_path: Path) -> None:
    out = tmp_path / "bundle-cp312"
    proc = run_bundle("--python-version", "3.12", "--out", str(out), "--cache", str(WHEEL_CACHE))
    assert proc.returncode == 0, proc.stderr[-3000:]
    manifest = json.loads((out / "bundle.json").read_text())
    assert (manifest["python_version"], manifest["python_tag"]) == ("3.12", "cp312")
    assert manifest["total_bytes"] <= manifest["limit_bytes"] == 60 * 2**20
    pins = provision.lock_pins(REPO / "envs/kornia.txt")
    wheels = {w["requirement"].split("==")[0]: w for w in manifest["wheels"]}
    assert set(wheels) == {"kornia", "kornia-rs", "tqdm", "pip"}
    for name, wheel in wheels.items():
        path = out / wheel["path"]
        assert bundle.wheel_problem(path.name, "3.12") is None
        assert path.stat().st_size == wheel["bytes"]
        assert bundle.file_sha256(path) == wheel["sha256"]
        if name != "pip":
            assert wheel["requirement"] == f"{name}=={pins[name]}"
    _dist, pythons, abi, platforms = bundle.wheel_tags(Path(wheels["kornia-rs"]["path"]).name)
    assert (pythons, abi) == ("cp312", "cp312")
    assert "manylinux" in platforms and platforms.endswith("x86_64")
    sums = dict(line.split("  ")[::-1] for line in (out / "SHA256SUMS").read_text().splitlines())
    assert all(bundle.file_sha256(out / path) == digest for path, digest in sums.items())
    with tarfile.open(out / bundle.PROJECT_ARCHIVE) as tar:
        names = set(tar.getnames())
    assert {"augbench/gpu_node/prove.py", "envs/kornia.txt", "tools/gpu_node/prove.sh"} <= names
    assert not any("__pycache__" in n for n in names)
    assert len(list((out / bundle.SOURCES_DIR).iterdir())) == 7
    assert os.access(out / "prove.sh", os.X_OK)


# -- the plan --------------------------------------------------------------------------------------
def test_the_node_plan_runs_the_gpu_regimes_with_the_rules_flags_within_the_budget() -> None:
    full = plan.build_plan(REPO)
    node, dry = full["modes"]["node"], full["modes"]["dry"]
    gpu = node["steps"]["gpu_dataloader"]
    assert {(j["library"], j["wildcards"]["scope"]) for j in gpu} == {
        (lib, scope) for lib in ("torchvision", "kornia") for scope in ("memory", "decode")
    }
    assert [j["label"] for j in gpu[:4]] == [
        "torchvision memory w0 per-sample", "kornia memory w0 per-sample",
        "torchvision decode w2 per-sample", "kornia decode w2 per-sample",
    ]  # fmt: skip
    transforms = gpu[0]["engine"][gpu[0]["engine"].index("--transforms") + 1].split(",")
    default = yaml.safe_load((REPO / "config/presets/default.yaml").read_text())["transforms"]
    assert transforms == ["Identity", *default]  # Identity, then the default preset's transforms
    assert "--gpu" in gpu[0]["engine"] and "required" in gpu[0]["engine"]
    training = node["steps"]["training"]
    assert [j["label"] for j in training] == ["torchvision w4", "torchvision w8", "torchvision w16"]
    flags = training[0]["engine"]
    assert flags[flags.index("--feeds") + 1] == "cpu,gpu"
    assert flags[flags.index("--accelerator") + 1] == "model"
    assert training[0]["env"]["OMP_NUM_THREADS"] == "1"  # the rule's thread prefix
    pipeline = node["steps"]["pipeline"]
    assert pipeline and all("--pipelines" in j["engine"] for j in pipeline)
    assert all(j["output"].startswith("results/pipelines/raw/") for j in pipeline)
    # The steps' budgets (all but those that take what is left), an installation of 30 s and
    # the finish fit the whole budget, and that fits a 10-minute slot with half a minute to spare.
    fixed = {k: v for k, v in node["budgets_s"].items() if k not in full["as_time_allows"]}
    assert sum(fixed.values()) + 30 + full["finish_reserve_s"] <= full["total_budget_s"] <= 570
    # What predicts and measures training out of sample runs first; batch-shared last.
    assert list(node["steps"]) == [
        "supply", "training", "gpu_dataloader", "pipeline", "nvjpeg", "batch_shared"
    ]  # fmt: skip
    # nvJPEG, as time allows: the training's GPU feed decoded on the device at its fewest
    # workers, and each library's decode-scope Identity; no other step (nor the A/A pairs) runs
    # a job of that decoder.
    nvjpeg = node["steps"]["nvjpeg"]
    assert [j["label"] for j in nvjpeg] == [
        "torchvision w4-nvjpeg", "torchvision decode nvjpeg w2 per-sample",
        "kornia decode nvjpeg w2 per-sample",
    ]  # fmt: skip
    for job in nvjpeg:
        engine = job["engine"]
        assert engine[engine.index("--decoder") + 1] == "nvjpeg"
        if job["rule"] == "gpu_dataloader":
            assert engine[engine.index("--transforms") + 1] == "Identity"
        else:
            assert engine[engine.index("--feeds") + 1] == "gpu"
    assert "nvjpeg" in full["as_time_allows"]
    others = [j for step, jobs in node["steps"].items() if step != "nvjpeg" for j in jobs]
    calibration = full["modes"]["calibration"]["steps"]["calibration"]
    assert not [j for j in [*others, *calibration] if "--decoder" in j["engine"]
                and "nvjpeg" in j["engine"]]  # fmt: skip
    assert all(
        j["wildcards"]["randomness"] == "batch-shared" for j in node["steps"]["batch_shared"]
    )
    assert node["dataset"]["key"].startswith("default-300-")
    for step, jobs in dry["steps"].items():
        assert jobs or step in full["as_time_allows"], step  # dry: per-sample only
        if step == "supply":  # the CPU DataLoader needs no device to stand in for
            assert all("--allow-cpu-device" not in job["engine"] for job in jobs)
            continue
        for job in jobs:
            switch = (
                "--allow-cpu-device-feed" if job["rule"] == "training" else "--allow-cpu-device"
            )
            assert switch in job["engine"], job["label"]


def test_the_training_check_runs_every_supply_and_training_job_in_runs_in_run_order() -> None:
    check = plan.build_plan(REPO)["modes"]["training_check"]
    (jobs,) = check["steps"].values()
    runs = [int(j["wildcards"]["run"].removeprefix("-run") or 1) for j in jobs]
    assert runs == sorted(runs) and set(runs) == set(range(1, plan.CHECK_RUNS + 1))
    settings = {(j["rule"], j["wildcards"]["workers"]) for j in jobs}
    # A worker curve from data-bound (1 worker) to the node's cores.
    assert settings == {
        (rule, w) for rule in ("cpu_dataloader", "training") for w in ["1", "2", "4", "8", "12"]
    }
    assert len(jobs) == len(settings) * plan.CHECK_RUNS
    assert len({j["output"] for j in jobs}) == len(jobs)  # each run its own result file
    assert jobs[-1]["output"].endswith(f"-run{plan.CHECK_RUNS}.json")
    for position, job in enumerate(jobs):  # the supply of a run before the training it predicts
        if job["rule"] == "training":
            assert any(
                j["rule"] == "cpu_dataloader"
                and j["wildcards"]["workers"] == job["wildcards"]["workers"]
                and j["wildcards"]["run"] == job["wildcards"]["run"]
                for j in jobs[:position]
            ), job["label"]
            flags = job["engine"]
            assert flags[flags.index("--feeds") + 1] == "cpu"
    # 12 workers and the training process still fit the node's 16 cores.
    assert max(int(w) for _, w in settings) + 1 <= 16
    reserve = plan.FINISH_RESERVE_S
    assert sum(check["budgets_s"].values()) + 30 + reserve <= check["total_budget_s"] < 570
    assert "sync_check" not in check["budgets_s"]


def test_cores_per_gpu_is_the_fewest_workers_fed_on_every_runs_interval() -> None:
    """Protects the node summary's answer: a count is fed only where every run's data-wait
    interval lies below policy.FED_WAIT (one run straddling it makes it borderline); the answer is
    the fewest fed count with no larger count starved, plus the training process's core; a
    curve starved at its largest count says so, and one where more workers fared worse is
    flagged."""
    from augbench.gpu_node.summary import cores_answer, cores_per_gpu

    def row(feed: str, workers: int, low: float, high: float, run: str = "") -> dict:
        return {"recipe": "RandomResizedCrop", "feed": feed, "workers": workers, "run": run,
                "status": "ok", "data_wait_ci_low": low, "data_wait_ci_high": high}  # fmt: skip

    fed, starved = (0.0, 0.02), (0.3, 0.5)
    rows = [
        row("cpu", 1, *starved), row("cpu", 2, *starved), row("cpu", 4, 0.01, 0.03),
        row("cpu", 4, 0.02, 0.06, "-run2"), row("cpu", 8, *fed), row("cpu", 8, *fed, "-run2"),
        row("gpu", 1, *starved), row("gpu", 2, *starved),
        row("odd", 1, *fed), row("odd", 2, *starved),
        {**row("gpu", 1, *fed), "decoder": "nvjpeg"},
    ]  # fmt: skip
    curves = {c["feed"]: c for c in cores_per_gpu(rows)}
    cpu = curves["cpu"]
    assert cpu["verdicts"] == {"1": "starved", "2": "starved", "4": "borderline", "8": "fed"}
    assert (cpu["fewest_fed_workers"], cpu["cores"], cpu["runs"]) == (8, 9, 2)
    assert cores_answer(cpu).startswith("fed from 8 workers: 9 cores per GPU")
    assert curves["gpu"]["cores"] is None
    assert curves["gpu (nvjpeg)"]["cores"] == 2  # its own curve: decoded on the device
    assert cores_answer(curves["gpu"]).startswith("starved at every count up to 2 workers")
    assert not curves["odd"]["monotone"] and curves["odd"]["cores"] is None
    assert "more workers fared worse" in cores_answer(curves["odd"])
    failed = [{**row("cpu", 1, *fed), "status": "error", "data_wait_ci_low": None}]
    assert cores_per_gpu(failed)[0]["verdicts"] == {"1": "unknown"}


# -- the prover's budgets ----------------------------------------------------------------------
def test_a_job_past_its_budget_is_stopped_with_everything_it_started(tmp_path: Path) -> None:
    import time

    from augbench.gpu_node import prove

    out = tmp_path / "out"
    out.mkdir()
    progress = prove.Progress(out / "prove.log", time.time())
    ctx = prove.Context(tmp_path, tmp_path, out, "dry", {}, progress, time.time() + 60)
    pids = tmp_path / "pids"
    script = f"sleep 30 & echo $! > {pids}; echo 'x | y: ok 1.0 img/s'; wait"
    done = prove.run_process(ctx, ["bash", "-c", script], 1.0)
    assert done.timed_out and done.code is not None and done.seconds < 10
    assert prove.failure(done) == "stopped at its budget after 1 s"
    stat = Path(f"/proc/{int(pids.read_text())}/stat")
    time.sleep(0.2)
    # Gone, or dead and waiting to be reaped by init (state Z, after the command's name).
    assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    log = (out / "prove.log").read_text()
    assert "] x | y: ok 1.0 img/s" in log  # a row status line, with the time


# -- the system env manager ------------------------------------------------------------------------
def test_the_system_manager_runs_this_interpreter_and_records_versions_against_the_lock(
    tmp_path: Path,
) -> None:
    import numpy

    lock = tmp_path / "lib.txt"
    lock.write_text("numpy==0.0.1    # via -r x.in\nnot-installed-here==1.0\n")
    env = provision.system_env("torchvision", lock)
    assert (env["manager"], env["python"], env["lock_sha256"]) == ("system", sys.executable, None)
    assert env["differs_from_lock"] == {"numpy": {"lock": "0.0.1", "installed": numpy.__version__}}
    assert env["missing_from_lock"] == ["not-installed-here"]
    assert env["packages"]["numpy"] == numpy.__version__
    # Through the launcher: the engine is exec'd in this interpreter with the marker appended.
    manifest = jpeg_manifest(tmp_path)
    code = "import json, sys; print(json.dumps(sys.argv))"
    proc = subprocess.run(
        [sys.executable, "-m", "augbench.planning.provision", "--library", "torchvision",
         "--manager", "system", "--lock", str(lock), "--manifest", str(manifest), "--scratch",
         str(tmp_path / "scratch"), "--", "-c", code],
        capture_output=True, text=True, cwd=REPO, check=True,
    )  # fmt: skip
    argv = json.loads(proc.stdout.strip().splitlines()[-1])
    marker = Path(argv[argv.index("--env-marker") + 1])
    assert json.loads(marker.read_text())["manager"] == "system"


@pytest.mark.envs
def test_the_gpu_dataloader_cpu_switch_measures_on_cpu_tensors_and_says_so(
    tmp_path: Path, torchvision_env: Path
) -> None:
    """--allow-cpu-device (the dry mode's switch): without a CUDA device the recipe is measured
    through the engine's own process-isolated path on CPU tensors, and the job says so; without
    the switch the same job writes the skipped row."""
    manifest = jpeg_manifest(tmp_path, count=2)
    common = [
        "--library", "torchvision", "--transforms", "Identity", "--manifest", str(manifest),
        "--num-images", "2", "--scope", "memory", "--workers", "0", "--randomness",
        "per-sample", "--batch-size", "2", "--values", "1", "--warmups", "0",
    ]  # fmt: skip
    skipped = run_engine(torchvision_env, "gpu_dataloader", *common, output=tmp_path / "a.json")
    if skipped["metadata"]["cuda_available"]:
        pytest.skip("CUDA works here: the switch changes nothing")  # pragma: no cover
    assert skipped["results"]["Identity"]["status"] == "skipped"
    doc = run_engine(
        torchvision_env, "gpu_dataloader", *common, "--allow-cpu-device", "true",
        output=tmp_path / "b.json",
    )  # fmt: skip
    row = doc["results"]["Identity"]
    assert row["status"] == "ok", row.get("reason")
    assert row["output_device"] == "cpu" and row["device"].startswith("cpu (--allow-cpu-device")
    assert doc["metadata"]["cpu_stand_in"] is True


@pytest.mark.envs
def test_the_nvjpeg_decoder_reads_bytes_in_workers_and_decodes_each_batch_on_the_device(
    tmp_path: Path, torchvision_env: Path
) -> None:
    """--decoder nvjpeg on CPU tensors (the dry mode's switch): the workers hand over the files'
    bytes, one decode_jpeg call per batch decodes them on the device, the crop is cut there and
    the transform runs after it (each recipe is a process: one here, Identity in the dry mode);
    the rows say which decoder fed them and what was timed. The decoder needs the decode scope,
    and a file that is not a JPEG is the row's error in one line."""
    manifest = jpeg_manifest(tmp_path, count=4)
    common = [
        "--library", "torchvision", "--manifest", str(manifest), "--num-images", "4",
        "--scope", "decode", "--workers", "1", "--randomness", "per-sample", "--batch-size", "2",
        "--values", "2", "--warmups", "0", "--allow-cpu-device", "true", "--decoder", "nvjpeg",
    ]  # fmt: skip
    doc = run_engine(
        torchvision_env, "gpu_dataloader", *common, "--transforms", "HorizontalFlip",
        output=tmp_path / "ok.json",
    )  # fmt: skip
    for row in doc["results"].values():
        assert row["status"] == "ok", row.get("reason")
        assert row["decoder"] == "nvjpeg" and row["timed"] == gpu_recipes.NVJPEG_TIMED
        assert row["output_shape"] == [2, 3, 224, 224] and row["output_device"] == "cpu"
        assert row["input"] == "DataLoader of file bytes, decoded on the device"
    assert doc["metadata"]["benchmark_params"]["decoder"] == "nvjpeg"
    (tmp_path / "images" / "2.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a JPEG")
    broken = run_engine(
        torchvision_env, "gpu_dataloader", *common, "--transforms", "Identity",
        output=tmp_path / "broken.json",
    )  # fmt: skip
    row = broken["results"]["Identity"]
    assert row["status"] == "error" and "\n" not in row["reason"], row
    refused = subprocess.run(
        [str(torchvision_env), "-m", "augbench.measuring.engines.gpu_dataloader",
         *common[:-2], "--decoder", "nvjpeg", "--scope", "memory", "--workers", "0",
         "--transforms", "Identity", "--machine", "t", "--output", str(tmp_path / "x.json")],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert refused.returncode == 2
    assert "--decoder nvjpeg: the decode scope's single transforms only" in refused.stderr


# -- the node command --------------------------------------------------------------------------
def test_a_bundle_for_another_python_is_refused_in_one_line(tmp_path: Path) -> None:
    here = python_version(sys.executable)
    fake = fake_bundle(tmp_path / "bundle", "3.9")
    out = tmp_path / "out"
    proc = run_prove("--bundle", str(fake), "--python", sys.executable, str(out))
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "built for Python 3.9" in lines[0] and f"is Python {here}" in lines[0]
    assert not out.exists() and proc.stdout == ""


@pytest.mark.envs
def test_without_a_cuda_device_the_node_command_stops_in_one_line(
    tmp_path: Path, torchvision_env: Path
) -> None:
    fake = fake_bundle(tmp_path / "bundle", python_version(torchvision_env))
    out = tmp_path / "out"
    proc = run_prove("--bundle", str(fake), "--python", str(torchvision_env), str(out))
    if proc.returncode == 0 or "no CUDA device" not in proc.stderr:
        pytest.skip("CUDA works here: there is nothing to refuse")  # pragma: no cover
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("prove.sh: no CUDA device: torch ") and "--dry" in lines[0]
    assert not out.exists()


# -- resuming a run cut short ----------------------------------------------------------------
def earlier_out(folder: Path, machine: str, work: Path) -> tuple[Path, str]:
    """An earlier run's OUT: one ok job with its result file, one job it did not start, and a
    sync check that passed."""
    done = f"results/raw/{machine}/k/gpu_dataloader/torchvision/memory_w0_per-sample_s000.json"
    result = work / done
    result.parent.mkdir(parents=True)
    result.write_text(json.dumps({"results": {"Identity": {"status": "ok"}}}))
    sync = work / "results/checks/sync_check.json"
    sync.parent.mkdir(parents=True)
    sync.write_text(
        json.dumps({"passed": True, "mode": "cuda", "device": "d", "floor_s": 0.04, "rule": "r",
                    "with_sync_times_s": [0.04], "control_times_s": [0.0]})
    )  # fmt: skip
    folder.mkdir()
    with tarfile.open(folder / "results.tar.gz", "w:gz") as tar:
        tar.add(work / "results", arcname="results")
    jobs = [
        {"label": "a", "recipes": 1, "status": "ok", "output": done},
        {"label": "b", "recipes": 1, "status": "not started", "reason": "budget"},
    ]
    steps = [
        {"name": "sync_check", "status": "ok", "jobs": []},
        {"name": "gpu_dataloader", "status": "partial", "jobs": jobs},
    ]
    summary = {"machine": machine, "elapsed_s": 300.0, "steps": steps, "bundle": {}}
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "prove.log").write_text("earlier log\n")
    return folder, done


def test_a_resumed_run_keeps_the_earlier_jobs_and_runs_only_the_rest(tmp_path: Path) -> None:
    import time

    from augbench.gpu_node import prove

    machine = "node-h100"
    earlier, done = earlier_out(tmp_path / "earlier", machine, tmp_path / "earlier-work")
    out, work = tmp_path / "out", tmp_path / "work"
    out.mkdir()
    work.mkdir()
    progress = prove.Progress(out / "prove.log", time.time())
    ctx = prove.Context(tmp_path, work, out, "node", {}, progress, time.time() + 60, machine)
    prove.take_earlier(ctx, earlier)
    assert ctx.earlier_outputs == {done}
    assert (work / "results/gpu_node/earlier_run_1/prove.log").read_text() == "earlier log\n"
    ctx.manifest = tmp_path / "manifest.json"
    kept = {"rule": "gpu_dataloader", "library": "torchvision", "label": "a", "recipes": 1,
            "output": done.replace(machine, plan.MACHINE), "wildcards": {"scope": "memory"},
            "engine": [], "env": {}}  # fmt: skip
    record = prove.StepRecord("gpu_dataloader", 100.0)
    prove.engine_step(ctx, record, [kept])
    assert record.jobs == [
        {"label": "a", "recipes": 1, "status": "ok", "earlier": True, "output": done,
         "rows": {"ok": 1}}
    ]  # fmt: skip
    assert record.status == "ok" and record.seconds == 0
    sync = prove.StepRecord("sync_check", 20.0)
    prove.sync_step(ctx, sync)  # the earlier check passed: kept, not run
    assert sync.status == "ok" and sync.notes == ["passed in the earlier run, kept"]
    log = (out / "prove.log").read_text()
    assert "gpu_dataloader | a: measured by the earlier run, kept" in log


def test_resume_refuses_what_is_not_an_earlier_out_and_another_machine(tmp_path: Path) -> None:
    fake = fake_bundle(tmp_path / "bundle", python_version(sys.executable))
    (tmp_path / "empty").mkdir()
    proc = run_prove("--dry", "--bundle", str(fake), "--python", sys.executable, "--resume",
                     str(tmp_path / "empty"), str(tmp_path / "out"))  # fmt: skip
    assert proc.returncode == 1 and not (tmp_path / "out").exists()
    assert proc.stderr.strip().splitlines() == [
        f"prove.sh: --resume {tmp_path / 'empty'}: not an earlier run's OUT (it needs "
        "results.tar.gz and summary.json)"
    ]
    proc = run_prove("--dry", "--bundle", str(fake), "--python", sys.executable, "--budget",
                     "fast", str(tmp_path / "out"))  # fmt: skip
    assert proc.returncode == 1 and "--budget fast: give the whole run's seconds" in proc.stderr


def test_a_resumed_run_on_another_machine_merges_nothing(tmp_path: Path) -> None:
    from augbench.gpu_node import prove

    earlier, _ = earlier_out(tmp_path / "earlier", "another-machine", tmp_path / "earlier-work")
    project = tmp_path / "bundle"
    project.mkdir()
    (project / "bundle.json").write_text(json.dumps({"python_version": "3"}))
    (project / "plan.json").write_text(json.dumps(plan.build_plan(REPO)))
    out = tmp_path / "out"
    out.mkdir()
    import time

    code = prove.main([
        "--bundle", str(project), "--work", str(tmp_path / "work"), "--out", str(out),
        "--started", str(time.time()), "--mode", "dry", "--machine", "this-machine",
        "--resume", str(earlier),
    ])  # fmt: skip
    log = (out / "prove.log").read_text()
    assert code == 1
    assert (
        "resume | the earlier run was measured on another-machine, this is this-machine: rows "
        "of two machines are not merged; run without --resume" in log
    )
    assert "gpu_dataloader | start" not in log  # nothing measured
    with tarfile.open(out / "results.tar.gz") as tar:  # and nothing of the other machine kept
        assert not [m.name for m in tar.getmembers() if "another-machine" in m.name]


@pytest.mark.slow
@pytest.mark.envs
def test_the_dry_mode_runs_every_step_and_leaves_a_small_out_folder(
    tmp_path: Path, torchvision_env: Path
) -> None:
    """A bundle for the torchvision env's Python (pyyaml added: the node has it, the env not),
    then prove.sh --dry with that env as the node's interpreter, from an unrelated folder."""
    version = python_version(torchvision_env)
    built = tmp_path / "bundle"
    proc = run_bundle(
        "--python-version", version, "--out", str(built), "--cache", str(WHEEL_CACHE),
        "--also", "pyyaml==6.0.3",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "out"
    # A short TMPDIR, as a node's /tmp: the DataLoader workers hand tensors over through Unix
    # sockets below it (multiprocessing's resource sharer), whose paths may not pass 107 bytes;
    # below a deep pytest folder the hand-over fails inside the worker and the loader waits.
    with tempfile.TemporaryDirectory(prefix="gn-", dir="/tmp") as scratch:
        proc = subprocess.run(
            ["bash", str(built / "prove.sh"), "--dry", "--python", str(torchvision_env),
             str(out)],
            capture_output=True, text=True, timeout=600, cwd=tmp_path,
            env={**os.environ, "TMPDIR": scratch},
        )  # fmt: skip
        # The temporary install and work folder are gone (torch keeps its own cache there).
        left = list(Path(scratch).glob("augbench-gpu-node.*"))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    assert not left, left
    files = sorted(p.name for p in out.iterdir())
    assert files == ["prove.log", "results.tar.gz", "summary.json", "summary.md"]
    # Progress: labelled lines with the elapsed time, per step.
    for step in ("install", "environment", "dataset", "sync_check", "gpu_dataloader", "pipeline",
                 "nvjpeg", "training", "calibration"):  # fmt: skip
        assert f"s] {step} | " in proc.stdout, step
    with tarfile.open(out / "results.tar.gz") as tar:
        docs = {
            m.name: json.load(tar.extractfile(m))  # type: ignore[arg-type]
            for m in tar.getmembers()
            if m.isfile() and m.name.endswith(".json")
        }
    summary = json.loads((out / "summary.json").read_text())
    machine, key = summary["machine"], summary["dataset"]["key"]
    assert machine.endswith("-dry") and key.startswith("default-12-")
    raw = f"results/raw/{machine}/{key}"
    gpu = docs[f"{raw}/gpu_dataloader/kornia/decode_w1_per-sample_s000.json"]
    nvjpeg = docs[f"{raw}/gpu_dataloader/kornia/decode-nvjpeg_w1_per-sample_s000.json"]
    training = docs[f"{raw}/training/torchvision/w1.json"]
    pipeline = docs[
        f"results/pipelines/raw/{machine}/{key}/gpu_dataloader/torchvision/memory-w0_per-sample.json"
    ]
    for doc in (gpu, nvjpeg, training, pipeline):
        assert {row["status"] for row in doc["results"].values()} == {"ok"}, doc["results"]
        assert doc["metadata"]["environment"]["env_manager"] == "system"
        assert doc["metadata"]["machine"] == machine
    assert set(gpu["results"]) == {"Identity", "HorizontalFlip"}
    (row,) = nvjpeg["results"].values()  # Identity: the files decoded on the (CPU) device
    assert row["decoder"] == "nvjpeg" and "decode_jpeg" in row["decoder_call"]
    on_device = docs[f"{raw}/training/torchvision/w1-nvjpeg.json"]  # the GPU feed's
    assert {(r["status"], r["feed"], r["decoder"]) for r in on_device["results"].values()} == {
        ("ok", "gpu", "nvjpeg")
    }
    assert gpu["metadata"]["cpu_stand_in"] is True
    assert gpu["metadata"]["library_versions"]["kornia"] == "0.9.0"  # the bundle's wheel
    assert {row["feed"] for row in training["results"].values()} == {"cpu", "gpu"}
    assert docs["results/checks/sync_check.json"]["passed"] is True
    marker = docs["results/envs/kornia.json"]
    assert marker["manager"] == "system" and marker["python"] == str(torchvision_env)
    assert "results/data/" + key + "/manifest.json" in docs
    assert [s["status"] for s in summary["steps"]] == ["ok"] * 10
    # The A/A step, run by the node's own step runner: torchvision and its second name on
    # Identity, one run each, paired by the summary.
    calibration = summary["calibration"]
    assert calibration["measured_pairs"] == 1 and not calibration["passes"]
    (pair,) = calibration["rows"]
    assert (pair["a"], pair["b"], pair["recipe"]) == ("torchvision", "torchvision~b", "Identity")
    assert pair["runs_a"] == pair["runs_b"] == plan.CALIBRATION_DRY_RUNS
    assert pair["verdict"] in decision.VERDICTS
    aa = [d for name, d in docs.items() if name.startswith(plan.CALIBRATION_DIR)]
    assert sorted(d["metadata"]["library"] for d in aa) == sorted(
        ["torchvision", "torchvision~b"] * plan.CALIBRATION_DRY_RUNS
    )
    assert all({r["status"] for r in d["results"].values()} == {"ok"} for d in aa)
    assert "## A/A calibration" in (out / "summary.md").read_text()
    assert any(name.startswith(f"{raw}/cpu_dataloader/torchvision/") for name in docs)  # supply
    text = (out / "summary.md").read_text()
    assert "nvidia-dali-cuda120: not brought to the node" in text
    assert "no CUDA device: the torch.cuda._sleep kernel check needs one" in text
    assert "dry run: GPU rows measured on CPU tensors" in text
    assert "kornia decode per-sample" in text and "| training | ok |" in text
    # The worker curve's answer, per feed (the dry run's 1 worker: any verdict).
    assert {c["feed"] for c in summary["cores_per_gpu"]} == {"cpu", "gpu", "gpu (nvjpeg)"}
    assert "## Cores per GPU" in text
