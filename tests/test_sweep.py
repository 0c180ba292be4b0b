"""The regime declarations (augbench/planning/regimes/) and the job lists they give
(augbench/planning/sweep.py), without Snakemake: which jobs each preset plans, their flags, and that
a regime added by a declaration alone reaches the plan and the cost estimate. One test asks
Snakemake which rules the workflow defines, so that no timed rule exists outside the
declarations."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import snakemake_runner
import yaml

from augbench import paths
from augbench.planning import command_line, cost, memory, plan, regimes, sweep
from augbench.planning.config import ConfigError, deep_merge, resolve
from augbench.planning.regimes.gpu import Stream
from augbench.workload.adapters.base import CPU_TRANSFORMS

REPO = Path(__file__).resolve().parents[1]
EVERYTHING = {
    "machine": "m",
    "libraries": ["albumentationsx", "torchvision", "kornia", "pillow", "dali"],
    "regimes": ["micro", "cpu_dataloader", "gpu_dataloader", "dali"],
}


def config(preset: str, **extra: object) -> dict:
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    return resolve(deep_merge(base, {"preset": preset, **EVERYTHING, **extra}), REPO)


def per_rule(jobs: list[sweep.Job]) -> dict[str, int]:
    return dict(Counter(job.rule for job in jobs))


def flags_by_result(
    planned: sweep.Sweep, kind: regimes.JobKind, jobs: list[sweep.Job]
) -> dict[str, dict]:
    """Each job's engine flags (its kind's args), by its first result file's name."""
    return {
        Path(j.outputs[0]).name: kind.args(
            planned, kind, {"library": j.library, "machine": "m", **dict(j.wildcards)}
        )
        for j in jobs
    }


def test_the_smoke_preset_plans_one_job_per_library_and_setting() -> None:
    s = sweep.Sweep(config("smoke"), "ds-0123456789ab")
    assert per_rule(s.jobs()) == {
        "micro": 4, "lazy_outputs": 4, "pipeline_breakdown": 4,
        "cpu_dataloader": 4, "pipeline_dataloader": 4,
        "gpu_dataloader": 6, "pipeline_gpu_dataloader": 6,
        "dali": 1, "dali_cpu": 1, "pipeline_dali": 1, "pipeline_dali_cpu": 1,
    }  # fmt: skip
    micro = next(j for j in s.jobs() if j.rule == "micro" and j.library == "kornia")
    assert micro.outputs == ("results/raw/m/ds-0123456789ab/micro/kornia/s000.json",)
    assert micro.transforms == tuple(s.transforms)


def test_the_paper_preset_counts_match_the_workflow_plan() -> None:
    """The counts `snakemake -n` plans for the paper preset (tools/checks/plan_snapshot.py)."""
    s = sweep.Sweep(config("paper"), "ds-0123456789ab", ("r1", "r2", "r3", "r4"))
    counts = per_rule(s.jobs())
    # micro at the staged size in the native layout (56 jobs) and the breakdown under each of
    # the preset's four allocator settings, the rest under glibc; the worker sweep on one shard
    # of six recipes, the other nine at 8 workers; the swept shard and the pipelines also at 8
    # workers under the other 11 decoder x loader pairs (6 decoders x 2 loaders, less the default).
    assert s.allocators == ["glibc", "glibc-steady", "mimalloc", "jemalloc"]
    feeds = 6 * 2 - 1
    assert counts["micro"] == 420 + 3 * 56
    assert counts["cpu_dataloader"] == 4 * (12 + 9 * 2 + feeds)
    assert counts["pipeline_breakdown"] == 4 * 4
    # nvJPEG: one shard (Identity and three recipes) per decode-scope setting: torchvision's two
    # randomness modes and Kornia's one, at 4 and 8 workers.
    assert counts["gpu_dataloader"] == 135 + 3 * 2 and counts["dali"] == counts["dali_cpu"] == 15
    assert counts["pipeline_dataloader"] == 48 + 4 * feeds
    assert counts["pipeline_gpu_dataloader"] == 9
    assert counts["decoders"] == 1
    # Resolution datasets get the resolution regimes' single-transform jobs only.
    derived = [j for j in s.jobs() if j.dataset != s.dataset]
    assert derived and {j.kind.role for j in derived} == {"results"}
    assert {j.kind.regime for j in derived} <= set(s.resolution_regimes)


def test_job_per_library_writes_the_same_result_files_as_job_per_setting() -> None:
    by_setting = sweep.Sweep(config("smoke", cpu_dataloader={"job_per": "setting"}), "d")
    by_library = sweep.Sweep(config("smoke", cpu_dataloader={"job_per": "library"}), "d")
    files = {s: s.outputs("results") for s in (by_setting, by_library)}
    assert sorted(files[by_setting]) == sorted(files[by_library])
    grouped = [j for j in by_library.jobs() if j.rule == "cpu_dataloader"]
    assert all(len(j.outputs) == len(by_library.dataloader_settings) for j in grouped)


@pytest.mark.parametrize("preset", ["smoke", "default", "paper"])
def test_every_job_has_its_engine_flags_once(preset: str) -> None:
    s = sweep.Sweep(config(preset), "ds-0123456789ab")
    for job in s.jobs():
        wildcards = s.wildcards_of(job)
        words = sweep.engine_command(s, job.kind, wildcards).split()
        flags = [w for w in words if w.startswith("--")]
        assert len(flags) == len(set(flags)), (job.rule, flags)
        assert "--manifest" not in flags and "--output" not in flags  # launcher's and rule's
        assert words[:2] == ["-m", job.kind.engine]


def test_only_the_gpu_variant_of_dali_gets_gpu_flags() -> None:
    s = sweep.Sweep(config("smoke"), "d")
    for job in s.jobs():
        if job.kind.regime != "dali":
            continue
        flags = sweep.engine_command(s, job.kind, s.wildcards_of(job))
        assert ("--gpu" in flags) == job.kind.gpu and ("--device-id" in flags) == job.kind.gpu


def test_every_result_path_maps_back_to_its_kind_and_wildcards() -> None:
    s = sweep.Sweep(config("default", micro={"layouts": ["native", "contiguous"]}), "d")
    for job in s.jobs():
        for path in job.outputs:
            kind, wildcards = regimes.kind_of_result(path)
            assert kind.rule == job.rule
            assert wildcards["library"] == job.library and wildcards["dataset"] == "d"


def test_tables_follow_the_configured_regimes() -> None:
    s = sweep.Sweep(config("smoke", regimes=["micro"]), "d")
    tables = s.table_outputs()
    assert "speedups_micro" in tables and "speedups_dali" not in tables
    assert "gpu_vs_cpu_ratio" not in tables and "worker_scaling_cpu_dataloader" not in tables
    full = sweep.Sweep(config("smoke"), "d").table_outputs()
    assert {"gpu_vs_cpu_ratio", "worker_scaling_cpu_dataloader", "speedups_dali"} <= set(full)


def test_a_config_naming_an_unknown_or_empty_regime_is_refused() -> None:
    problems = sweep.check_regimes({"libraries": ["pillow"], "regimes": ["micro", "dali"]})
    assert len(problems) == 1 and "'dali' measures ['dali']" in problems[0]
    assert "has no rules" in sweep.check_regimes({"libraries": ["pillow"], "regimes": ["x"]})[0]


# -- a new regime, by its declaration alone ----------------------------------------------------
def _dummy_jobs(s: sweep.Sweep, kind: regimes.JobKind, dataset: str) -> list[sweep.Job]:
    return [s.job(kind, lib, dataset, {"shard": "s000"}, s.transforms[:2])
            for lib in s.libraries_of(kind.regime)]  # fmt: skip


DUMMY = regimes.Regime(
    "dummy",
    CPU_TRANSFORMS,
    (
        regimes.JobKind(
            rule="dummy", regime="dummy", role="results",
            result="results/raw/{machine}/{dataset}/dummy/{library}/{shard}.json",
            log="{machine}/{dataset}/dummy/{library}/{shard}", placement="micro",
            engine="augbench.measuring.engines.dummy", pricing=Stream(), jobs=_dummy_jobs,
            args=lambda s, kind, w: {"library": w["library"], "shard": w["shard"]},
            threads=lambda s, w: 1, config_block="dali",
            memory=lambda s, kind, w: memory.Footprint(w["library"]),
        ),
    ),
)  # fmt: skip


@pytest.fixture
def dummy_regime():
    regimes.register(DUMMY)
    yield DUMMY
    regimes.unregister("dummy")


def test_a_registered_regime_is_planned_costed_and_tabled(dummy_regime) -> None:
    cfg = config("smoke", regimes=["micro", "dummy"], libraries=["pillow", "dali"])
    s = sweep.Sweep(cfg, "d")
    jobs = [j for j in s.jobs() if j.rule == "dummy"]
    assert [j.outputs for j in jobs] == [("results/raw/m/d/dummy/pillow/s000.json",)]
    assert sweep.engine_command(s, jobs[0].kind, s.wildcards_of(jobs[0])).endswith(
        "--library pillow --shard s000"
    )
    assert "speedups_dummy" in s.table_outputs()
    # The plan printed before a run: the new rule is a timed phase of its own.
    planned = [plan.Planned("dummy", s.wildcards_of(j), j.outputs[0]) for j in jobs]
    by_output = {j.output: j for j in s.cost_jobs() if j.output}
    phases = plan.phases(planned, by_output, {}, cfg, cores=2)
    assert [(p.name, p.jobs, p.unknown) for p in phases] == [("dummy", 1, 1)]
    # The cost estimate prices its jobs on its placement's machine (here: at an assumed rate).
    cfg["cloud"]["assumed_img_per_s"]["dummy"] = {"pillow": 100.0}
    rows = cost.estimate(s.cost_jobs(), {}, cfg, "e2-standard-2", set(), 0.0)
    dummy = next(r for r in rows if r.kind == "dummy")
    assert (
        dummy.jobs == 1 and dummy.machine_type == cfg["cloud"]["regimes"]["micro"]["machine_type"]
    )
    assert dummy.basis == "assumed" and dummy.seconds_expected and dummy.seconds_expected > 0
    assert "dummy" in s.planned_kinds()


def test_the_workflow_defines_a_rule_for_every_declared_kind_and_no_other_timed_rule() -> None:
    # Timed rules exist only for the configured regimes, so every regime is configured here.
    listed = snakemake_runner.run(
        ["--list-rules", "--config", "machine=m",
         "libraries=[albumentationsx,torchvision,kornia,pillow,dali]",
         "regimes=[micro,cpu_dataloader,gpu_dataloader,dali,training]", "resolutions=[224]"],
        REPO,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr[-3000:]
    listed = listed.stdout.split()
    targets = {"all", "figures", "plots", "cost", "collect_results", "answer"}
    untimed = set(regimes.SETUP_RULES) | set(regimes.ANALYSIS_RULES) | targets
    assert set(listed) - untimed == set(regimes.KINDS)
    profile = yaml.safe_load((REPO / "profiles" / "googlebatch" / "profile.yaml").read_text())
    assert set(profile["preemptible-rules"]) == set(regimes.timed_rules())


def test_each_allocator_setting_is_its_own_jobs_and_files() -> None:
    """allocators: every timed job once per setting, its files beside glibc's with the setting
    after the library; a diagnostic job once; the launcher starts the engine under it; the
    allocator-effect tables are planned; nothing else of a job changes."""
    one = sweep.Sweep(config("smoke"), "ds-0123456789ab")
    two = sweep.Sweep(config("smoke", allocators=["glibc", "mimalloc"]), "ds-0123456789ab")
    rules = per_rule(one.jobs())
    assert per_rule(two.jobs()) == {
        rule: count * (1 if regimes.KINDS[rule].role == "diagnostic" else 2)
        for rule, count in rules.items()
    }
    glibc = [j for j in two.jobs() if dict(j.wildcards)["allocator"] == ""]
    assert [j.outputs for j in glibc] == [j.outputs for j in one.jobs()]  # glibc's paths as ever
    mimalloc = [j for j in two.jobs() if dict(j.wildcards)["allocator"] == "+mimalloc"]
    micro = next(j for j in mimalloc if j.rule == "micro" and j.library == "kornia")
    assert micro.outputs == ("results/raw/m/ds-0123456789ab/micro/kornia+mimalloc/s000.json",)
    many = next(j for j in mimalloc if j.rule == "cpu_dataloader")  # job_per: library
    assert len(many.outputs) > 1 and all("+mimalloc/" in o for o in many.outputs)
    for job in mimalloc:
        wildcards = two.wildcards_of(job)
        assert job.kind.wildcards_of(job.outputs[0])["allocator"] == "+mimalloc"
        assert wildcards["library"] == job.library
        plain = {**wildcards, "allocator": ""}
        assert job.kind.args(two, job.kind, wildcards) == job.kind.args(two, job.kind, plain)
    launcher = two.launcher("kornia", "python", "+mimalloc")
    assert "--allocator mimalloc" in launcher
    assert "--allocator glibc" in two.launcher("kornia", "python", "")
    assert two.table_outputs()["allocator_effect"] == "results/tables/allocator_effect.csv"
    assert "allocator_effect" in two.pipeline_tables()
    assert "allocator_effect" not in one.table_outputs()
    assert "allocator_effect" not in one.pipeline_tables()
    assert paths.PIPELINE_ALLOCATOR_FIGURE in two.targets()
    assert paths.PIPELINE_ALLOCATOR_FIGURE not in one.targets()
    # The cost model prices every setting's jobs, each with its own benchmark file.
    priced = [j for j in two.cost_jobs() if j.rule == "micro"]
    assert len(priced) == 2 * len([j for j in one.cost_jobs() if j.rule == "micro"])
    assert any("/kornia+mimalloc/" in j.benchmark for j in priced)


def test_rules_constrain_library_and_allocator_inline() -> None:
    """Under a default storage provider an output's storage query keeps no global constraint, and
    it is parsed as a URL: the adjacent library and allocator wildcards carry their constraints
    in the pattern itself, with no "?" (a URL's query would cut the path there)."""
    import re

    for kind in regimes.KINDS.values():
        pattern = kind.output_pattern()
        found = re.search(r"\{library,([^}]*)\}\{allocator,([^}]*)\}", pattern)
        library, allocator = found.groups()
        assert "?" not in library + allocator
        lib = regimes.BY_NAME[kind.regime].libraries[0]
        both = re.compile(f"(?P<library>{library})(?P<allocator>{allocator})")
        assert both.fullmatch(lib).group("library", "allocator") == (lib, "")
        setting = both.fullmatch(f"{lib}+glibc-steady").group("library", "allocator")
        assert setting == (lib, "+glibc-steady")
    cpu = regimes.KINDS["cpu_dataloader"].output_pattern(
        scope="memory", workers="0", loader="", decoder=""
    )
    assert cpu.endswith("/memory-w0-{shard}{run,(|-run[0-9]+)}.json")
    assert "?" not in cpu


def test_runs_are_jobs_of_their_own_and_every_first_run_comes_before_any_second() -> None:
    """cpu_dataloader.runs and training.runs: each job runs that many times, run 1 at the paths
    a single run writes and run k at ``-run<k>``, its own log and benchmark file; the
    scheduler's priorities put every job's run k before any job's run k + 1 (a supply run and
    the training runs it predicts alternate) and keep a unit's allocator settings adjacent."""
    base = {"regimes": ["cpu_dataloader", "training"], "allocators": ["glibc", "mimalloc"]}
    once = sweep.Sweep(config("smoke", **base), "d")
    runs = sweep.Sweep(
        config("smoke", **base, cpu_dataloader={"runs": 3}, training={"runs": 2}), "d"
    )
    assert per_rule(runs.jobs())["cpu_dataloader"] == 3 * per_rule(once.jobs())["cpu_dataloader"]
    assert per_rule(runs.jobs())["training"] == 2 * per_rule(once.jobs())["training"]
    first = [j for j in runs.jobs() if dict(j.wildcards).get("run") == ""]
    assert sorted(p for j in first for p in j.outputs) == sorted(
        p for j in once.jobs() for p in j.outputs
    )
    run3 = [j for j in runs.jobs() if dict(j.wildcards).get("run") == "-run3"]
    assert run3 and {j.rule for j in run3} == {"cpu_dataloader", "pipeline_dataloader"}
    for job in run3:
        for output in job.outputs:
            assert output.endswith("-run3.json")
            kind, wildcards = regimes.kind_of_result(output)
            assert kind.rule == job.rule and wildcards["run"] == "-run3"
            assert regimes.without_run(output) == (output.replace("-run3.json", ".json"), 3)
    priced = {j.benchmark for j in runs.cost_jobs() if j.rule in regimes.KINDS and j.kind.runs_key}
    assert len(priced) == len({tuple(j.outputs) for j in runs.jobs() if j.kind.runs_key})

    def priority(job: sweep.Job) -> int:
        wildcards = {"machine": "m", "dataset": job.dataset, "library": job.library,
                     **dict(job.wildcards)}  # fmt: skip
        return runs.timed_priority(job.kind, wildcards)

    order = sorted(runs.jobs(), key=priority, reverse=True)
    numbers = [regimes.run_number(dict(j.wildcards)["run"]) for j in order]
    assert numbers == sorted(numbers)
    in_run_1 = [j for j in order if dict(j.wildcards)["run"] == ""]
    units = [runs._unit(j.rule, j.library, j.dataset, dict(j.wildcards)) for j in in_run_1]
    assert all(units[i] == units[i + 1] for i in range(0, len(units), 2))
    assert len({priority(j) for j in runs.jobs()}) == len(runs.jobs())
    assert regimes.run_suffix(1) == "" and regimes.run_number(regimes.run_suffix(4)) == 4


def test_a_setting_path_splits_back_into_library_and_setting() -> None:
    assert regimes.split_allocator("kornia+glibc-steady") == ("kornia", "glibc-steady")
    assert regimes.split_allocator("kornia") == ("kornia", "glibc")
    for setting in ("glibc", "glibc-steady", "mimalloc", "jemalloc"):
        assert regimes.allocator_setting(regimes.allocator_suffix(setting)) == setting


def test_an_unknown_allocator_is_refused_with_the_allowed_names() -> None:
    from augbench.logs import UserError

    with pytest.raises(UserError, match="allocators") as caught:
        config("smoke", allocators=["glibc", "tcmalloc"])
    for name in ("glibc-steady", "mimalloc", "jemalloc"):
        assert name in str(caught.value)


def test_a_work_units_allocator_settings_run_one_after_another() -> None:
    """With several allocator settings, the scheduler's priorities keep a work unit's settings
    adjacent (the unit's jobs run back to back), units in plan order, the settings' order
    reversed every other unit; one setting: no priorities at all."""
    s = sweep.Sweep(config("smoke", allocators=["glibc", "mimalloc"]), "ds-0123456789ab")

    def priority(job: sweep.Job) -> int:
        wildcards = {"machine": "m", "dataset": job.dataset, "library": job.library,
                     **dict(job.wildcards)}  # fmt: skip
        return s.timed_priority(job.kind, wildcards)

    jobs = [j for j in s.jobs() if j.kind.role in regimes.ALLOCATOR_ROLES]
    order = sorted(jobs, key=priority, reverse=True)
    units = [s._unit(j.rule, j.library, j.dataset, dict(j.wildcards)) for j in order]
    # Each unit's two settings are neighbours in the order the scheduler picks them.
    assert all(units[i] == units[i + 1] for i in range(0, len(units), 2))
    settings = [dict(j.wildcards)["allocator"] for j in order]
    assert settings[:4] == ["", "+mimalloc", "+mimalloc", ""]
    assert len({priority(j) for j in jobs}) == len(jobs)
    single = sweep.Sweep(config("smoke"), "ds-0123456789ab")
    one = {"library": "pillow", "dataset": "ds-0123456789ab", "shard": "s000", "allocator": ""}
    assert single.timed_priority(regimes.KINDS["micro"], one) == 0


def test_training_rows_without_their_supply_are_named_before_the_run() -> None:
    """A training row's out-of-sample prediction needs the cpu_dataloader decode row of its
    recipe, workers and batch: the plan names the rows that will have none."""
    both = config("smoke", regimes=["cpu_dataloader", "training"])
    assert both["training"]["workers"] == both["cpu_dataloader"]["workers"]  # taken from it
    assert sweep.Sweep(both, "ds-0123456789ab").training_supply_gaps() == []
    alone = sweep.Sweep(config("smoke", regimes=["training"]), "ds-0123456789ab")
    (line,) = alone.training_supply_gaps()
    assert "training RandomResizedCrop at workers [0, 2], batch 4" in line
    assert "no out-of-sample prediction" in line
    other = config("smoke", regimes=["cpu_dataloader", "training"], training={"workers": [1]})
    (line,) = sweep.Sweep(other, "ds-0123456789ab").training_supply_gaps()
    assert "workers [1]" in line


def test_only_the_sweep_recipes_get_every_worker_count() -> None:
    swept = ["RandomResizedCrop", "GaussianBlur"]
    s = sweep.Sweep(config("paper", cpu_dataloader={
        "transforms": ["HorizontalFlip", *swept, "Affine"], "shard_size": 2,
        "workers": [0, 1, 2, 4], "other_workers": [4], "sweep_transforms": swept,
    }), "d")  # fmt: skip
    assert s.dataloader_shards == {"s000": swept, "s001": ["HorizontalFlip", "Affine"]}
    jobs = [j for j in s.jobs() if j.rule == "cpu_dataloader" and j.library == "pillow"]
    settings = {dict(j.wildcards)["shard"]: set() for j in jobs}
    for j in jobs:
        w = dict(j.wildcards)
        if not w["allocator"]:
            settings[w["shard"]].add(f"{w['scope']}-w{w['workers']}")
    assert settings["s000"] == {f"{sc}-w{n}" for sc in ("memory", "decode") for n in (0, 1, 2, 4)}
    assert settings["s001"] == {"memory-w4", "decode-w4"}
    problems = sweep.check_regimes(config("paper", cpu_dataloader={
        "sweep_transforms": ["Nope"], "job_per": "library"}))  # fmt: skip
    assert any("'Nope'" in p or "['Nope']" in p for p in problems)
    assert any("needs job_per: setting" in p for p in problems)


def test_allocator_settings_after_the_first_run_only_the_named_rules() -> None:
    rules = {"rules": ["micro", "pipeline_breakdown"]}
    s = sweep.Sweep(config("smoke", allocators=["glibc", "mimalloc"], allocator_jobs=rules), "d")
    settings = Counter((j.rule, dict(j.wildcards)["allocator"]) for j in s.jobs())
    assert settings[("micro", "+mimalloc")] == settings[("micro", "")] > 0
    assert settings[("pipeline_breakdown", "+mimalloc")] > 0
    assert settings[("cpu_dataloader", "")] > 0 and ("cpu_dataloader", "+mimalloc") not in settings
    every = sweep.Sweep(config("smoke", allocators=["glibc", "mimalloc"]), "d")
    assert ("cpu_dataloader", "+mimalloc") in {
        (j.rule, dict(j.wildcards)["allocator"]) for j in every.jobs()
    }
    # The staged size in the native layout only: no derived dataset, no contiguous shard.
    narrow = sweep.Sweep(
        config("smoke", allocators=["glibc", "mimalloc"],
               micro={"layouts": ["native", "contiguous"]},
               allocator_jobs={"rules": ["micro"], "resolution_sweep": False,
                               "layouts": ["native"]}),
        "d", ("d-r512",),
    )  # fmt: skip
    swept = [j for j in narrow.jobs() if dict(j.wildcards)["allocator"] == "+mimalloc"]
    assert swept and {j.rule for j in swept} == {"micro"} and {j.dataset for j in swept} == {"d"}
    assert not any(dict(j.wildcards)["shard"].startswith("contiguous-") for j in swept)
    assert any(dict(j.wildcards)["shard"].startswith("contiguous-") for j in narrow.jobs())


def test_a_local_run_does_not_refuse_jobs_that_would_only_write_skipped_rows() -> None:
    """More DataLoader or training workers than this machine's cores: `skipped` rows, nothing
    loaded, so no memory to refuse them for; without the cap they would load and are checked."""
    s = sweep.Sweep(config("smoke", regimes=["cpu_dataloader", "training"],
                           cpu_dataloader={"workers": [1, 64], "job_per": "setting"},
                           pipeline_runs={"dataloader_workers": [64]},
                           training={"workers": [64]}), "d")  # fmt: skip
    wide = [j for j in s.jobs() if dict(j.wildcards).get("workers") == "64"]
    assert {j.rule for j in wide} == {"cpu_dataloader", "pipeline_dataloader", "training"}
    assert all(s.skipped_for_cores(j, 2) for j in wide)
    assert not any(s.skipped_for_cores(j, 128) for j in wide)
    checked = {(c.rule, c.wildcards) for c in s.memory_checks(lambda k: ("here", 10**6), 2)}
    assert not any("workers 64" in w for _, w in checked) and checked
    uncapped = sweep.Sweep(config("smoke", regimes=["cpu_dataloader"], cpu_dataloader={
        "workers": [64], "job_per": "setting", "cap_workers_at_cores": False}), "d")  # fmt: skip
    assert not any(uncapped.skipped_for_cores(j, 2) for j in uncapped.jobs())


@pytest.mark.parametrize(
    ("argv", "targets"),
    [
        (["/venv/bin/snakemake", "cost", "--cores", "1", "--config", "preset=paper"], {"cost"}),
        (["/venv/lib/snakemake/__main__.py", "--snakefile", "S", "cost"], {"cost"}),
        (["/venv/bin/snakemake", "--cores", "2"], set()),
        (["pytest", "cost"], set()),
    ],
)
def test_the_command_line_targets_are_read_with_snakemakes_parser(argv, targets) -> None:
    assert command_line.targets(argv) == targets


def test_training_runs_each_decoder_where_the_cpu_dataloader_regime_measures_it() -> None:
    """cpu_dataloader.decoders is read by training too: each other decoder at the training
    worker counts its supply is measured at (feed_workers), on the cpu feed only; the library's
    own decode at every training worker count, the results named as before."""
    cfg = config(
        "smoke", libraries=["torchvision", "dali"], regimes=["cpu_dataloader", "training"],
        cpu_dataloader={"decoders": ["native", "simplejpeg"], "feed_workers": [2],
                        "workers": [0, 2], "scopes": ["decode"]},
        training={"workers": [0, 2], "feeds": ["cpu", "gpu"]},
    )  # fmt: skip
    planned = sweep.Sweep(cfg, "d")
    jobs = [j for j in planned.jobs() if j.rule == "training" and j.library == "torchvision"]
    names = sorted(Path(j.outputs[0]).name for j in jobs)
    assert names == ["w0.json", "w2-simplejpeg.json", "w2.json"]
    # DALI's own pipeline decodes: its library's decode only.
    dali = [Path(j.outputs[0]).name for j in planned.jobs() if j.library == "dali"]
    assert "w2.json" in dali and "w2-simplejpeg.json" not in dali
    kind = regimes.KINDS["training"]
    flags = flags_by_result(planned, kind, jobs)
    assert flags["w2-simplejpeg.json"]["decoder"] == "simplejpeg"
    assert flags["w2-simplejpeg.json"]["feeds"] == "cpu"
    assert "decoder" not in flags["w2.json"] and flags["w2.json"]["feeds"] == "cpu,gpu"
    # Its supply is the cpu_dataloader row of the same decoder and workers.
    supply = [Path(o).name for j in planned.jobs() if j.rule == "cpu_dataloader" for o in j.outputs]
    assert "decode-w2-simplejpeg-s000.json" in supply


def test_the_gpu_dataloader_nvjpeg_decoder_adds_the_decode_scopes_single_transform_jobs() -> None:
    """gpu_dataloader.decoders naming nvjpeg adds each decode-scope setting again, named
    decode-nvjpeg_w..., passing --decoder nvjpeg; the memory scope (nothing decoded in the clock)
    and the pipelines keep the workers' decoder, their results named as before."""
    cfg = config(
        "smoke", libraries=["torchvision", "kornia"], regimes=["gpu_dataloader"],
        gpu_dataloader={"decoders": ["native", "nvjpeg"], "workers": [2],
                        "torchvision_randomness": ["per-sample"]},
        pipelines=["config/pipelines/train_light.yaml"],
    )  # fmt: skip
    planned = sweep.Sweep(cfg, "d")
    jobs = [j for j in planned.jobs() if j.rule == "gpu_dataloader" and j.library == "torchvision"]
    names = sorted(Path(j.outputs[0]).name for j in jobs)
    assert names == [
        "decode-nvjpeg_w2_per-sample_s000.json",
        "decode_w2_per-sample_s000.json",
        "memory_w0_per-sample_s000.json",
    ]
    kind = regimes.KINDS["gpu_dataloader"]
    flags = flags_by_result(planned, kind, jobs)
    assert flags["decode-nvjpeg_w2_per-sample_s000.json"]["decoder"] == "nvjpeg"
    assert "decoder" not in flags["decode_w2_per-sample_s000.json"]
    pipelines = [
        Path(j.outputs[0]).name for j in planned.jobs() if j.rule.startswith("pipeline_gpu")
    ]
    assert pipelines and not [name for name in pipelines if "nvjpeg" in name]
    # The rule's own pattern reads the name back.
    wildcards = kind.wildcards_of(
        jobs[0].outputs[0]
        if "nvjpeg" in jobs[0].outputs[0]
        else next(j.outputs[0] for j in jobs if "nvjpeg" in j.outputs[0])
    )
    assert wildcards is not None and wildcards["decoder"] == "-nvjpeg"


def test_training_feeds_its_gpu_feed_with_nvjpeg_where_the_gpu_dataloader_names_it() -> None:
    """gpu_dataloader.decoders naming nvjpeg adds, per training worker count, a GPU-feed job
    decoded on the device (w<workers>-nvjpeg, --feeds gpu --decoder nvjpeg) for the libraries that
    augment on the GPU; none where the GPU feed is not configured."""
    cfg = config(
        "smoke", libraries=["torchvision", "pillow"], regimes=["training"],
        gpu_dataloader={"decoders": ["native", "nvjpeg"]},
        training={"workers": [1, 2], "feeds": ["cpu", "gpu"]},
    )  # fmt: skip
    planned = sweep.Sweep(cfg, "d")
    jobs = [j for j in planned.jobs() if j.rule == "training"]
    names = sorted(f"{j.library}/{Path(j.outputs[0]).name}" for j in jobs)
    assert names == [
        "pillow/w1.json", "pillow/w2.json", "torchvision/w1-nvjpeg.json",
        "torchvision/w1.json", "torchvision/w2-nvjpeg.json", "torchvision/w2.json",
    ]  # fmt: skip
    kind = regimes.KINDS["training"]
    job = next(j for j in jobs if j.outputs[0].endswith("w2-nvjpeg.json"))
    flags = kind.args(
        planned, kind, {"library": job.library, "machine": "m", **dict(job.wildcards)}
    )
    assert (flags["decoder"], flags["feeds"]) == ("nvjpeg", "gpu")
    cpu_only = config(
        "smoke", libraries=["torchvision"], regimes=["training"],
        gpu_dataloader={"decoders": ["native", "nvjpeg"]}, training={"feeds": ["cpu"]},
    )  # fmt: skip
    assert not [j for j in sweep.Sweep(cpu_only, "d").jobs() if "nvjpeg" in j.outputs[0]]


def test_nvjpeg_measures_the_decoder_transforms_after_the_identity_baseline() -> None:
    """gpu_dataloader.decoder_transforms: the nvJPEG jobs measure Identity and the run's recipes
    named there (in the run's order; one not configured is left out), the workers' decoder every
    recipe; the plan prices each job by its own recipes."""
    cfg = config(
        "smoke", libraries=["torchvision"], regimes=["gpu_dataloader"],
        transforms=["HorizontalFlip", "RandomResizedCrop", "ColorJitter"],
        gpu_dataloader={"decoders": ["native", "nvjpeg"], "workers": [2], "shard_size": 10,
                        "torchvision_randomness": ["per-sample"],
                        "decoder_transforms": ["ColorJitter", "HorizontalFlip", "Affine"]},
    )  # fmt: skip
    planned = sweep.Sweep(cfg, "d")
    kind = regimes.KINDS["gpu_dataloader"]
    decode = [
        j for j in planned.jobs()
        if j.rule == "gpu_dataloader" and dict(j.wildcards)["scope"] == "decode"
    ]  # fmt: skip
    recipes = {name: f["transforms"] for name, f in flags_by_result(planned, kind, decode).items()}
    assert recipes == {
        "decode_w2_per-sample_s000.json": [
            "Identity", "HorizontalFlip", "RandomResizedCrop", "ColorJitter"
        ],
        "decode-nvjpeg_w2_per-sample_s000.json": ["Identity", "HorizontalFlip", "ColorJitter"],
    }  # fmt: skip
    only_identity = config(
        "smoke", libraries=["torchvision"], regimes=["gpu_dataloader"],
        gpu_dataloader={"decoders": ["native", "nvjpeg"], "decoder_transforms": ["Identity"]},
    )  # fmt: skip
    planned = sweep.Sweep(only_identity, "d")
    assert {
        tuple(planned.gpu_decoder_shards[dict(j.wildcards)["shard"]])
        for j in planned.jobs()
        if j.rule == "gpu_dataloader" and dict(j.wildcards).get("decoder")
    } == {("Identity",)}
    with pytest.raises(ConfigError, match=r"decoder_transforms\[0\]: 'Nope' is not one of"):
        config("smoke", gpu_dataloader={"decoder_transforms": ["Nope"]})


def test_a_library_job_of_one_setting_is_priced_under_its_own_benchmark() -> None:
    """A job_per: library DataLoader job of a sweep with one setting writes one result file, and
    still has the library job's benchmark file, which the cost estimate prices (not a per-setting
    one, whose wildcards the library job lacks)."""
    dl = {"job_per": "library", "transforms": ["HorizontalFlip"], "scopes": ["decode"],
          "workers": [2]}  # fmt: skip
    s = sweep.Sweep(config("default", cpu_dataloader=dl), "d")
    loaders = [j for j in s.cost_jobs() if j.rule == "cpu_dataloader"]
    assert loaders and all(j.benchmark.endswith("/all-settings-s000.tsv") for j in loaders)
    assert all(j.output.endswith("decode-w2-s000.json") for j in loaders)
