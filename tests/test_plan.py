"""The plan printed before the first job (augbench.planning.plan): which jobs it counts in which
phase, and that its ETA comes from the cost model's models (reference file, then the working
directory's own timings). Its content is tested here, never its timing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from augbench.planning import cost, plan, regimes

CONFIG = {
    "num_images": 100,
    "micro": {"processes": 2, "min_processes": 1, "values": 5, "warmups": 1, "num_images": 32},
    "cpu_dataloader": {"batch_size": 8, "batches_per_run": 2, "num_runs": 2, "baseline_runs": 1},
    "cloud": {},
}
RAW = "results/raw/m/ds-0123456789ab"
MICRO = ("HorizontalFlip", "Affine")


def _by_output(*jobs: regimes.Job) -> dict[str, regimes.Job]:
    return {job.output: job for job in jobs}


# What augbench.planning.sweep.Sweep.cost_jobs gives the plan: the priced job behind each result
# file.
BY_OUTPUT = _by_output(
    regimes.Job("micro", "pillow", transforms=MICRO, output=f"{RAW}/micro/pillow/s000.json"),
    regimes.Job("micro", "kornia", transforms=MICRO, output=f"{RAW}/micro/kornia/s000.json"),
    regimes.Job("cpu_dataloader", "pillow", transforms=("HorizontalFlip",),
             output=f"{RAW}/cpu_dataloader/pillow/memory-w2-s000.json"),
)  # fmt: skip


def planned() -> list[plan.Planned]:
    jobs = [plan.Planned("build_env", {"library": lib}, f"results/envs/{lib}.json")
            for lib in ("pillow", "kornia")]  # fmt: skip
    jobs += [
        plan.Planned("build_default_archive", {"n": "300"}, "results/data/archives/d.tar"),
        plan.Planned("stage_dataset", {}, "results/data/ds/manifest.json"),
        plan.Planned("micro", {"library": "pillow"}, f"{RAW}/micro/pillow/s000.json"),
        plan.Planned("micro", {"library": "kornia"}, f"{RAW}/micro/kornia/s000.json"),
        plan.Planned("cpu_dataloader", {"library": "pillow"},
                     f"{RAW}/cpu_dataloader/pillow/memory-w2-s000.json"),
        plan.Planned("lazy_outputs", {"library": "pillow"}, "results/analysis/lazy/pillow.json"),
        plan.Planned("aggregate", {}, "results/tables/all_results.csv"),
        plan.Planned("draw_figures", {"root": "results"}, "results/figures"),
        plan.Planned("summary", {"root": "results"}, "results/analysis/summary.md"),
        plan.Planned("all", {}, ""),
        plan.Planned("some_new_rule", {}, "results/new/x.json"),
    ]  # fmt: skip
    return jobs


def models() -> dict:
    return {
        ("micro", "pillow"): cost.KindModel({"HorizontalFlip": 0.001, "Affine": 0.01}, 2.0),
        ("build_env", ""): cost.KindModel({}, 3.0),
        ("stage_dataset", ""): cost.KindModel({}, 1.0),
        ("build_default_archive", ""): cost.KindModel({}, 2.0),
        ("aggregate", ""): cost.KindModel({}, 4.0),
    }


def test_jobs_are_counted_per_phase_in_running_order() -> None:
    found = plan.phases(planned(), BY_OUTPUT, models(), CONFIG, cores=2)
    assert [(p.name, p.jobs) for p in found] == [
        ("setup", 4), ("micro", 2), ("cpu_dataloader", 1), ("lazy_outputs", 1), ("analysis", 3),
        ("some_new_rule", 1),
    ]  # fmt: skip
    by_name = {p.name: p for p in found}
    # kornia's micro job and the DataLoader and diagnostic jobs have no model: counted, not costed;
    # so is a rule the model does not know.
    assert by_name["micro"].unknown == 1 and by_name["some_new_rule"].unknown == 1
    assert by_name["cpu_dataloader"].unknown == 1 and by_name["lazy_outputs"].unknown == 1
    # Figures and summary have no timing: an assumed duration, said so.
    assert by_name["analysis"].assumed == 2 and by_name["setup"].assumed == 0


def test_the_plan_uses_the_cost_model_for_micro() -> None:
    """The micro phase is what augbench.planning.cost.seconds_per_job says for the same job."""
    found = {p.name: p for p in plan.phases(planned(), BY_OUTPUT, models(), CONFIG, cores=2)}
    job = BY_OUTPUT[f"{RAW}/micro/pillow/s000.json"]
    seconds, _ = cost.seconds_per_job([job], models(), CONFIG)
    assert found["micro"].seconds == seconds[job]


def test_printed_plan_names_every_phase_and_what_has_no_model() -> None:
    lines = plan.plan_lines(plan.phases(planned(), BY_OUTPUT, models(), CONFIG, 2), "reference")
    text = "\n".join(lines)
    assert lines[0].startswith("augbench plan: 12 jobs")
    for name in ("setup", "micro", "cpu_dataloader", "lazy_outputs", "analysis"):
        assert f"  {name} " in text
    assert "1 without a time model" in text and "2 at an assumed rate" in text
    assert "ETA ~" in lines[-1] and "plus 4 jobs without a time model" in lines[-1]
    assert lines[-1].endswith("time model: reference")


def test_local_timings_replace_the_reference_models(tmp_path: Path) -> None:
    reference = tmp_path / "time_model.json"
    plan.dump_models(models(), reference, "ref-vm", "2026-01-01")
    payload = json.loads(reference.read_text())
    assert payload["machine"] == "ref-vm" and len(payload["models"]) == len(models())
    run = tmp_path / "run"
    tsv = run / "benchmarks/setup/build_env/pillow.tsv"
    tsv.parent.mkdir(parents=True)
    tsv.write_text("s\th:m:s\n9.5\t0:00:09\n")
    loaded, source = plan.load_models(reference, run)
    assert loaded[("build_env", "")].overhead_s == 9.5  # measured here wins
    assert loaded[("build_env", "pillow")].overhead_s == 9.5  # and is Pillow's own build
    assert loaded[("micro", "pillow")].per_image_s == {"HorizontalFlip": 0.001, "Affine": 0.01}
    assert source.startswith("reference timings of ref-vm (2026-01-01) updated with 2 job")
    assert plan.load_models(None, tmp_path / "empty")[1] == "no timings"


def test_a_job_writing_one_file_per_setting_is_one_job_costed_for_all_of_them() -> None:
    """cpu_dataloader.job_per: library: one planned job, four result files: their work plus one
    per-process overhead."""
    outputs = tuple(f"{RAW}/cpu_dataloader/pillow/{s}-s000.json"
                    for s in ("memory-w0", "memory-w2", "decode-w0", "decode-w2"))  # fmt: skip
    grouped = plan.Planned("cpu_dataloader", {"library": "pillow"}, outputs[0], outputs)
    with_model = {
        **models(),
        ("cpu_dataloader", "pillow"): cost.KindModel({"HorizontalFlip": 0.01}, 1.5),
    }
    files = _by_output(*(regimes.Job("cpu_dataloader", "pillow", transforms=("HorizontalFlip",),
                                  share=4, output=out) for out in outputs))  # fmt: skip
    found = {p.name: p for p in plan.phases([grouped], files, with_model, CONFIG, cores=2)}
    one = regimes.Job("cpu_dataloader", "pillow", transforms=("HorizontalFlip",))
    seconds, _ = cost.seconds_per_job([one], with_model, CONFIG)
    work = seconds[one] - 1.5  # a job of its own: its work plus the whole 1.5 s overhead
    assert found["cpu_dataloader"].jobs == 1
    assert found["cpu_dataloader"].seconds == pytest.approx(1.5 + 4 * work)


def test_pipeline_jobs_have_their_own_phases() -> None:
    jobs = [
        plan.Planned("pipeline_breakdown", {"library": "pillow"}, "results/pipelines/raw/b.json"),
        plan.Planned("pipeline_dataloader", {"library": "pillow"}, "results/pipelines/raw/d.json"),
    ]
    with_model = {**models(), ("pipeline_breakdown", "pillow"): cost.KindModel({"p": 0.01}, 6.0)}
    params = {"num_images": 10, "min_values": 2, "max_values": 2, "warmups": 1}
    files = _by_output(regimes.Job("pipeline_breakdown", "pillow", transforms=("p",),
                                output=jobs[0].output, params_json=json.dumps(params)))  # fmt: skip
    found = {p.name: p for p in plan.phases(jobs, files, with_model, CONFIG, cores=2)}
    # 10 images x 0.01 s = 0.1 s per pass; one process of a warm-up + 2 values for each kind of
    # pass (steps, whole, bare): 9 passes; one round, in the job's own process.
    assert found["pipeline_breakdown"].seconds == pytest.approx(6.0 + 9 * 0.1)
    assert found["pipeline_breakdown"].unknown == 0
    assert found["pipeline_dataloader"].unknown == 1


def test_a_phase_of_several_runs_says_so() -> None:
    """cpu_dataloader.runs: 3: each run a job of its own, costed as such; the phase's line says
    that its jobs run 3 times."""
    model = {
        **models(),
        ("cpu_dataloader", "pillow"): cost.KindModel({"HorizontalFlip": 0.01}, 1.5),
    }
    jobs, files = [], {}
    for suffix in ("", "-run2", "-run3"):
        output = f"{RAW}/cpu_dataloader/pillow/memory-w2-s000{suffix}.json"
        jobs.append(plan.Planned("cpu_dataloader", {"library": "pillow", "run": suffix}, output))
        files[output] = regimes.Job("cpu_dataloader", "pillow", wildcards=(("run", suffix),),
                                    transforms=("HorizontalFlip",), output=output)  # fmt: skip
    (found,) = plan.phases(jobs, files, model, CONFIG, cores=2)
    assert (found.jobs, found.runs) == (3, 3)
    (line,) = [x for x in plan.plan_lines([found], "reference") if "cpu_dataloader" in x]
    assert line.endswith("(each job in 3 runs)")


def test_jobs_on_machines_of_their_own_are_not_planned_one_at_a_time() -> None:
    """A cloud or cluster executor: the header counts submissions (a group job is one), says how
    many run at once, and the ETA spreads the machine time over them, never below the longest
    submission plus its start-up."""
    found = plan.phases(planned(), BY_OUTPUT, models(), CONFIG, cores=2)
    work = sum(p.seconds for p in found)
    lines = plan.machine_lines(found, "reference", "googlebatch", [10.0, 20.0, 30.0], 2, 5.0)
    assert lines[0].startswith("augbench plan: 12 jobs as 3 googlebatch jobs, up to 2 at once")
    assert "one at a time on each machine" in lines[0]
    assert lines[1:-1] == plan.plan_lines(found, "reference")[1:-1]
    wall = max((work + 3 * 5.0) / 2, 30.0 + 5.0)
    assert lines[-1].startswith(f"  ETA ~{plan._minutes(wall)} with 2 googlebatch jobs at once")
    one = plan.machine_lines(found, "reference", "slurm", [600.0], 64, 0.0)
    assert one[-1].startswith("  ETA ~10.0 min with 64 slurm jobs at once")
    seconds = plan.job_seconds(planned(), BY_OUTPUT, models(), CONFIG)
    assert len(seconds) == len(planned()) and seconds[4] is not None  # pillow's micro job
