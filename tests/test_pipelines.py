"""User pipelines: config validation before any job, per-library support rows, the per-step
breakdown's timing logic (with a diagnostic Sleep step of known cost), and the tables."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

from augbench.analysis import pipelines as pipeline_tables
from augbench.analysis import tidy
from augbench.measuring.engines import breakdown_passes, pipeline_breakdown
from augbench.measuring.stopping import StoppingRule
from augbench.planning.config import ConfigError, resolve
from augbench.workload import adapters, catalog, layout, pipelines
from augbench.workload.adapters.base import Chain, Composed
from augbench.workload.pipeline_sources import configured

REPO = Path(__file__).resolve().parents[1]
BASE = yaml.safe_load((REPO / "config/config.yaml").read_text())
SHIPPED = [
    "imagenet_train",
    "imagenet_train_colorjitter",
    "highres_segmentation",
    "train_light",
    "train_medium",
    "train_heavy",
]


def _resolve(**override: Any) -> dict[str, Any]:
    return resolve({**BASE, "machine": "test", "preset": "smoke", **override}, REPO)


def test_default_config_runs_the_shipped_pipelines() -> None:
    cfg = resolve({**BASE, "machine": "test"}, REPO)
    assert [p["name"] for p in cfg["pipeline_definitions"]] == SHIPPED
    seg = next(p for p in cfg["pipeline_definitions"] if p["name"] == "highres_segmentation")
    assert seg["targets"] == ["mask"]
    assert [s["name"] for s in seg["steps"]] == [
        "LongestMaxSize",
        "PadIfNeeded",
        "Affine",
        "Normalize",
    ]
    assert seg["steps"][0]["params"] == {"max_size": 1024}
    assert seg["steps"][1]["params"] == {"size": [1024, 1024]}


def test_pipeline_key_runs_just_that_file() -> None:
    cfg = _resolve(pipeline="config/pipelines/imagenet_train.yaml")
    assert [p["name"] for p in cfg["pipeline_definitions"]] == ["imagenet_train"]
    unit_labels = [
        u[0] for u in pipelines.Pipeline.from_dict(cfg["pipeline_definitions"][0]).units()
    ]
    assert unit_labels == ["RandomResizedCrop", "HorizontalFlip", "Normalize+ToTensor"]
    steps = pipelines.Pipeline.from_dict(cfg["pipeline_definitions"][0]).steps
    # The torchvision classification reference preset: antialiased crop, flip with p = 0.5.
    assert steps[0].options == {"antialias": True} and steps[1].options == {"p": 0.5}


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (["Foo"], "unknown step 'Foo'"),
        ([{"Affine": {"foo": 1}}], "has no parameter 'foo'; allowed: degrees"),
        ([{"Affine": {"scale": 1.0}}], "does not have the shape"),
        (["Sleep"], "diagnostic step"),
        (["ToTensor"], "ToTensor must directly follow Normalize"),
        (["Normalize", "HorizontalFlip"], "only ToTensor may follow it"),
    ],
)
def test_bad_steps_fail_validation_naming_step_and_key(steps: list[Any], message: str) -> None:
    with pytest.raises(ConfigError, match="config error at pipelines") as info:
        _resolve(pipelines=[{"name": "mine", "steps": steps}])
    assert message in str(info.value)
    assert "'mine'" in str(info.value)


def test_names_must_be_unique_and_not_catalog_transforms() -> None:
    with pytest.raises(ConfigError, match="is a catalog transform"):
        _resolve(pipelines=[{"name": "Affine", "steps": ["Affine"]}])
    with pytest.raises(ConfigError, match="more than once"):
        _resolve(pipelines=[{"name": "a", "steps": ["Affine"]}] * 2)
    with pytest.raises(ConfigError, match="does not exist"):
        _resolve(pipeline="config/pipelines/missing.yaml")
    with pytest.raises(ConfigError, match="config error at pipelines"):  # the schema: bad target
        _resolve(pipelines=[{"name": "a", "steps": ["Affine"], "targets": ["depth"]}])


def test_sleep_is_allowed_where_config_says_so() -> None:
    cfg = _resolve(
        pipelines=[{"name": "slow", "steps": ["HorizontalFlip", {"Sleep": {"ms": 3}}]}],
        pipeline_runs={"allow_diagnostic_steps": True},
    )
    assert cfg["pipeline_definitions"][0]["steps"][1] == {"name": "Sleep", "params": {"ms": 3}}


def test_pipeline_steps_never_join_a_paper_set() -> None:
    for name in ("PadIfNeeded", "Normalize", "ToTensor"):
        assert catalog.CANDIDATES[name].pipeline_only
        assert name not in catalog.names(3) and name not in catalog.names(9)
    assert adapters.get("albumentationsx").supports("PadIfNeeded")
    assert adapters.get("kornia").supports("PadIfNeeded")


def _shipped(name: str) -> pipelines.Pipeline:
    return configured.load_file(REPO / f"config/pipelines/{name}.yaml")


@pytest.mark.parametrize(
    ("library", "name", "status", "step"),
    [
        ("pillow", "imagenet_train_colorjitter", "unsupported", "ColorJitter"),
        ("torchvision", "highres_segmentation", "unsupported", "PadIfNeeded"),
        ("pillow", "highres_segmentation", "unsupported", "PadIfNeeded"),
        # Equal work: the trio's crop does not antialias, which Pillow's bilinear cannot do.
        ("pillow", "train_light", "unsupported", "RandomResizedCrop"),
        ("kornia", "imagenet_train", "unsupported", "RandomResizedCrop"),
    ],
)
def test_a_library_lacking_a_step_or_target_names_it(
    library: str, name: str, status: str, step: str
) -> None:
    problem = pipelines.support_problem(adapters.get(library), _shipped(name))
    assert problem is not None
    assert problem[0] == status
    assert step in problem[1] and problem[2]["unsupported_step"] == step


def test_an_undriven_target_is_a_skipped_row_naming_it_and_who_drives_it() -> None:
    flip = pipelines.parse(
        {"name": "flip_seg", "targets": ["mask"], "steps": ["HorizontalFlip", "Normalize"]}
    )
    for library in ("torchvision", "pillow"):  # every step maps; the mask is not driven
        status, reason, fields = pipelines.support_problem(adapters.get(library), flip)  # type: ignore[misc]
        assert status == "skipped" and fields["unsupported_target"] == "mask"
        assert "albumentationsx: ['mask']" in reason and "kornia: ['mask']" in reason, reason
    for library in ("albumentationsx", "kornia"):
        assert pipelines.support_problem(adapters.get(library), flip) is None
        assert "mask" in pipelines.row_fields(flip, adapters.get(library))["mask_call"]
    # On the GPU only Kornia carries the mask: torchvision's GPU rows skip it, naming it.
    assert pipelines.gpu_support_problem(adapters.get("kornia"), flip) is None
    assert "mask_call" in pipelines.row_fields(flip, adapters.get("kornia"), gpu=True)
    tv = adapters.get("torchvision")
    status, reason, _ = pipelines.gpu_support_problem(tv, flip)  # type: ignore[misc]
    assert status == "skipped" and "GPU regimes carry targets only for kornia" in reason
    assert "mask_call" not in pipelines.row_fields(flip, tv, gpu=True)
    boxes = pipelines.parse({"name": "boxes", "targets": ["bboxes"], "steps": ["HorizontalFlip"]})
    status, reason, _ = pipelines.support_problem(adapters.get("albumentationsx"), boxes)  # type: ignore[misc]
    assert status == "skipped" and "bboxes" in reason


def test_supported_pipelines_have_no_problem_and_record_calls() -> None:
    albx = adapters.get("albumentationsx")
    for name in SHIPPED:
        assert pipelines.support_problem(albx, _shipped(name)) is None
    seg = _shipped("highres_segmentation")
    assert pipelines.support_problem(adapters.get("kornia"), seg) is None  # the mask, driven
    calls = pipelines.mapping_calls(albx, _shipped("imagenet_train"))
    assert calls[-2] == albx.recipe_tail_call and calls[-1] == "(part of Normalize)"


# -- the breakdown's timing logic, on numpy steps and the diagnostic Sleep step --------------------
def _numpy_units(sleep_ms: list[float]) -> list[tuple[str, Any]]:
    units: list[tuple[str, Any]] = [("Invert", lambda x: 255 - x)]
    units += [(f"Sleep{ms:g}", pipelines.SleepStep(ms)) for ms in sleep_ms]
    units.append(("Flip", lambda x: x[:, ::-1]))  # a view: materialized by the copy rule
    return units


def test_breakdown_shows_a_sleep_steps_share() -> None:
    images = [np.full((64, 64, 3), 7, dtype=np.uint8)]
    units = _numpy_units([30.0, 90.0])
    whole = Composed(Chain([fn for _, fn in units]), "chain", lambda obj, x: obj(x))
    result = breakdown_passes.Measurement(
        units, whole, images, layout.materialize, StoppingRule(6, 6, block=2), warmups=1
    ).until_met()
    assert len(result.whole_seconds) == len(result.step_seconds) == len(result.bare_seconds) == 6
    # Each kind in 3 fresh processes of 2 values, in the order S W B, S B W, S W B.
    assert [len(g) for g in result.whole_groups] == [2, 2, 2]
    rounds = [("steps", "whole", "bare"), ("steps", "bare", "whole"), ("steps", "whole", "bare")]
    assert result.order == [kind for one in rounds for kind in one]
    shares = dict(zip(result.labels, result.shares(), strict=True))
    # 30 ms and 90 ms of 120 ms plus microseconds of numpy: 25 % and 75 %. A late wake-up adds
    # about the same to every sleep and so raises the shorter one's share: sleeps this long
    # keep wake-ups up to 11 ms late (a machine with several busy processes per core) within
    # 0.04. One image per value keeps the test short.
    assert shares["Sleep30"] == pytest.approx(0.25, abs=0.04)
    assert shares["Sleep90"] == pytest.approx(0.75, abs=0.04)
    assert shares["Invert"] < 0.02 and shares["Flip"] < 0.02
    # Ratios of medians: sanity bounds only; the 5 % check is what the workflow reports
    # (summary, figure), not a timed assertion here.
    harness = result.harness()
    assert 0.8 < harness.estimate < 1.2 and harness.low <= harness.estimate <= harness.high
    assert "bootstrap over 3 processes" in result.seconds_interval(result.whole_groups).method
    assert 0.8 < result.composition().estimate < 1.2


def test_each_whole_process_records_its_own_faults() -> None:
    """A whole pass that maps a fresh 48 MiB buffer on every call (above glibc's largest mmap
    threshold, so freed to the kernel and faulted in again each time) faults about its pages per
    image in every process, and the row keeps one count per process and their largest."""
    images = [np.zeros((8, 8, 3), dtype=np.uint8) for _ in range(2)]
    pages = (48 << 20) // 4096

    def fresh_buffer(x: Any) -> Any:
        buffer = np.ones(48 << 20, dtype=np.uint8)  # written: every page faulted in
        return x + buffer[0]

    whole = Composed(fresh_buffer, "fresh buffer", lambda obj, x: obj(x))
    result = breakdown_passes.Measurement(
        [("FreshBuffer", fresh_buffer)],
        whole,
        images,
        layout.materialize,
        StoppingRule(4, 4, block=2),
        warmups=1,
    ).until_met()
    by_process = result.faults_per_image_by_process()
    assert len(by_process) == len(result.whole_groups) == 2
    # Transparent huge pages can map 2 MiB per fault: at least that many, at most the pages
    # plus the interpreter's own.
    assert all(pages / 512 <= f <= 2 * pages for f in by_process)
    assert result.faults_per_image() == pytest.approx(sum(by_process) / 2)


def test_a_round_whose_interpreter_fails_says_why() -> None:
    """A round's fresh interpreter that exits before writing its result (here: arguments it
    cannot parse) comes back as one reason naming its exit code and its last line, which the
    job writes into the row of every pipeline of that round."""
    outcome = pipeline_breakdown.round_in_fresh_interpreter(
        ["--library", "pillow"], {"rounds": {"p": {"round": 0, "seed": 0, "passes": 1}}}
    )
    assert set(outcome) == {"error"}
    assert "exited with code 2" in outcome["error"] and "required" in outcome["error"]


def test_the_address_layout_is_shared_by_forks_and_drawn_anew_by_each_interpreter() -> None:
    """What a row's ``round_layouts`` counts: a forked child reports its parent's layout; where
    the kernel randomizes layouts, new interpreters report others (checked with a few, since
    two draws may coincide only by chance)."""
    import multiprocessing
    import subprocess
    import sys

    mine = pipeline_breakdown.address_layout()
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply(pipeline_breakdown.address_layout) == mine
    randomized = Path("/proc/sys/kernel/randomize_va_space").read_text().strip() != "0"
    fresh = {
        subprocess.run(
            [sys.executable, "-c", "from augbench.measuring.engines.pipeline_breakdown import "
             "address_layout; print(address_layout())"],
            capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[1],
        ).stdout.strip()
        for _ in range(3)
    }  # fmt: skip
    assert len(fresh) == (3 if randomized else 1), fresh


def test_the_harness_check_can_fail() -> None:
    """A harness whose materialization costs something the bare loop does not pay is seen:
    the whole pass's ratio to the bare loop moves with it, and its interval leaves the 5 %
    tolerance (the row is flagged).

    Sized for a loaded machine: the harness costs 5x the pipeline (ratio 6), so the interval's
    low end, at least the fastest whole value over the slowest bare one, stays above 1.05 unless
    a 10 ms bare value is stretched by some 47 ms; 8 values in 4 processes give a bootstrap
    interval instead of the extremes of 4 values. Without the harness cost the ratio is 1."""
    images = [np.zeros((8, 8, 3), dtype=np.uint8) for _ in range(2)]
    sleep = pipelines.SleepStep(5.0)
    whole = Composed(sleep, "sleep", lambda obj, x: obj(x))

    def slow_materialize(out: Any, src: Any) -> Any:
        time.sleep(0.025)  # harness work 5x the pipeline's
        return out

    result = breakdown_passes.Measurement(
        [("Sleep", sleep)], whole, images, slow_materialize, StoppingRule(8, 8, block=2), warmups=0
    ).until_met()
    harness = result.harness()
    assert len(result.whole_groups) == len(result.bare_groups) == 4
    assert harness.estimate > 2.0 and harness.low > 1.05, harness


def test_the_composition_note_explains_a_large_effect() -> None:
    note = pipeline_breakdown.composition_note(0.6, ["Crop", "Flip"], [False, True], "A.Compose")
    assert "0.60x" in note and "Flip" in note
    assert "A.Compose" in pipeline_breakdown.composition_note(1.5, ["A"], [False], "A.Compose")
    assert pipeline_breakdown.composition_note(1.1, ["A"], [False], "A.Compose") == ""


def test_copied_steps_names_views_the_steps_pass_had_to_copy() -> None:
    units = [("Crop", lambda x: x[:8, :8]), ("Invert", lambda x: 255 - x)]
    image = np.zeros((16, 16, 3), dtype=np.uint8)
    assert pipeline_breakdown.copied_steps(units, image, layout.materialize) == [True, False]


def test_outputs_are_described_by_container_dtype_shape_and_memory() -> None:
    described = pipelines.describe_output(np.zeros((4, 5, 3), dtype=np.float32)[:, ::-1])
    assert described == {
        "output_contract": "numpy.ndarray float32 4x5x3",
        "output_memory": "strided",
    }


def test_steps_run_on_previous_outputs_and_materialize() -> None:
    seen: list[tuple[int, ...]] = []

    def record(x: np.ndarray) -> np.ndarray:
        seen.append(x.strides)
        return x

    units = [("Crop", lambda x: x[:8, :8]), ("Record", record)]
    images = [np.zeros((16, 16, 3), dtype=np.uint8)]
    breakdown_passes.steps_pass(units, images, layout.materialize)
    # The crop's view was copied before the next step saw it: dense 8x8x3.
    assert seen == [(24, 3, 1)]


# -- row contract and tables -----------------------------------------------------------------------
def _row(**extra: Any) -> dict[str, Any]:
    base = {"status": "ok", "throughputs": [100.0, 110.0], "times": [0.1, 0.09]}
    base.update(median_throughput=105.0, mean_throughput=105.0, std_throughput=7.0)
    return {**base, **extra}


def _write(tmp_path: Path, library: str, regime: str, results: dict[str, Any]) -> Path:
    path = tmp_path / f"{library}-{regime}.json"
    meta = {"machine": "m", "library": library, "regime": regime, "scope": "memory"}
    meta["dataset"] = {"key": "d-0", "name": "d", "num_images_used": 4}
    path.write_text(json.dumps({"metadata": meta, "results": results}))
    return path


def test_rows_carry_the_pipeline_and_tables_keep_steps_apart(tmp_path: Path) -> None:
    fields = {"pipeline": "p1", "variant": pipelines.VARIANT}
    step = {**fields, "variant": pipelines.STEP_VARIANT}
    contract = {"output_contract": "torch.Tensor float32 3x4x4", "work_contract": ""}
    files = [
        _write(tmp_path, "albumentationsx", "micro", {
            "p1": _row(harness_vs_bare=1.01, bare_ms_per_image=9.4, composition_effect=0.97,
                       **contract, **fields),
            "p1 · 0 A": _row(step="A", step_index=0, share=0.25, seconds_per_image=0.001, **step),
            "p1 · 1 B": _row(step="B", step_index=1, share=0.75, seconds_per_image=0.003, **step),
            "HorizontalFlip": _row(),
        }),
        _write(tmp_path, "pillow", "micro", {
            "p1": {"status": "unsupported", "reason": "step 2 B: none", "unsupported_step": "B",
                   **fields},
        }),
        _write(tmp_path, "albumentationsx", "cpu_dataloader", {
            "p1": _row(workers=2, batch_dtype="torch.float32", batch_shape=[32, 3, 4, 4], **fields),
        }),
        # Another output contract (uint8): listed, never ranked against the float32 rows.
        _write(tmp_path, "torchvision", "cpu_dataloader", {
            "p1": _row(workers=2, batch_dtype="torch.uint8", batch_shape=[32, 3, 4, 4], **fields),
        }),
    ]  # fmt: skip
    frame = tidy.load(files)
    assert {"pipeline", "step", "step_index"} <= set(frame.columns)
    rows = frame[frame["pipeline"] == "p1"]
    assert set(rows["transform"]) == {"p1"}  # every pipeline row names it as its transform
    assert set(frame[frame["pipeline"].isna()]["transform"]) == {"HorizontalFlip"}
    assert len(pipeline_tables.step_rows(frame)) == 2
    assert len(pipeline_tables.pipeline_rows(frame)) == 4

    table = pipeline_tables.breakdown(frame)
    albx = table[table["library"] == "albumentationsx"]
    assert albx["step"].tolist() == ["A", "B"]
    assert albx["share"].tolist() == [0.25, 0.75]
    assert albx["harness_vs_bare_within"].all()
    pillow = table[table["library"] == "pillow"].iloc[0]
    assert pillow["status"] == "unsupported" and pillow["step"] == "B"

    speed = pipeline_tables.speedup_table(frame, "p1")
    assert set(speed["regime"]) == {"micro", "cpu_dataloader"}
    assert speed["regime_label"].str.contains("pipeline").all()  # labelled by regime setting
    micro = speed[speed["regime"] == "micro"]
    assert set(micro["library"]) == {"albumentationsx", "pillow"}  # steps are never ranked
    loaders = speed[speed["regime"] == "cpu_dataloader"].set_index("library")
    assert loaders.loc["albumentationsx", "contract"] == "torch.Tensor float32 3x4x4"
    assert loaders.loc["torchvision", "contract"] == "torch.Tensor uint8 3x4x4"
    assert loaders["speedup"].isna().all()  # different outputs: no competitor

    lines = "\n".join(pipeline_tables.summary_lines(frame))
    assert "| m | albumentationsx | p1 | 9.524 | 9.400 | 1.010 | 0.97 |" in lines


def test_figure_draws_shares_and_caption(tmp_path: Path) -> None:
    from augbench.analysis.figures import pipelines as figure
    from augbench.analysis.figures.style import save

    table = pd.DataFrame(
        [
            {"machine": "m", "dataset": "d", "library": "kornia", "pipeline": "p", "step_index": i,
             "step": s, "status": "ok", "reason": "", "ms_per_image": 1.0, "share": share,
             "pipeline_ms_per_image": 2.0, "pipeline_throughput": 500.0, "harness_vs_bare": 1.2,
             "harness_vs_bare_within": False, "composition_effect": 0.9, "num_images": 4}
            for i, (s, share) in enumerate([("A", 0.4), ("B", 0.6)])
        ]
        + [{"machine": "m", "dataset": "d", "library": "pillow", "pipeline": "p", "step": "B",
            "status": "unsupported", "reason": "no B", "num_images": 4}]
    )  # fmt: skip
    drawn = figure.draw(table)
    save(drawn, tmp_path / "f.png", tmp_path / "f.pdf", tmp_path / "f.txt")
    assert (tmp_path / "f.png").stat().st_size > 0
    assert "Harness / bare outside 5%: p/kornia (harness/bare 1.20)" in drawn.caption
    assert "Regime: micro" in drawn.caption


def test_cpu_dataloader_resolves_a_pipeline_name_into_its_recipe() -> None:
    from augbench.measuring.engines import cpu_dataloader

    chosen = [_shipped("imagenet_train_colorjitter")]
    settings = cpu_dataloader.parse_args(
        ["--library", "pillow", "--scope", "memory", "--workers", "2",
         "--transforms", "imagenet_train_colorjitter", "--manifest", "m.json", "--num-images", "4",
         "--output", "o.json", "--machine", "m", "--pipelines", pipelines.to_json(chosen)]
    )  # fmt: skip
    assert set(settings.pipelines) == {"imagenet_train_colorjitter"}
    name = "imagenet_train_colorjitter"
    fields = cpu_dataloader.recipe_row_fields(settings, adapters.get("pillow"), name)
    assert fields["pipeline"] == name and fields["variant"] == pipelines.VARIANT
    assert fields["recipe"] == _shipped(name).recipe
    assert fields["recipe"].endswith("ColorJitter + Normalize + ToTensor")
    assert fields["workers"] == 2 and fields["scope"] == "memory"
    # Single transforms keep their recipe rows untouched.
    plain = cpu_dataloader.recipe_row_fields(settings, adapters.get("pillow"), "HorizontalFlip")
    assert "pipeline" not in plain and plain["recipe"].startswith("RandomCrop224 + HorizontalFlip")


# -- the GPU regimes (gpu_dataloader, dali) ----------------------------------------------------
def _all_shipped() -> dict[str, pipelines.Pipeline]:
    cfg = resolve({**BASE, "machine": "test"}, REPO)
    return {p["name"]: pipelines.Pipeline.from_dict(p) for p in cfg["pipeline_definitions"]}


@pytest.mark.parametrize("library", ["torchvision", "kornia", "dali"])
def test_shipped_pipelines_map_to_every_gpu_path_except_the_named_step_or_target(
    library: str,
) -> None:
    adapter = adapters.get(library)
    problems = {n: pipelines.gpu_support_problem(adapter, p) for n, p in _all_shipped().items()}
    seg = problems.pop("highres_segmentation")
    if library == "kornia":  # every step maps and Kornia carries the mask on the device
        assert seg is None
    else:
        assert seg is not None
        status, reason, fields = seg
    if library == "torchvision":  # no PadIfNeeded in torchvision: the step, not the target
        assert status == "unsupported" and fields["unsupported_step"] == "PadIfNeeded"
        assert reason.startswith("step 2 PadIfNeeded:")
    elif library == "dali":  # no LongestMaxSize operator: the step, before the target
        assert status == "unsupported" and fields["unsupported_step"] == "LongestMaxSize", seg
    if library == "dali":  # DALI has no additive-noise operator: one row naming the step
        status, reason, fields = problems.pop("train_heavy")  # type: ignore[misc]
        assert status == "unsupported" and reason.startswith("step 6 GaussianNoise: dali has no")
    if library == "kornia":  # the reference preset antialiases its crop, which Kornia cannot
        for name in ("imagenet_train", "imagenet_train_colorjitter"):
            status, reason, fields = problems.pop(name)  # type: ignore[misc]
            assert status == "unsupported" and "antialias" in reason, reason
    assert problems == dict.fromkeys(problems), problems  # the others map step by step


def test_a_step_that_cannot_run_on_cuda_is_one_unsupported_row_naming_it() -> None:
    pipe = pipelines.parse(
        {"name": "jpeg_aug", "steps": ["RandomResizedCrop", "JpegCompression", "Normalize"]}
    )
    tv = adapters.get("torchvision")
    assert pipelines.support_problem(tv, pipe) is None  # the CPU path has it
    status, reason, fields = pipelines.gpu_support_problem(tv, pipe)  # type: ignore[misc]
    assert status == "unsupported" and reason.startswith("step 2 JpegCompression:")
    assert "decode_jpeg" in reason and fields["unsupported_step_index"] == 1
    dali = adapters.get("dali")
    posterize = pipelines.parse(
        {"name": "p", "steps": ["HorizontalFlip", "Posterize", "Normalize"]}
    )
    status, reason, _ = pipelines.gpu_support_problem(dali, posterize)  # type: ignore[misc]
    assert status == "unsupported" and reason.startswith("step 2 Posterize: dali has no")


def test_gpu_pipelines_must_end_in_normalize_and_never_sleep() -> None:
    tv = adapters.get("torchvision")
    no_tail = pipelines.parse({"name": "raw", "steps": ["RandomResizedCrop", "HorizontalFlip"]})
    status, reason, _ = pipelines.gpu_support_problem(tv, no_tail)  # type: ignore[misc]
    assert status == "error" and "must end with Normalize" in reason
    sleepy = pipelines.parse(
        {"name": "s", "steps": ["RandomResizedCrop", "Sleep", "Normalize"]}, allow_diagnostic=True
    )
    assert pipelines.support_problem(tv, sleepy) is None
    status, reason, _ = pipelines.gpu_support_problem(tv, sleepy)  # type: ignore[misc]
    assert status == "unsupported" and reason.startswith("step 2 Sleep:")


def test_gpu_workers_cut_for_the_first_crop_and_output_sizes_follow_the_steps() -> None:
    from augbench.workload import gpu_recipes

    shipped = _all_shipped()
    for name in ("imagenet_train", "train_light", "train_medium", "train_heavy"):
        body, tail = pipelines.gpu_steps(shipped[name])
        assert tail is not None and tail.name == "Normalize"
        assert "ToTensor" not in [s.name for s in body]
        assert gpu_recipes.pipeline_worker_crop(body, 256) == (256, 256)  # RandomResizedCrop
        assert gpu_recipes.pipeline_output_hw(body, (256, 256)) == (224, 224)
    body, _ = pipelines.gpu_steps(shipped["highres_segmentation"])
    assert gpu_recipes.pipeline_worker_crop(body, 256) == (224, 224)  # not a crop: base crop
    assert gpu_recipes.pipeline_output_hw(body, (224, 224)) == (1024, 1024)
    assert gpu_recipes.step_output_hw("LongestMaxSize", {"max_size": 1024}, (300, 600)) == (
        512,
        1024,
    )
    timed = gpu_recipes.pipeline_timed("decode", (256, 256), "gpu_dataloader")
    assert "256x256 uint8 crop cut in DataLoader workers" in timed
    assert "already resident" in gpu_recipes.pipeline_timed("memory", (256, 256), "gpu_dataloader")


# -- pipelines written in a library's own format -------------------------------------------------
def test_a_module_pipeline_whose_resolution_failed_is_an_error_row_in_every_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from augbench.workload.pipeline_sources import torchvision_module

    monkeypatch.chdir(tmp_path)
    ref = "no_such_module:train_tf"
    cfg = _resolve(pipeline=ref)
    placeholder = cfg["pipeline_definitions"][0]
    assert placeholder["native"] == {
        "library": "torchvision",
        "format": "module",
        "ref": ref,
        "resolved": "results/pipelines/resolved/train_tf.json",
    }
    assert torchvision_module.is_module_ref(ref)
    resolved = tmp_path / placeholder["native"]["resolved"]
    resolved.parent.mkdir(parents=True)
    message = "module 'no_such_module' does not import: ModuleNotFoundError: no module"
    resolved.write_text(json.dumps({"error": message}))
    loaded = pipelines.from_json(json.dumps([placeholder]))["train_tf"]
    for library in ("albumentationsx", "torchvision", "pillow"):
        problem = pipelines.support_problem(adapters.get(library), loaded)
        assert problem == ("error", message, {}), library


def test_an_unmapped_step_is_unsupported_elsewhere_and_runs_in_its_own_library() -> None:
    step = pipelines.Step("CoarseDropout", {"num_holes_range": [1, 4]}, unmapped="no catalog step")
    pipe = pipelines.Pipeline(
        "mine",
        (pipelines.Step("HorizontalFlip"), step),
        native={"library": "albumentationsx", "format": "albumentations", "spec": {}},
    )
    status, reason, fields = pipelines.support_problem(adapters.get("torchvision"), pipe)
    assert status == "unsupported" and reason.startswith("step 2 CoarseDropout: no catalog step")
    assert "runs only in albumentationsx" in reason and fields["unsupported_step_index"] == 1
    assert pipelines.support_problem(adapters.get("albumentationsx"), pipe) is None
    # The GPU regimes run the catalog mapping, where the step has none.
    assert pipelines.gpu_support_problem(adapters.get("kornia"), pipe)[0] == "unsupported"


def test_step_options_are_checked_and_libraries_refuse_what_they_lack() -> None:
    with pytest.raises(ConfigError, match="'antialias'"):
        _resolve(pipelines=[{"name": "x", "steps": [{"HorizontalFlip": {"antialias": True}}]}])
    with pytest.raises(ConfigError, match="not in \\[0, 1\\]"):
        _resolve(pipelines=[{"name": "x", "steps": [{"HorizontalFlip": {"p": 1.5}}]}])
    with pytest.raises(ConfigError, match="takes no 'p'"):
        _resolve(pipelines=[{"name": "x", "steps": [{"Normalize": {"p": 0.5}}]}])
    crop = pipelines.parse({"name": "x", "steps": [{"RandomResizedCrop": {"antialias": True}}]})
    assert adapters.get("kornia").option_problem("RandomResizedCrop", crop.steps[0].options)
    assert adapters.get("torchvision").option_problem("RandomResizedCrop", {}) is None
    assert adapters.get("albumentationsx").antialias("RandomResizedCrop", {}) is False
    assert adapters.get("dali").option_problem("Affine", {"p": 0.5})  # flips only
    assert adapters.get("dali").option_problem("HorizontalFlip", {"p": 0.5}) is None


def test_a_decoder_s_dtype_conversion_is_timed_as_the_pipeline_s_first_step() -> None:
    """Kornia's decoder converts to float32; the breakdown starts every library from the 8-bit
    image and times that conversion inside the pipeline, as the others time their own."""

    class Converting:
        input_conversion = ("to float", lambda x: x.astype(np.float32) / 255.0)

    class Plain:
        input_conversion = None

    pipeline = _shipped("train_light")
    units = [("Flip", lambda x: x[:, ::-1])]
    whole = Composed(Chain([fn for _, fn in units]), "chain", lambda obj, x: obj(x))
    same_units, same_whole = pipeline_breakdown.with_input_conversion(
        Plain(), pipeline, units, whole
    )
    assert same_units is units and same_whole is whole
    converted, composed = pipeline_breakdown.with_input_conversion(
        Converting(), pipeline, units, whole
    )
    assert [label for label, _ in converted] == ["to float", "Flip"]
    image = np.full((2, 3, 3), 255, dtype=np.uint8)
    out = composed(image)
    assert out.dtype == np.float32 and float(out.max()) == 1.0
    assert composed.description == "to float, then chain"
    assert composed.call(composed.obj, image).dtype == np.float32  # the bare loop's call too


def test_each_breakdown_process_lays_its_inputs_out_apart() -> None:
    images = [np.arange(12, dtype=np.uint8).reshape(2, 2, 3)]
    copied, pad = breakdown_passes.own_layout(images, seed=3)
    assert copied[0] is not images[0] and np.array_equal(copied[0], images[0])
    _, pad_again = breakdown_passes.own_layout(images, seed=3)
    assert [len(p) for p in pad] == [len(p) for p in pad_again]  # seeded: reproducible


def test_the_kinds_of_a_round_draw_alike_and_rounds_draw_anew() -> None:
    """steps, whole and bare of one round make the same random draws (their ratios compare the
    same work); the next round makes others, so a row averages over draws as a user's loop
    does; the warm-up draws apart from the timed values."""
    import random

    def draws(kind: str, round_index: int) -> list[float]:
        seen: list[float] = []

        def step(x: Any) -> Any:
            seen.append(random.random())
            return x

        units = [("Draw", step)]
        whole = Composed(Chain([step]), "chain", lambda obj, x: obj(x))
        images = [np.zeros((2, 2, 3), dtype=np.uint8)] * 2
        measured = breakdown_passes.one_process(
            kind, units, whole, images, lambda out, src: out, 2, 1, 1, 0, None, round_index
        )
        assert len(measured["seconds"]) == 2
        return seen

    for round_index in (0, 3):
        first = draws("steps", round_index)
        assert first == draws("whole", round_index) == draws("bare", round_index)
        assert first[2:] != first[:2]  # the warm-up's draws are not the first value's
    assert draws("whole", 0)[2:] != draws("whole", 1)[2:]
    warmup, seeds = breakdown_passes.round_seeds(2, 2)
    assert seeds == [4, 5] and warmup not in seeds
