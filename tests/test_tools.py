"""The scripts of tools/ that read or write files without a benchmarked library: each run as a
user runs it (``python tools/<folder>/<script>.py ...`` in a subprocess), on committed result
folders (docs/results/amd-epyc-2c/) or on small run folders built here, and checked on what it
writes. The scripts that measure in a library's env are run in tests/test_tools_envs.py."""

from __future__ import annotations

import csv
import gzip
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest
from conftest import REPO

COMMITTED = REPO / "docs/results/amd-epyc-2c"
BENCH_HEAD = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def run_tool(script: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``python tools/<script> args`` from the repository root, with the driver's Python."""
    done = subprocess.run(
        [sys.executable, str(REPO / "tools" / script), *args],
        cwd=REPO, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    if check and done.returncode != 0:
        raise AssertionError(f"{script} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return done


def load_tool(script: str) -> ModuleType:
    """A tool's module, imported from its file (for its constants and functions)."""
    spec = importlib.util.spec_from_file_location(Path(script).stem, REPO / "tools" / script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench_file(path: Path, seconds: float, rss: float = 0.0, pss: float = 0.0) -> None:
    """A Snakemake benchmark file of one job."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        BENCH_HEAD + f"{seconds}\t0:00:01\t{rss}\t{rss}\t{pss}\t{pss}\t0\t0\t1\t{seconds}\n"
    )


def markdown_rows(text: str) -> list[list[str]]:
    """The body rows of the markdown tables in ``text``, as lists of cells."""
    return [
        [c.strip() for c in line.strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("| ") and not line.startswith("| regime |")
    ]


# -- reports -------------------------------------------------------------------------------------
def test_allocator_tables_print_every_pair_of_a_committed_run(tmp_path: Path) -> None:
    """The committed allocator-effect tables as a run's results/tables: the regime table's pairs
    add up (faster + slower + within + unknown), every pipeline pair is printed with its ratio
    as the table holds it; a run with only its pipeline table prints that one alone."""
    committed = COMMITTED / "2026-11-26-allocator-effect"
    tables = tmp_path / "run/results/tables"
    tables.mkdir(parents=True)
    for name in ("allocator_effect.csv", "allocator_effect_pipelines.csv"):
        shutil.copy(committed / name, tables / name)
    out = run_tool("reports/allocator_tables.py", str(tmp_path / "run")).stdout
    regime_part, pipeline_part = out.split("\n\n", 1)
    regime_rows = markdown_rows(regime_part)
    assert regime_rows
    for cells in regime_rows:
        pairs, faster, slower, within, unknown = cells[3], cells[5], cells[6], cells[7], cells[8]
        counted = sum(int(c.split(":")[0]) for c in (faster, slower) if c != "-")
        assert int(pairs) == counted + int(within) + int(unknown), cells
        assert cells[4].startswith("x") and float(cells[4][1:]) >= 1.0  # exp of a spread
    effect = pd.read_csv(tables / "allocator_effect_pipelines.csv", dtype={"step": str})
    whole = effect[effect["step"].isna() & effect["time_vs_glibc"].notna()]
    printed = markdown_rows(pipeline_part)
    assert 0 < len(printed) <= len(whole)
    expected = {
        (r["library"], r["transform"], r["setting"], f"{r['time_vs_glibc']:.2f}")
        for _, r in whole.iterrows()
    }
    for cells in printed:
        assert (cells[1], cells[2], cells[3], cells[6].split(" ")[0]) in expected, cells
        assert cells[7] in {"faster", "slower", "none", "unknown"}
    (tables / "allocator_effect.csv").unlink()
    alone = run_tool("reports/allocator_tables.py", str(tmp_path / "run")).stdout
    assert "| null spread |" not in alone and len(markdown_rows(alone)) == len(printed)


def test_dataloader_checks_render_every_cpu_dataloader_row_of_a_committed_run(
    tmp_path: Path,
) -> None:
    table = COMMITTED / "2026-11-26-default-run-1/all_results.csv"
    output = tmp_path / "checks.md"
    run_tool("reports/dataloader_checks.py", str(table), "--note", "quiet machine",
             "--output", str(output))  # fmt: skip
    text = output.read_text()
    frame = pd.read_csv(table, low_memory=False)
    rows = frame[frame["regime"] == "cpu_dataloader"]
    assert "amd-epyc-2c" in text.split("\n\n", 1)[0] and "quiet machine" in text
    for library, count in rows.groupby("library").size().items():
        # every row, then the library's lines of the two summaries
        listed = [line for line in text.splitlines() if line.startswith(f"| {library} |")]
        assert len(listed) >= count, (library, len(listed), count)
    printed = run_tool("reports/dataloader_checks.py", str(table), "--note", "quiet machine")
    assert printed.stdout.strip() == text.strip()


def test_checks_ledger_says_the_committed_ledger_is_current() -> None:
    """``--check`` computes the ledger from every committed run and compares it with the
    committed docs/results/checks.md and checks.csv (writing nothing)."""
    done = run_tool("reports/checks_ledger.py", "--check", check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]


def test_run_time_sums_a_runs_benchmark_files_by_phase(tmp_path: Path) -> None:
    run = tmp_path / "run"
    bench_file(run / "benchmarks/setup/build_env/pillow.tsv", 30.0)
    bench_file(run / "benchmarks/setup/stage_dataset/ds.tsv", 12.5)
    bench_file(run / "benchmarks/m/ds/micro/pillow/s000.tsv", 40.0)
    bench_file(run / "benchmarks/m/ds/micro/kornia/s000.tsv", 20.0)
    bench_file(run / "benchmarks/m/ds/cpu_dataloader/pillow/memory-w0-s000.tsv", 7.0)
    bench_file(run / "benchmarks/analysis/tables/all.tsv", 3.0)
    lines = run_tool("reports/run_time.py", str(run)).stdout.splitlines()
    assert lines[0].split() == ["phase", "jobs", "sum", "s", "longest", "s"]
    found = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert found == {
        "micro": ["2", "60.0", "40.0"],
        "setup": ["2", "42.5", "30.0"],
        "cpu_dataloader": ["1", "7.0", "7.0"],
        "analysis": ["1", "3.0", "3.0"],
    }
    assert [line.split()[0] for line in lines[1:]][:2] == ["micro", "setup"]  # longest first


# -- checks --------------------------------------------------------------------------------------
def test_result_rows_pass_on_the_same_rows_and_name_a_missing_one(tmp_path: Path) -> None:
    """A committed run's tidy table against itself: identical. Against the table without one of
    its rows: exit 1, that row named as found only before."""
    table = COMMITTED / "2026-11-26-default-run-1/all_results.csv"
    identity = ["regime", "library", "transform", "scope", "layout", "workers", "variant", "status"]
    frame = pd.read_csv(table, dtype=str, keep_default_na=False)
    keys = frame.reindex(columns=identity, fill_value="").apply(tuple, axis=1)
    same = run_tool("checks/result_rows.py", str(table), str(table))
    n = keys.nunique()
    assert same.returncode == 0 and "identical" in same.stdout
    assert f"before: {n} rows; after: {n} rows" in same.stdout
    unique = keys[~keys.duplicated(keep=False)]
    dropped = frame.loc[unique.index[0]]
    fewer = tmp_path / "after.csv"
    frame.drop(index=unique.index[0]).to_csv(fewer, index=False)
    differ = run_tool("checks/result_rows.py", str(table), str(fewer), check=False)
    assert differ.returncode == 1 and "1 rows differ" in differ.stdout
    assert f"after: {n - 1} rows" in differ.stdout
    (only,) = [line for line in differ.stdout.splitlines() if line.startswith("only before")]
    assert f"'transform': '{dropped['transform']}'" in only
    assert f"'library': '{dropped['library']}'" in only


def test_training_memory_reads_each_training_jobs_benchmark(tmp_path: Path) -> None:
    """Two training jobs of a run: one with ok rows, one whose result file is missing; each row
    holds the planned memory and the measured PSS, and their ratio."""
    run = tmp_path / "run"
    where = "m/ds-0123456789ab/training/pillow"
    bench_file(run / f"benchmarks/{where}/w0.tsv", 50.0, rss=900.0, pss=800.0)
    bench_file(run / f"benchmarks/{where}/w2.tsv", 60.0, rss=2000.0, pss=1000.0)
    result = run / f"results/raw/{where}/w0.json"
    result.parent.mkdir(parents=True)
    rows = {"HorizontalFlip": {"status": "ok"}, "GaussianBlur": {"status": "ok"}}
    result.write_text(json.dumps({"metadata": {}, "results": rows}))
    output = tmp_path / "out/training_memory.tsv"
    done = run_tool("checks/training_memory.py", "--run", str(run), "--output", str(output))
    with output.open() as fh:
        table = {r["job"]: r for r in csv.DictReader(fh, delimiter="\t")}
    assert set(table) == {"w0", "w2"}
    assert table["w0"]["rows"] == "ok" and table["w2"]["rows"] == "no result file"
    for job, pss in (("w0", 800), ("w2", 1000)):
        row = table[job]
        assert row["library"] == "pillow" and int(row["measured_max_pss_mb"]) == pss
        predicted = float(row["predicted_mem_mb"])
        assert predicted > 0
        assert float(row["mem_over_pss"]) == round(predicted / pss, 2)
    # Two workers hold more than none: the plan grows with them.
    assert float(table["w2"]["predicted_mem_mb"]) > float(table["w0"]["predicted_mem_mb"])
    ratio = float(table["w0"]["mem_over_pss"])
    assert f"2 training jobs, 1 with ok rows: mem_mb / max_pss {ratio:.2f}-{ratio:.2f}" in (
        done.stdout
    )
    empty = run_tool("checks/training_memory.py", "--run", str(tmp_path / "none"),
                     "--output", str(output), check=False)  # fmt: skip
    assert empty.returncode == 1 and "no training benchmark" in empty.stderr


def test_cost_validation_pools_the_timed_rules_of_its_outputs(tmp_path: Path) -> None:
    """Two of its output files: the timed rules with 3 jobs or more are pooled (micro and
    cpu_dataloader), a rule of fewer jobs and a setup rule are not."""
    cost_validation = load_tool("checks/cost_validation.py")
    outputs = []
    for name, rows in (
        ("a", [("micro", 4, 0.70), ("cpu_dataloader", 8, 1.00), ("build_env", 5, 0.50)]),
        ("b", [("micro", 4, 1.30), ("pipeline_dataloader", 2, 2.00)]),
    ):
        path = tmp_path / name / "cost_validation.tsv"
        path.parent.mkdir()
        with path.open("w", newline="") as fh:
            out = csv.DictWriter(fh, cost_validation.COLUMNS, delimiter="\t", restval="n/a")
            out.writeheader()
            for rule, jobs, ratio in rows:
                out.writerow({"rule": rule, "jobs": jobs, "measured_over_predicted": ratio})
        outputs.append(str(path))
    done = run_tool("checks/cost_validation.py", "--pool", *outputs)
    assert done.stdout.strip() == (
        "3 rule results in 2 file(s): measured / predicted time 0.70-1.30, median 1.00; "
        "2 outside 0.75-1.25"
    )
    missing = run_tool("checks/cost_validation.py", check=False)
    assert missing.returncode == 2 and "give --measured" in missing.stderr


@pytest.mark.workflow
def test_cost_validation_compares_a_prediction_with_the_runs_benchmarks(tmp_path: Path) -> None:
    """A tiny configuration predicted (``snakemake cost``, the check's own step 1) from the
    shipped reference timings, no finished run to learn from, and the prediction saved; measured
    by benchmark files written here: each job as predicted (memory at 2/3 of the plan) except
    the micro jobs, twice as slow. The check, given the saved prediction: every rule with 3 jobs
    or more is within its targets but micro, which misses, and it exits 1."""
    cost_validation = load_tool("checks/cost_validation.py")
    config = ["preset=smoke", "machine=m", "libraries=[pillow,kornia,torchvision]",
              "regimes=[micro]"]  # fmt: skip
    predicted = cost_validation.predict(tmp_path / "no-run", config, REPO / ".venvs")
    prediction = tmp_path / "jobs.tsv"
    with prediction.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, list(predicted[0]), delimiter="\t")
        writer.writeheader()
        writer.writerows(predicted)
    measured = tmp_path / "measured"
    jobs: dict[str, dict[str, float]] = {}  # a job writing several result files: one benchmark
    setup: dict[str, int] = {}
    for row in predicted:
        if not row["benchmark"]:
            n = setup[row["rule"]] = setup.get(row["rule"], 0) + 1
            bench_file(measured / f"benchmarks/setup/{row['rule']}/{n}.tsv",
                       float(row["expected_s"]))  # fmt: skip
            continue
        slow = 2.0 if row["rule"] == "micro" else 1.0
        job = jobs.setdefault(row["benchmark"], {"s": 0.0, "rss": float(row["rss_mb"]) / 1.5,
                                                 "pss": float(row["mem_mb"]) / 1.5})  # fmt: skip
        job["s"] += slow * float(row["expected_s"])
    for benchmark, job in jobs.items():
        bench_file(measured / benchmark, job["s"], job["rss"], job["pss"])
    micro_jobs = len({r["benchmark"] for r in predicted if r["rule"] == "micro"})
    assert micro_jobs >= cost_validation.MIN_JOBS
    output = tmp_path / "cost_validation.tsv"
    done = run_tool(
        "checks/cost_validation.py", "--prediction", str(prediction),
        "--measured", str(measured), "--output", str(output),
        "--jobs-output", str(tmp_path / "jobs.tsv"), check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    with (tmp_path / "jobs.tsv").open() as fh:
        per_job = list(csv.DictReader(fh, delimiter="\t"))
    assert len(per_job) == len(jobs) and list(per_job[0]) == cost_validation.JOB_COLUMNS
    assert {r["measured_over_predicted"] for r in per_job if r["rule"] == "micro"} == {"2.00"}
    with output.open() as fh:
        rows = {r["rule"]: r for r in csv.DictReader(fh, delimiter="\t")}
    assert list(next(iter(rows.values()))) == list(cost_validation.COLUMNS)
    micro = rows["micro"]
    assert int(micro["jobs"]) == micro_jobs and micro["within_targets"] == "False"
    assert micro["measured_over_predicted"] == "2.00"
    assert micro["mem_over_measured_min"] == micro["mem_over_measured_max"] == "1.50"
    for rule, row in rows.items():
        if rule == "micro":
            continue
        assert row["measured_over_predicted"] in ("1.00", "n/a"), row
        expected = "n/a" if int(row["jobs"]) < cost_validation.MIN_JOBS else "True"
        assert row["within_targets"] == expected, row
    assert re.search(r"^micro\s+\d+\s+time\s+2\.00\s.*MISS$", done.stdout, re.M)


def test_cost_validation_splits_a_jobs_time_into_its_rows_work_and_the_rest(
    tmp_path: Path,
) -> None:
    """Protects the per-job split of --jobs-output: a job's rows' own work as the model counts it
    when it learns (test_cost's run of known numbers), and its process rounds; none for a kind
    priced by its wall time or a missing file."""
    from test_cost import DS, _local_run

    cost_validation = load_tool("checks/cost_validation.py")
    run = _local_run(tmp_path / "run")
    raw = f"results/raw/laptop/{DS}"
    work, rounds = cost_validation.measured_work(run, "micro", [f"{raw}/micro/pillow/s000.json"])
    assert (round(work, 6), rounds) == (1.3, 1)  # 0.3 s + 1 s of rows, one pyperf round
    work, _ = cost_validation.measured_work(
        run, "cpu_dataloader", [f"{raw}/cpu_dataloader/pillow/memory-w2-s000.json"]
    )
    assert round(work, 6) == 0.95  # regime 0.5 s, bare loop 0.25 s, transport baseline 0.2 s
    assert cost_validation.measured_work(run, "micro", [f"{raw}/micro/pillow/gone.json"]) is None


# -- maintenance ---------------------------------------------------------------------------------
def test_time_model_learns_a_runs_jobs_and_keeps_the_others_with_update(tmp_path: Path) -> None:
    from test_cost import _local_run

    from augbench.planning import plan

    run = _local_run(tmp_path / "run")
    output = tmp_path / "time_model.json"
    done = run_tool("maintenance/time_model.py", str(run), "--machine", "test VM",
                    "--output", str(output))  # fmt: skip
    payload = json.loads(output.read_text())
    assert payload["machine"] == "test VM" and payload["measured"]
    kinds = {(m["kind"], m["library"]) for m in payload["models"]}
    assert {("micro", "pillow"), ("cpu_dataloader", "pillow")} <= kinds
    assert f"{len(kinds)} job models -> {output}" in done.stdout
    models = plan.load_reference(output).models
    micro = models[("micro", "pillow")]  # the run's 6.3 s job: 1.3 s of work, 5 s overhead
    assert micro.overhead_s == pytest.approx(5.0) and micro.process_share == 0.5
    assert set(micro.per_image_s) == {"HorizontalFlip", "GaussianBlur"}
    # --kinds takes only micro from the run; --update keeps the file's other kinds.
    payload["models"] = [m for m in payload["models"] if m["kind"] != "micro"]
    output.write_text(json.dumps(payload))
    run_tool("maintenance/time_model.py", str(run), "--machine", "test VM", "--update",
             "--kinds", "micro", "--output", str(output))  # fmt: skip
    again = {(m["kind"], m["library"]) for m in json.loads(output.read_text())["models"]}
    assert again == kinds
    missing = run_tool("maintenance/time_model.py", str(tmp_path / "empty"), "--machine", "x",
                       "--output", str(tmp_path / "no.json"), check=False)  # fmt: skip
    assert missing.returncode == 1 and "no results/raw or benchmarks/" in missing.stderr


def test_render_transforms_doc_writes_the_committed_page(tmp_path: Path) -> None:
    output = tmp_path / "transforms.md"
    done = run_tool("maintenance/render_transforms_doc.py", "--output", str(output))
    assert f"wrote {output}" in done.stdout
    assert output.read_text() == (REPO / "docs/transforms.md").read_text()


# -- experiments that need no library env --------------------------------------------------------
def test_hd_archive_writes_1280x720_frames_the_workflow_takes(tmp_path: Path) -> None:
    from PIL import Image

    from augbench.planning.dataset import sha256_file

    archive = tmp_path / "hd.tar"
    done = run_tool("experiments/hd_archive.py", "--out", str(archive), "--images", "2")
    assert f"{archive}: 2 JPEGs of 1280x720, sha256 {sha256_file(archive)}" in done.stdout
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        assert len(members) == 2
        for member in members:
            with Image.open(tar.extractfile(member)) as img:
                assert img.format == "JPEG" and img.size == (1280, 720)
    again = tmp_path / "again.tar"
    run_tool("experiments/hd_archive.py", "--out", str(again), "--images", "2")
    assert sha256_file(again) == sha256_file(archive)  # deterministic


@pytest.mark.workflow
def test_plan_snapshot_saves_the_plan_and_names_what_changed(tmp_path: Path) -> None:
    """The smoke preset's local plan, compared with a saved snapshot holding one made-up job
    and saved: the made-up job is named as only before, every planned job as only after, and
    the status is 1; the saved plan, compared with itself less a job and with a flag changed,
    names both (the comparison the script prints)."""
    plan_snapshot = load_tool("checks/plan_snapshot.py")
    saved, before = tmp_path / "after.json", tmp_path / "before.json"
    made_up = {"rule": "made_up", "output": "nowhere.json", "engine": ["--x 1"]}
    before.write_text(json.dumps({"smoke": [made_up]}))
    done = run_tool("checks/plan_snapshot.py", "--presets", "smoke", "--local-only",
                    "--compare", str(before), "--save", str(saved), check=False)  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    snapshot = json.loads(saved.read_text())
    assert list(snapshot) == ["smoke"]
    jobs = snapshot["smoke"]
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"smoke: {len(jobs)} jobs (")
    assert "smoke: job only before: ('made_up', 'nowhere.json')" in lines
    assert sum(line.startswith("smoke: job only after: ") for line in lines) == len(jobs)
    micro = [j for j in jobs if j["rule"] == "micro"]
    flags = {flag for j in micro for flag in j["engine"]}
    assert {f"--library {lib}" for lib in ("pillow", "kornia", "torchvision")} <= flags
    changed = json.loads(saved.read_text())["smoke"]
    gone = changed.pop(next(i for i, j in enumerate(changed) if j["rule"] != "micro"))
    edited = next(j for j in changed if j["rule"] == "micro")
    edited["engine"] = [*edited["engine"], "--made-up 1"]
    differences = plan_snapshot.compare({"smoke": changed}, snapshot)
    assert f"smoke: job only after: ('{gone['rule']}', {gone.get('output')!r})" in differences
    assert any("flags removed ['--made-up 1'] added []" in d for d in differences)
    assert len(differences) == 2
    assert plan_snapshot.compare(snapshot, snapshot) == []


def _import_rss_on_pillow(
    tmp_path: Path, *args: str
) -> tuple[dict, dict, subprocess.CompletedProcess]:
    """tools/checks/import_rss.py measuring Pillow alone (``args``: its mode) into a copy of the
    shipped library_memory.json: (the shipped file, the written copy, the tool's run)."""
    from conftest import library_env

    library_env("pillow")
    shipped = json.loads((REPO / "augbench/planning/library_memory.json").read_text())
    output = tmp_path / "library_memory.json"
    output.write_text(json.dumps(shipped))
    done = run_tool("checks/import_rss.py", "--libraries", "pillow", "--repeats", "1", *args,
                    "--output", str(output))  # fmt: skip
    return shipped, json.loads(output.read_text()), done


def _without_pillow(found: dict) -> dict:
    return {k: v for k, v in found.items() if k != "pillow"}


@pytest.mark.envs
def test_import_rss_fits_a_librarys_working_copies_keeping_the_others(tmp_path: Path) -> None:
    from augbench.workload import adapters

    shipped, written, done = _import_rss_on_pillow(
        tmp_path, "--working-copies-only", "--working-px", "256"
    )
    copies = written["working_copies"]
    assert _without_pillow(copies) == _without_pillow(shipped["working_copies"])
    pillow = adapters.get("pillow")
    measured = copies["pillow"]
    assert measured and all(pillow.supports(name) for name in measured)
    assert all(isinstance(v, (int, float)) for v in measured.values())
    assert written["import_rss_mb"] == shipped["import_rss_mb"]  # not measured in this mode
    assert (written["image_px"], written["repeats"]) == (256, 1)
    assert written["tool"] == "tools/checks/import_rss.py"
    worst = max(measured, key=measured.get)
    assert f"# pillow: {len(measured)} transforms, up to {measured[worst]:.2f} copies" in (
        done.stdout
    )


@pytest.mark.envs
def test_import_rss_measures_a_librarys_process_keeping_the_working_copies(tmp_path: Path) -> None:
    shipped, written, done = _import_rss_on_pillow(tmp_path, "--imports-only")
    assert written["working_copies"] == shipped["working_copies"]  # not fitted in this mode
    for key in ("import_rss_mb", "import_anonymous_mb"):
        assert _without_pillow(written[key]) == _without_pillow(shipped[key])
    (alone, with_torch), (alone_anon, torch_anon) = (
        written["import_rss_mb"]["pillow"], written["import_anonymous_mb"]["pillow"]
    )  # fmt: skip
    assert (
        0 < alone < with_torch and 0 < alone_anon <= alone and alone_anon < torch_anon <= with_torch
    )
    assert "MANAGER_RSS_MB" not in done.stdout  # only with albumentationsx measured
    assert "TRAINING_MODEL_MB" not in done.stdout


@pytest.mark.envs
def test_import_rss_measures_a_librarys_dataloader_worker_keeping_the_rest(tmp_path: Path) -> None:
    """The worker probe runs the regime's DataLoader in Pillow's env at two JPEG sides: a worker
    holding more of its own at the larger side, the line through both written for Pillow alone.
    The sides lie far apart: a 1024 px image decodes to 3 MB, well above the megabyte or so that
    a worker's private pages move between two runs (128 against 512 px once measured 21 MB
    against 20)."""
    shipped, written, done = _import_rss_on_pillow(
        tmp_path, "--loader-worker-only", "--worker-px", "128", "1024", "--worker-images", "24"
    )
    for key in ("import_rss_mb", "working_copies"):
        assert written[key] == shipped[key]  # not measured in this mode
    assert _without_pillow(written["loader_worker"]) == _without_pillow(shipped["loader_worker"])
    fit = written["loader_worker"]["pillow"]
    assert fit["private_mb"] > 5 and fit["image_copies"] >= 0 and fit["file_mb"] > 5
    assert (written["worker_px"], written["worker_images"]) == ([128, 1024], 24)
    line = next(x for x in done.stdout.splitlines() if x.startswith("# pillow: a DataLoader"))
    small, large = map(float, re.findall(r"holds (\d+) MB of its own at \d+ px, (\d+) MB", line)[0])
    assert 5 < small <= large
    assert f"{fit['private_mb']:.0f} MB and {fit['image_copies']:.2f} images; " in line
    assert f"it touches {fit['file_mb']:.0f} MB of the libraries' files" in line


@pytest.mark.envs
def test_import_rss_measures_a_librarys_decode_floor_process_keeping_the_rest(
    tmp_path: Path,
) -> None:
    """The floor probe runs the engine's DecodeFloor (two forked processes) in Pillow's env at two
    JPEG sides: a process holding pages of its own, the line through both written for Pillow
    alone, nothing else measured."""
    shipped, written, done = _import_rss_on_pillow(
        tmp_path, "--floor-only", "--worker-px", "128", "512", "--worker-images", "12"
    )
    for key in ("import_rss_mb", "working_copies", "loader_worker"):
        assert written[key] == shipped[key]  # not measured in this mode
    assert _without_pillow(written["floor_process"]) == _without_pillow(shipped["floor_process"])
    fit = written["floor_process"]["pillow"]
    assert fit["private_mb"] >= 0 and fit["image_copies"] >= 0
    line = next(x for x in done.stdout.splitlines() if x.startswith("# pillow: a decode-floor"))
    small, large = map(float, re.findall(r"holds (\d+) MB of its own at \d+ px, (\d+) MB", line)[0])
    assert small > 0 and large > 0
    assert f"{fit['private_mb']:.0f} MB and {fit['image_copies']:.2f} images" in line


def test_suite_durations_sums_each_modules_entries_largest_first(tmp_path: Path) -> None:
    """pytest's --durations lines (set-ups, calls, tear-downs, parametrized ids with spaces) summed
    per module, the largest first, with the total; a log without them is one line and exit 1."""
    log = tmp_path / "pytest.log"
    log.write_text(
        "============ slowest durations ============\n"
        "300.50s setup    tests/test_a.py::test_run\n"
        "12.00s call     tests/test_b.py::test_x[one two]\n"
        "8.00s call     tests/test_b.py::test_y\n"
        "0.50s teardown tests/test_a.py::test_run\n"
        "(3 durations < 0.005s hidden.  Use -vv to show these durations.)\n"
        "===== 4 passed in 330.00s =====\n"
    )
    out = tmp_path / "modules.tsv"
    run_tool("reports/suite_durations.py", str(log), "--output", str(out))
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert rows == [
        ["module", "seconds", "longest_s", "entries", "share"],
        ["tests/test_a.py", "301.0", "300.5", "2", "0.938"],
        ["tests/test_b.py", "20.0", "12.0", "2", "0.062"],
        ["total", "321.0", "300.5", "4", "1.000"],
    ]
    log.write_text("===== 4 passed in 330.00s =====\n")
    done = run_tool("reports/suite_durations.py", str(log), check=False)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert "--durations=0" in done.stderr


def test_lock_envs_relocks_one_library_keeping_its_pins(tmp_path: Path) -> None:
    """``--only pillow`` on a copy of envs/: the lock is resolved again (uv, the package index)
    under its current pins, so every pin stays; the conda mirror lists exactly the lock's pins,
    and no other library's file moves."""
    from augbench.planning.provision import lock_pins, normalized_name

    envs = tmp_path / "envs"
    shutil.copytree(REPO / "envs", envs)
    committed = lock_pins(REPO / "envs/pillow.txt")
    done = run_tool("maintenance/lock_envs.py", "--only", "pillow", "--envs-dir", str(envs))
    assert f"locked {envs / 'pillow.txt'} (previous pins kept)" in done.stdout
    assert lock_pins(envs / "pillow.txt") == committed
    mirror = (envs / "pillow.yaml").read_text()
    assert mirror.startswith("# Generated by tools/maintenance/lock_envs.py from envs/pillow.txt")
    mirrored = re.findall(r"^      - (\S+)==(\S+)$", mirror, re.M)
    assert {normalized_name(name): v for name, v in mirrored} == committed
    # The other libraries' files are left as they were.
    for other in ("torchvision.txt", "kornia.yaml", "constraints.txt"):
        assert (envs / other).read_text() == (REPO / "envs" / other).read_text()


def test_transform_costs_writes_each_rows_rate_and_a_stopped_rows_preflight(
    tmp_path: Path,
) -> None:
    from test_cost import _write

    from augbench.planning import transform_prior

    run = tmp_path / "run"
    rows = {
        "HorizontalFlip": {"status": "ok", "median_throughput": 100.0},
        "MedianBlur": {"status": "early_stopped", "preflight_throughput": 5.0},
        "CLAHE": {"status": "unsupported"},
    }
    _write(run, "micro/pillow/s000", {"metadata": {"benchmark_params": {}}, "results": rows},
           9.0, megapixels=0.3)  # fmt: skip
    output = tmp_path / "transform_costs.json"
    done = run_tool("maintenance/transform_costs.py", str(run), "--machine", "test VM",
                    "--commit", "0" * 40, "--output", str(output))  # fmt: skip
    assert f"2 transform costs of 1 libraries -> {output}" in done.stdout
    prior = transform_prior.load(output)
    assert prior.seconds == {"pillow": {"HorizontalFlip": 0.01, "MedianBlur": 0.2}}
    assert prior.megapixels == 0.3 and prior.measured.startswith("test VM, ")
    assert prior.measured.endswith("transform_costs.yaml as of " + "0" * 40)
    empty = run_tool("maintenance/transform_costs.py", str(tmp_path / "none"), "--machine", "x",
                     "--output", str(tmp_path / "no.json"), check=False)  # fmt: skip
    assert empty.returncode == 1 and "no micro result files found" in empty.stderr


BUSY_TESTS = """
import subprocess, sys

def test_busy():
    spin = "import time\\nend = time.process_time() + 1.5\\nwhile time.process_time() < end: pass"
    subprocess.run([sys.executable, "-c", spin], check=True)

def test_idle():
    pass

def test_fails():
    assert False
"""


def test_suite_processes_charges_each_process_to_the_test_that_started_it(tmp_path: Path) -> None:
    """A process that spins 1.5 s of CPU is charged to the test that started it, nothing to the
    idle test; pytest's exit code (a failing test) is the tool's, and the tables are still
    written."""
    tests = tmp_path / "suite" / "test_busy.py"
    tests.parent.mkdir()
    tests.write_text(BUSY_TESTS)
    out = tmp_path / "profile"
    done = run_tool(
        "reports/suite_processes.py", "--output", str(out), "--",
        str(tests), "-p", "no:xdist", "-p", "no:cacheprovider", "-q", check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    assert "exit code 1" in (out / "summary.txt").read_text()
    with gzip.open(out / "processes.jsonl.gz", "rt") as fh:
        charged = [json.loads(line) for line in fh.read().splitlines()]
    busy = [p for p in charged if p["test"].endswith("test_busy.py::test_busy")]
    assert sum(p["cpu_s"] for p in busy) >= 1.2, busy
    assert {p["kind"] for p in busy} == {"other Python"}
    assert not [p for p in charged if p["test"].endswith("::test_idle")]
    events = [json.loads(line) for line in (out / "tests.jsonl").read_text().splitlines()]
    assert {e["test"].split("::")[1] for e in events} == {"test_busy", "test_idle", "test_fails"}
    modules = {
        row.split("\t")[0]: row.split("\t")
        for row in (out / "modules.tsv").read_text().splitlines()
    }
    module = next(m for m in modules if m.endswith("test_busy.py"))
    assert float(modules[module][1]) >= 1.2 and int(modules[module][2]) >= 1
    assert modules["module"] == ["module", "cpu_s", "processes", "library_env_processes", "share"]
    kinds = (out / "kinds.tsv").read_text().splitlines()
    assert kinds[0] == "kind\tcpu_s\tprocesses\tshare" and len(kinds) > 2
    # The tables again from the samples, running nothing: the same tables.
    tables = {name: (out / name).read_text() for name in ("modules.tsv", "kinds.tsv")}
    (out / "modules.tsv").unlink()
    run_tool("reports/suite_processes.py", "--output", str(out), "--tables-only")
    assert {name: (out / name).read_text() for name in tables} == tables
    tool = load_tool("reports/suite_processes.py")
    for program, kind in (
        ("/repo/.venvs/torchvision/bin/python -m augbench.measuring.engines.micro", "library env"),
        ("/opt/augbench/venvs/kornia/bin/python -c pass", "library env"),
        ("/repo/.venv/bin/python /w/.snakemake/scripts/tmpab12.aggregate.py", "workflow script"),
    ):
        assert tool.kind({"cmd": program, "comm": "python"}).startswith(kind), program
