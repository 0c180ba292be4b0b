"""GPU regimes, the parts that need neither a GPU nor a library env: the DALI mapping table,
the recipe definition, the stream timer (synchronization inside the clock, with its negative
control), CUDA/driver detection (driver-mismatch rows, gpu=required), process isolation of
recipes, config blocks and the GPU-vs-CPU tables."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pandas as pd
import pytest

from augbench import cuda_env
from augbench.analysis import gpu
from augbench.measuring.engines import skeleton
from augbench.measuring.engines.streaming import StreamPlan, run_stream
from augbench.planning.config import ConfigError, resolve
from augbench.policy import SlowTransformPolicy
from augbench.workload import adapters, catalog, gpu_recipes

REPO = Path(__file__).resolve().parents[1]


# -- DALI mapping ---------------------------------------------------------------------------
def test_dali_maps_catalog_transforms_to_dali_operators() -> None:
    dali = adapters.get("dali")
    assert set(dali.mappings) <= set(catalog.names())
    for name, mapping in dali.mappings.items():
        assert mapping.call.startswith("fn."), name
    assert dali.mappings["HorizontalFlip"].call == "fn.flip(horizontal=1)"
    assert dali.mappings["GaussianBlur"].call == "fn.gaussian_blur(window_size=9, sigma=2.0)"
    assert "hue=fn.random.uniform(-36, 36) degrees" in dali.mappings["ColorJitter"].call


def test_transforms_dali_cannot_express_are_unsupported_with_a_reason() -> None:
    dali = adapters.get("dali")
    unsupported = {name for name in catalog.names() if not dali.supports(name)}
    # Point operations DALI has no operator for are unsupported, never rebuilt from arithmetic;
    # the rest of the paper set that DALI lacks (Elastic, CLAHE, Rain, ...) is unsupported too.
    assert {
        "Posterize",
        "Solarize",
        "Sharpen",
        "Invert",
        "AutoContrast",
        "ChannelShuffle",
    } <= unsupported
    assert set(dali.mappings) | unsupported == set(catalog.names())
    for name in unsupported:
        assert "dali has no" in dali.unsupported_reason(name)
        with pytest.raises(adapters.Unsupported, match="dali has no"):
            dali.build(name, catalog.get(name).params)


def test_dali_is_registered_as_an_adapter_without_importing_dali() -> None:
    import sys

    assert "dali" in adapters.names()
    adapters.get("dali")
    assert "nvidia.dali" not in sys.modules


# -- recipes -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("transform", "recipe", "worker_crop", "output"),
    [
        ("Rotate", "RandomCrop224 + Rotate + Normalize", (224, 224), (224, 224)),
        ("Resize", "RandomCrop224 + Resize + Normalize", (224, 224), (512, 512)),
        ("RandomResizedCrop", "RandomResizedCrop + Normalize", (256, 256), (224, 224)),
        ("CenterCrop224", "CenterCrop224 + Normalize", (256, 256), (224, 224)),
        ("RandomCrop224", "RandomCrop224 + Normalize", (256, 256), (224, 224)),
        ("Identity", "RandomCrop224 + Normalize (identity baseline)", (224, 224), (224, 224)),
        ("Pad", "RandomCrop224 + Pad + Normalize", (224, 224), (244, 244)),
        ("LongestMaxSize", "RandomCrop224 + LongestMaxSize + Normalize", (224, 224), (512, 512)),
        ("SmallestMaxSize", "RandomCrop224 + SmallestMaxSize + Normalize", (224, 224), (512, 512)),
    ],
)
def test_recipe_strings_and_shapes(
    transform: str, recipe: str, worker_crop: tuple[int, int], output: tuple[int, int]
) -> None:
    assert gpu_recipes.recipe(transform) == recipe
    assert gpu_recipes.worker_crop(transform, 256) == worker_crop
    assert gpu_recipes.output_hw(transform) == output


def test_kornia_is_per_sample_only_and_torchvision_has_both_modes() -> None:
    assert gpu_recipes.randomness_of("kornia") == ("per-sample",)
    assert set(gpu_recipes.randomness_of("torchvision")) == set(gpu_recipes.RANDOMNESS)
    assert gpu_recipes.randomness_of("pillow") == ()


# -- stream timer ---------------------------------------------------------------------------------
POLICY = SlowTransformPolicy()


def test_plan_covers_first_batch_preflight_warmup_and_repetitions() -> None:
    plan = StreamPlan.for_images(12, 4, warmup_reps=1, reps=2, policy=POLICY)
    assert (plan.batches_per_rep, plan.preflight_batches) == (3, 3)
    assert plan.total_batches == 1 + 3 + (1 + 2) * 3


def test_plan_rejects_bad_sizes() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        StreamPlan.for_images(12, 0, warmup_reps=1, reps=2, policy=POLICY)


def test_sync_runs_before_every_clock_stop_and_its_time_is_measured() -> None:
    """The CPU stand-in for the CUDA sleep test: work that only completes in sync() (as queued
    GPU work does) must be inside each repetition's time."""
    plan = StreamPlan.for_images(8, 4, warmup_reps=1, reps=3, policy=POLICY)
    events: list[str] = []
    pending: list[float] = []

    def step() -> int:
        events.append("step")
        pending.append(0.02)  # "launched" work, finished only by sync
        return 4

    def sync() -> None:
        events.append("sync")
        time.sleep(sum(pending))
        pending.clear()

    result = run_stream(step, sync, plan, POLICY)
    assert events.count("step") == plan.total_batches
    assert events[-1] == "sync"
    assert len(result.times) == 3 == len(result.throughputs)
    for seconds in result.times:
        assert seconds >= plan.batches_per_rep * 0.02
    assert result.images_per_rep == plan.batches_per_rep * 4
    assert result.preflight["preflight_items"] == plan.preflight_batches * 4


def test_negative_control_a_timer_without_sync_misses_the_pending_work() -> None:
    """The same stand-in with sync() doing nothing (synchronisation removed): the "launched"
    work is never waited for inside the clock, so every repetition is far below its floor. If
    this ever measured the work, the positive test above would prove nothing."""
    plan = StreamPlan.for_images(8, 4, warmup_reps=1, reps=3, policy=POLICY)
    pending_s = 0.2  # nobody waits for it, so it costs nothing; large against a loaded
    # machine's stalls, which a repetition of two empty steps must not be mistaken for

    def step() -> int:
        return 4  # launches pending_s of work that nobody waits for

    result = run_stream(step, lambda: None, plan, POLICY)
    for seconds in result.times:
        assert seconds < 0.5 * plan.batches_per_rep * pending_s


def test_slow_preflight_stops_early_without_measuring() -> None:
    policy = SlowTransformPolicy(preflight_items=2, max_seconds_per_item=0.001)
    plan = StreamPlan.for_images(8, 1, warmup_reps=1, reps=2, policy=policy)
    calls = []

    def step() -> int:
        calls.append(1)
        time.sleep(0.005)
        return 1

    result = run_stream(step, lambda: None, plan, policy)
    assert result.early_stop_reason and "s/item" in result.early_stop_reason
    assert len(calls) == 1 + plan.preflight_batches
    assert result.throughputs == []


# -- config ---------------------------------------------------------------------------------------
BASE = {
    "machine": "auto",
    "dataset": {"archive": None},
    "libraries": ["torchvision", "kornia", "dali"],
    "regimes": ["gpu_dataloader", "dali"],
    "envs": {},
}


@pytest.mark.parametrize("preset", ["smoke", "default", "paper"])
def test_presets_have_gpu_blocks(preset: str) -> None:
    cfg = resolve({**BASE, "preset": preset}, REPO)
    assert cfg["gpu_dataloader"]["batch_size"] >= 1
    assert cfg["gpu_dataloader"]["workers"]
    assert set(cfg["dali"]["variants"]) == {"dali-gpu", "dali-cpu"}


def test_gpu_blocks_get_defaults_when_absent(tmp_path: Path) -> None:
    cfg = resolve({**BASE, "preset": "smoke", "gpu_dataloader": {"batch_size": 8}}, REPO)
    assert cfg["gpu_dataloader"]["batch_size"] == 8
    assert cfg["gpu_dataloader"]["torchvision_randomness"] == ["per-sample", "batch-shared"]
    assert cfg["gpu_dataloader"]["worker_crop"] == 256


def test_gpu_mode_defaults_to_optional_and_is_validated() -> None:
    assert resolve({**BASE, "preset": "smoke"}, REPO)["gpu"] == "optional"
    assert resolve({**BASE, "preset": "smoke", "gpu": "required"}, REPO)["gpu"] == "required"
    with pytest.raises(ConfigError, match=r"gpu: 'always' is not one of"):
        resolve({**BASE, "preset": "smoke", "gpu": "always"}, REPO)


def test_default_preset_times_the_gpu_memory_scope_and_the_decode_scope() -> None:
    cfg = resolve({**BASE, "preset": "default"}, REPO)
    assert cfg["gpu_dataloader"]["scopes"] == ["memory", "decode"]


def test_gpu_auto_is_required_where_the_sweep_provisions_the_machines() -> None:
    """A cloud sweep (a default storage provider) fails a GPU job without CUDA whatever config
    files it is given; a local run writes skipped rows; an explicit setting is kept."""
    smoke = {**BASE, "preset": "smoke"}
    assert resolve(smoke, REPO)["gpu"] == "optional"
    assert resolve(smoke, REPO, provisioned_machines=True)["gpu"] == "required"
    assert resolve({**smoke, "gpu": "optional"}, REPO, provisioned_machines=True)["gpu"] == (
        "optional"
    )
    assert resolve({**smoke, "gpu": "required"}, REPO)["gpu"] == "required"


def test_googlebatch_profile_loads_no_config_file() -> None:
    """A profile's config file is shipped to every cloud job by the path the profile was named
    by: through the `profiles` symlink, a path Snakemake's source archive cannot always extract
    (tests/test_batch_spec.py checks the archive itself)."""
    import yaml

    profile = REPO / "workflow" / "profiles" / "googlebatch"
    assert "configfile" not in yaml.safe_load((profile / "profile.yaml").read_text())


def test_unknown_dali_variant_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"dali\.variants\[0\]: 'dali-tpu' is not one of"):
        resolve({**BASE, "preset": "smoke", "dali": {"variants": ["dali-tpu"]}}, REPO)


# -- tables ---------------------------------------------------------------------------------------
def _row(regime: str, library: str, transform: str, status: str, median: float | None, **kw):
    base = dict(
        machine="m",
        regime=regime,
        scope="decode",
        library=library,
        transform=transform,
        status=status,
        reason="" if status == "ok" else f"why {status}",
        median_throughput=median,
        std_throughput=0.0 if median else None,
        workers=-1,
        batch_size=-1,
        variant="",
        device="cpu",
        gpu_peak_allocated_mb=None,
        gpu_peak_reserved_mb=None,
    )
    base.update(kw)
    return base


def test_ratio_only_between_rows_of_the_same_scope_and_recipe() -> None:
    tidy = pd.DataFrame(
        [
            _row("micro", "albumentationsx", "HorizontalFlip", "ok", 1000.0, scope="memory"),
            _row("cpu_dataloader", "albumentationsx", "GaussianBlur", "ok", 200.0, workers=2),
            _row("cpu_dataloader", "albumentationsx", "GaussianBlur", "ok", 300.0, workers=4),
            _row("cpu_dataloader", "albumentationsx", "GaussianBlur", "ok", 900.0, scope="memory"),
            _row("gpu_dataloader", "kornia", "HorizontalFlip", "skipped", None, workers=1),
            _row("gpu_dataloader", "kornia", "GaussianBlur", "ok", 1800.0, scope="memory"),
            _row("gpu_dataloader", "kornia", "Identity", "ok", 5000.0, scope="memory"),
            _row("dali", "dali", "HorizontalFlip", "ok", 500.0, variant="dali-cpu"),
            _row("dali", "dali", "GaussianBlur", "ok", 600.0, variant="dali-cpu"),
            _row("dali", "dali", "Posterize", "unsupported", None, variant="dali-cpu"),
        ]
    )
    table = gpu.gpu_vs_cpu_ratio(tidy).set_index(["library", "transform"])
    assert len(table) == 6  # every GPU-regime row, none of the CPU ones
    # decode over decode, the fastest worker count; never the memory-scope CPU row
    blur = table.loc[("dali", "GaussianBlur")]
    assert blur["ratio"] == pytest.approx(2.0)
    assert blur["cpu_reference"] == "albumentationsx cpu_dataloader/decode workers=4"
    assert blur["comparison"] == "dali decode / albumentationsx cpu_dataloader decode, same recipe"
    memory = table.loc[("kornia", "GaussianBlur")]  # memory over memory
    assert memory["ratio"] == pytest.approx(2.0)
    assert memory["cpu_reference"].startswith("albumentationsx cpu_dataloader/memory")
    # micro is a single transform, not the recipe: no ratio against it
    flip = table.loc[("dali", "HorizontalFlip")]
    assert math.isnan(flip["ratio"])
    assert flip["ratio_status"].startswith("N/A: no ok albumentationsx cpu_dataloader row")
    assert "scope decode" in flip["ratio_status"]
    identity = table.loc[("kornia", "Identity")]
    assert identity["ratio_status"] == "N/A: Identity baseline (no CPU counterpart)"
    skipped = table.loc[("kornia", "HorizontalFlip")]
    assert skipped["status"] == "skipped" and math.isnan(skipped["ratio"])
    assert skipped["ratio_status"] == "N/A: skipped"
    assert table.loc[("dali", "Posterize")]["ratio_status"] == "N/A: unsupported"


def test_memory_table_lists_gpu_rows_with_memory_columns() -> None:
    tidy = pd.DataFrame(
        [
            _row("micro", "albumentationsx", "HorizontalFlip", "ok", 1000.0),
            _row(
                "gpu_dataloader",
                "torchvision",
                "HorizontalFlip",
                "ok",
                3000.0,
                gpu_peak_allocated_mb=120.0,
                gpu_peak_reserved_mb=160.0,
                device="NVIDIA H100",
            ),
            _row("dali", "dali", "HorizontalFlip", "skipped", None, variant="dali-gpu"),
            _row("dali", "dali", "Rotate", "ok", 900.0, variant="dali-gpu", gpu_nvml_used_mb=700.0),
        ]
    )
    table = gpu.throughput_vs_memory(tidy)
    assert list(table.columns) == list(gpu.MEMORY_COLUMNS)
    assert set(table["regime"]) == {"gpu_dataloader", "dali"}
    tv = table[table["library"] == "torchvision"].iloc[0]
    assert (tv["gpu_peak_allocated_mb"], tv["gpu_peak_reserved_mb"]) == (120.0, 160.0)
    dali = table[table["library"] == "dali"].set_index("transform")
    assert math.isnan(dali.loc["HorizontalFlip", "median_throughput"])
    # NVML's process memory and torch's allocator peaks never share a column
    assert dali.loc["Rotate", "gpu_nvml_used_mb"] == 700.0
    assert math.isnan(float(dali.loc["Rotate", "gpu_peak_reserved_mb"] or math.nan))
    assert math.isnan(float(tv["gpu_nvml_used_mb"] or math.nan))


def test_docs_list_every_dali_mapping_and_unsupported_reason() -> None:
    text = (REPO / "docs" / "gpu_regimes.md").read_text()
    dali = adapters.get("dali")
    for name in catalog.names():
        expected = (
            dali.mappings[name].call if dali.supports(name) else dali.unsupported_reason(name)
        )
        assert expected in text, name


# -- CUDA / driver detection (augbench.cuda_env): the logic, with injected inputs ---------------
def test_driver_older_than_the_runtime_is_an_error_row_naming_both_and_the_fix() -> None:
    env = cuda_env.classify(
        "535.104.05",
        "13.0",
        device_count=1,
        device_name="NVIDIA L4",
        driver_source="nvidia-smi",
        runtime_source="torch 2.13.0, torch.version.cuda",
    )
    assert env.verdict == "unusable" and env.min_driver == 580
    status, reason = env.unavailable_row()
    assert status == "error"
    assert "NVIDIA driver 535.104.05 is older than CUDA 13.0" in reason
    assert "torch 2.13.0, torch.version.cuda" in reason
    assert "install NVIDIA driver >= 580" in reason
    assert env.row_fields() == {"cuda_driver_version": "535.104.05", "cuda_runtime_version": "13.0"}


def test_same_driver_runs_the_cuda12_dali_wheel() -> None:
    env = cuda_env.classify("535.104.05", cuda_env.dali_runtime("nvidia-dali-cuda120"),
                            device_count=1, device_name="NVIDIA L4")  # fmt: skip
    assert env.verdict == "ok" and env.cuda_runtime == "12.0" and env.min_driver == 525


def test_no_driver_is_a_skipped_row() -> None:
    env = cuda_env.classify(None, "13.0")
    assert env.verdict == "no_device"
    assert env.unavailable_row() == ("skipped", "no CUDA device")
    assert env.row_fields()["cuda_driver_version"] is None


@pytest.mark.parametrize(
    ("kwargs", "runtime", "verdict", "fragment"),
    [
        ({"init_error": "RuntimeError: CUDA unknown error"}, "13.0", "unusable", "failed to init"),
        ({"device_count": 0}, "13.0", "no_device", "no CUDA device visible"),
        ({"device_count": 1}, None, "unusable", "no CUDA support"),
        ({"device_count": 2, "device_name": "NVIDIA H100"}, "13.0", "ok", "2 CUDA device(s)"),
    ],
)
def test_classify_other_cases(
    kwargs: dict, runtime: str | None, verdict: str, fragment: str
) -> None:
    env = cuda_env.classify("580.65.06", runtime, **kwargs)
    assert env.verdict == verdict and fragment in env.reason


def test_driver_is_read_from_the_proc_file_first(tmp_path: Path) -> None:
    proc = tmp_path / "version"
    proc.write_text(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 07:09:29 UTC 2025\n"
        "GCC version:  gcc version 12.2.0\n"
    )
    assert cuda_env.find_driver(proc) == ("580.65.06", str(proc))
    open_kernel = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.57.08  Release"
    assert cuda_env.driver_from_proc(open_kernel) == "575.57.08"


def test_detect_runs_the_probe_only_with_a_driver_and_keeps_its_error() -> None:
    def failing_probe() -> tuple[int, str | None]:
        raise RuntimeError("The NVIDIA driver on your system is too old (found version 12020)")

    env = cuda_env.detect("13.0", failing_probe, runtime_source="t", driver=("590.1", "nvml"))
    assert env.verdict == "unusable" and "too old (found version 12020)" in env.reason

    def must_not_run() -> tuple[int, str | None]:
        raise AssertionError("probe ran without a driver")

    env = cuda_env.detect("13.0", must_not_run, runtime_source="t", driver=(None, None))
    assert env.verdict == "no_device"


def test_torch_build_is_read_from_its_version_file_without_importing_torch(tmp_path: Path) -> None:
    def write(text: str) -> Path:
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        folder.mkdir()
        (folder / "version.py").write_text(text)
        return folder

    cuda = write("__version__ = '2.13.0+cu130'\ncuda: Optional[str] = '13.0'\nhip = None\n")
    assert cuda_env.torch_build_info(cuda) == ("2.13.0+cu130", "13.0")
    cpu = write("__version__ = '2.13.0+cpu'\ncuda: Optional[str] = None\n")
    assert cuda_env.torch_build_info(cpu) == ("2.13.0+cpu", None)
    # Anything else (no file, another form): None, and detect_torch imports torch instead.
    assert cuda_env.torch_build_info(write("cuda = get_cuda()\n")) is None
    assert cuda_env.torch_build_info(tmp_path / "missing") is None


def test_gpu_required_fails_with_driver_runtime_and_advice() -> None:
    env = cuda_env.classify("535.104.05", "13.0", device_count=1, runtime_source="torch 2.13.0")
    cuda_env.require(env, "optional", "job")  # optional: rows say it, the job goes on
    with pytest.raises(SystemExit) as info:
        cuda_env.require(env, "required", "gpu_dataloader job (kornia, memory)")
    message = str(info.value.code)
    assert info.value.code != 0
    for fragment in ("gpu=required", "Driver found: 535.104.05", "CUDA runtime needed: 13.0",
                     "driver >= 580", "What to do"):  # fmt: skip
        assert fragment in message
    ok = cuda_env.classify("580.65.06", "13.0", device_count=1, device_name="H100")
    cuda_env.require(ok, "required", "job")


# -- process isolation of recipes (augbench.measuring.engines.skeleton), real spawned processes ----
def test_a_crashing_recipe_is_one_error_row_and_the_others_are_measured() -> None:
    import sys

    sys.path.insert(0, str(REPO / "tests" / "helpers"))
    import crashing_recipes

    names = ["fine", "assert", "after-assert", "abort", "after-abort"]
    rows = skeleton.run_rows(
        names,
        label="isolation-test",
        precheck=lambda name: None,
        measure=crashing_recipes.recipe,
        kwargs=lambda name: {"name": name},
        fields=lambda name: {"recipe": name},
    )
    assert [rows[n]["status"] for n in names] == ["ok", "error", "ok", "error", "ok"]
    assert rows["assert"]["cuda_error"] is True
    assert "device-side assert" in rows["assert"]["reason"]
    assert "killed by signal SIGABRT" in rows["abort"]["reason"]
    assert "other recipes of this job are unaffected" in rows["abort"]["reason"]
    # every recipe ran in a fresh process of its own: no state carried over
    ok_rows = [rows[n] for n in ("fine", "after-assert", "after-abort")]
    assert all(row["calls"] == 1 for row in ok_rows)
    assert len({row["pid"] for row in ok_rows}) == 3
    assert all(row["recipe"] == name for name, row in rows.items())


# -- the shared row building (augbench.measuring.engines.skeleton) ---------------------------------
def test_an_output_on_the_wrong_device_or_of_the_wrong_shape_is_an_error_row() -> None:
    from augbench.measuring.engines.streaming import StreamResult

    plan = StreamPlan.for_images(4, 2, warmup_reps=0, reps=1, policy=POLICY)
    result = StreamResult([10.0], [0.4], 4, {"preflight_items": 2})
    problems = skeleton.output_problems(
        shape=[2, 3, 224, 224],
        expected_shape=[2, 3, 244, 244],
        dtype="float32",
        expected_dtype="float32",
        device="cpu",
        expected_device="cuda",
    )
    row = skeleton.stream_row(result, plan, {"gpu_ops": "x"}, problems, output_shape=[2])
    assert row["status"] == "error"
    assert row["reason"] == (
        "recipe output is on cpu, expected cuda; output is [2, 3, 224, 224] float32, "
        "expected [2, 3, 244, 244] float32"
    )
    ok = skeleton.stream_row(result, plan, {"gpu_ops": "x"}, [], output_device="cuda:0")
    assert ok["status"] == "ok" and ok["output_device"] == "cuda:0" and ok["num_images"] == 4
    stopped = StreamResult([], [], 0, {}, early_stop_reason="slow")
    assert skeleton.stream_row(stopped, plan, {}, problems)["status"] == "early_stopped"


def test_the_row_log_reports_each_row_once_and_keeps_step_rows_after_their_pipeline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from augbench.results import non_ok_row, ok_row

    log = skeleton.RowLog("micro | pillow")
    whole = ok_row([100.0, 110.0], [0.1, 0.09], warmup_iterations=1)
    log.add("p", whole, more={"p": whole, "p · 0 Crop": ok_row([5.0], [1.0], warmup_iterations=1)})
    rows = skeleton.each_row(["x"], lambda name: non_ok_row("unsupported", "no x"), log)
    assert list(rows) == ["p", "p · 0 Crop", "x"]
    assert capsys.readouterr().err.splitlines() == [
        "micro | pillow | p: ok 105.0 img/s",
        "micro | pillow | x: unsupported (no x)",
    ]
    quiet = skeleton.RowLog(None)  # a diagnostic's rows carry no throughput: no status lines
    quiet.add("y", {"status": "ok"})
    assert capsys.readouterr().err == "" and quiet.rows == {"y": {"status": "ok"}}


def test_a_failure_at_a_stage_is_an_error_row_naming_the_stage() -> None:
    try:
        raise ValueError("bad size")
    except ValueError as exc:
        row = skeleton.stage_error_row("preflight", exc, pipeline="p")
    assert row["status"] == "error" and row["reason"] == "preflight: ValueError: bad size"
    assert row["pipeline"] == "p" and "raise ValueError" in row["traceback"]


# -- ratios in a cloud sweep: one label, CPU and GPU rows from different VMs -----------------------
def _cloud_rows(cpu_machines: dict[str, float]) -> pd.DataFrame:
    """Label "gcp": AlbumentationsX cpu_dataloader rows on each actual CPU machine (median per
    worker count: ``base`` at 1 worker, 2 x ``base`` at 2), torchvision gpu_dataloader rows on
    a GPU VM, all of dataset "tiny"; plus an ok CPU row of another dataset (never a reference)."""
    from synthetic import row

    rows = []
    for actual, base in cpu_machines.items():
        for workers in (1, 2):
            for transform in ("HorizontalFlip", "GaussianBlur"):
                v = base * workers
                rows.append(
                    row(regime="cpu_dataloader", library="albumentationsx", transform=transform,
                        machine="gcp", machine_actual=actual, workers=workers, batch_size=32,
                        runs=[v, v, v])
                )  # fmt: skip
    rows.append(
        row(regime="cpu_dataloader", library="albumentationsx", transform="HorizontalFlip",
            machine="gcp", machine_actual="gce-c3-standard-4", workers=4, batch_size=32,
            dataset="other-resolution", runs=[1.0, 1.0, 1.0])
    )  # fmt: skip
    for transform in ("HorizontalFlip", "GaussianBlur"):
        rows.append(
            row(regime="gpu_dataloader", library="torchvision", transform=transform,
                machine="gcp", machine_actual="gce-g2-standard-8", workers=4, batch_size=32,
                device="cuda", runs=[6000.0, 6000.0, 6000.0])
        )  # fmt: skip
    frame = pd.DataFrame(rows)
    return frame.assign(median_throughput=pd.to_numeric(frame["median_throughput"]))


def test_ratio_joins_on_the_label_and_names_the_machine_each_side_ran_on() -> None:
    table = gpu.gpu_vs_cpu_ratio(_cloud_rows({"gce-n2-standard-16": 1000.0}))
    assert list(table.columns) == list(gpu.RATIO_COLUMNS)
    assert len(table) == 2  # one per GPU row: the other dataset's CPU row is no reference
    for _, r in table.iterrows():
        assert (r["machine"], r["dataset"]) == ("gcp", "tiny")
        assert r["gpu_machine_actual"] == "gce-g2-standard-8"
        assert r["cpu_machine_actual"] == "gce-n2-standard-16"
        assert r["ratio_status"] == "ok"
        assert r["ratio"] == pytest.approx(6000.0 / 2000.0)  # the fastest: 2 workers
        assert r["cpu_reference"] == "albumentationsx cpu_dataloader/memory workers=2"
        assert r["comparison"].endswith(
            "same recipe; CPU rows from gce-n2-standard-16, GPU rows from gce-g2-standard-8"
        )


def test_two_actual_cpu_machines_under_one_label_give_one_ratio_each_never_mixed() -> None:
    frame = _cloud_rows({"gce-n2-standard-16": 1000.0, "gce-c3-standard-8": 1500.0})
    table = gpu.gpu_vs_cpu_ratio(frame)
    assert len(table) == 4  # 2 GPU rows x 2 CPU machines
    flip = table[table["transform"] == "HorizontalFlip"].set_index("cpu_machine_actual")
    assert flip.loc["gce-n2-standard-16", "ratio"] == pytest.approx(6000.0 / 2000.0)
    assert flip.loc["gce-c3-standard-8", "ratio"] == pytest.approx(6000.0 / 3000.0)
    assert set(flip["gpu_machine_actual"]) == {"gce-g2-standard-8"}
    note = "this label's CPU reference rows come from 2 machines"
    assert all(note in text and "never mixed" in text for text in flip["comparison"])


def test_rows_without_an_actual_machine_fall_back_to_the_label() -> None:
    frame = _cloud_rows({"gce-n2-standard-16": 1000.0}).assign(machine_actual=None)
    table = gpu.gpu_vs_cpu_ratio(frame)
    assert set(table["gpu_machine_actual"]) == set(table["cpu_machine_actual"]) == {"gcp"}
    assert not table["comparison"].str.contains("CPU rows from").any()


def test_a_fresh_fork_returns_its_result_and_a_dead_one_an_error_row() -> None:
    """skeleton.in_fresh_fork: the CPU engines' one process per row; a child that dies
    without its result costs only that row, named with its signal."""
    import os
    import signal

    from augbench.measuring.engines import skeleton

    parent = os.getpid()
    assert skeleton.in_fresh_fork(lambda: {"pid": os.getpid()})["pid"] != parent
    raised = skeleton.in_fresh_fork(lambda: 1 / 0, "row")
    assert raised["status"] == "error" and "ZeroDivisionError" in raised["reason"]
    died = skeleton.in_fresh_fork(lambda: os.kill(os.getpid(), signal.SIGKILL), "row")
    assert died["status"] == "error" and "SIGKILL" in died["reason"]


def test_an_unknown_gpu_dataloader_decoder_stops_the_run_naming_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"gpu_dataloader\.decoders\[1\]: 'pil' is not one of"):
        resolve(
            {**BASE, "preset": "smoke", "gpu_dataloader": {"decoders": ["native", "pil"]}}, REPO
        )
