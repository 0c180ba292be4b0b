"""The allocator effect (augbench.analysis.allocator_effect): rows of each allocator setting paired
with glibc's, read through the real tidy path from small result files; the pipeline tables keep
settings apart; the figure and the summary section. No timing."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from augbench.analysis import allocator_effect, figures, summary, tidy
from augbench.analysis import pipelines as pipeline_tables
from augbench.analysis.figures.style import save
from augbench.analysis.groups import read_table
from augbench.workload import pipelines

STEADY_ENV = {"MALLOC_MMAP_THRESHOLD_": "1073741824", "MALLOC_TRIM_THRESHOLD_": "4294967296"}
MIMALLOC = "/env/site-packages/cmeel.prefix/lib/libmimalloc.so.3"
RECORDS: dict[str, dict[str, Any]] = {
    "glibc": {"name": "glibc", "version": "2.36", "library": "/lib/libc.so.6", "env": {}},
    "glibc-steady": {
        "name": "glibc",
        "version": "2.36",
        "library": "/lib/libc.so.6",
        "env": STEADY_ENV,
    },
    "mimalloc": {
        "name": "mimalloc",
        "version": "3.4.3",
        "library": MIMALLOC,
        "env": {"LD_PRELOAD": MIMALLOC},
    },
    # Not installed: the launcher could not preload it; the process ran under glibc.
    "jemalloc": {"name": "glibc", "version": "2.36", "library": "/lib/libc.so.6", "env": {}},
}
JEMALLOC_MISSING = "jemalloc is not installed on this machine (Debian's libjemalloc2)"


def _ok(throughput: float, **extra: Any) -> dict[str, Any]:
    return {
        "status": "ok",
        "throughputs": [throughput * 0.99, throughput, throughput * 1.01],
        "median_throughput": throughput,
        "mean_throughput": throughput,
        "std_throughput": throughput * 0.01,
        "relative_ci": 0.012,
        "ci_low": throughput * 0.99,
        "ci_high": throughput * 1.01,
        "ci_level": 0.75,
        "num_successful_runs": 3,
        **extra,
    }


def _write(
    folder: Path,
    setting: str,
    results: dict[str, Any],
    *,
    library: str = "albumentationsx",
    regime: str = "micro",
    workers: int | None = None,
    dataset: str = "d-0",
    resolution: int | None = None,
) -> Path:
    """One result file of a job run under allocator ``setting``."""
    meta = {
        "machine": "m",
        "library": library,
        "regime": regime,
        "scope": "memory",
        "system_info": {"processor": "Test CPU"},
        "dataset": {"key": dataset, "name": "d", "num_images_used": 4, "resolution": resolution},
        "benchmark_params": {"workers": workers, "batch_size": 8 if workers is not None else None},
        "allocator": RECORDS[setting],
        "allocator_setting": setting,
    }
    path = folder / f"{library}-{regime}-{workers}-{dataset}-{setting}.json"
    path.write_text(json.dumps({"metadata": meta, "results": results}))
    return path


def _micro_files(folder: Path) -> list[Path]:
    """albumentationsx micro: HorizontalFlip (no faults) and GaussianBlur (allocator-bound under
    glibc), under glibc, glibc-steady and mimalloc; jemalloc skipped."""
    blur = {"minor_faults_per_image": 800.0, "output_pages": 49.0}
    return [
        _write(folder, "glibc", {
            "HorizontalFlip": _ok(1000.0, minor_faults_per_image=0.0, output_pages=49.0),
            "GaussianBlur": _ok(100.0, **blur),
        }),
        _write(folder, "glibc-steady", {
            "HorizontalFlip": _ok(1000.0, minor_faults_per_image=0.0, output_pages=49.0),
            "GaussianBlur": _ok(125.0, minor_faults_per_image=0.0, output_pages=49.0),
        }),
        _write(folder, "mimalloc", {
            "HorizontalFlip": _ok(800.0, minor_faults_per_image=1.0, output_pages=49.0),
            "GaussianBlur": _ok(160.0, minor_faults_per_image=2.0, output_pages=49.0),
        }),
        _write(folder, "jemalloc", {
            "HorizontalFlip": {"status": "skipped", "reason": JEMALLOC_MISSING},
            "GaussianBlur": {"status": "skipped", "reason": JEMALLOC_MISSING},
        }),
    ]  # fmt: skip


@pytest.fixture
def micro(tmp_path: Path) -> pd.DataFrame:
    return tidy.load(_micro_files(tmp_path))


def _pair(effect: pd.DataFrame, setting: str, transform: str) -> pd.Series:
    rows = effect[(effect["setting"] == setting) & (effect["transform"] == transform)]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def test_the_tidy_rows_carry_the_setting_and_its_tag(micro: pd.DataFrame) -> None:
    rows = micro.set_index(["allocator_setting", "transform"])
    assert rows.loc[("glibc", "GaussianBlur"), "variant"] == ""
    assert rows.loc[("mimalloc", "GaussianBlur"), "variant"] == "allocator mimalloc"
    assert rows.loc[("mimalloc", "GaussianBlur"), "allocator"] == "mimalloc"
    assert rows.loc[("jemalloc", "GaussianBlur"), "allocator"] == "glibc"  # not applied


def test_each_setting_row_is_paired_with_glibcs_and_below_one_is_faster(
    micro: pd.DataFrame,
) -> None:
    effect = allocator_effect.table(micro)
    assert list(effect.columns) == list(allocator_effect.COLUMNS)
    assert len(effect) == 6  # 2 transforms x 3 settings other than glibc
    assert set(effect["variant"]) == {""}  # the allocator tag is stripped for the pairing
    steady = _pair(effect, "glibc-steady", "GaussianBlur")
    assert steady["glibc_ms_per_image"] == pytest.approx(10.0)
    assert steady["setting_ms_per_image"] == pytest.approx(8.0)
    assert steady["time_vs_glibc"] == pytest.approx(0.8)  # 100 / 125: faster with the setting
    assert steady["glibc_allocator_bound"] is True  # 800 faults/img > 49 pages
    assert steady["glibc_minor_faults_per_image"] == 800.0
    assert steady["setting_minor_faults_per_image"] == 0.0
    assert steady["output_pages"] == 49.0
    assert steady["glibc_relative_ci"] == steady["setting_relative_ci"] == 0.012
    assert steady["allocator"].startswith("glibc MALLOC_MMAP_THRESHOLD_=1073741824")
    assert steady["status"] == "ok" and steady["reason"] == ""
    mimalloc = _pair(effect, "mimalloc", "HorizontalFlip")
    assert mimalloc["time_vs_glibc"] == pytest.approx(1.25)  # 1000 / 800: slower
    assert mimalloc["allocator"] == "mimalloc"  # the proof it was in force
    assert mimalloc["glibc_allocator_bound"] is False
    assert _pair(effect, "mimalloc", "GaussianBlur")["time_vs_glibc"] == pytest.approx(0.625)
    # Stable order: regime, library, transform, setting.
    assert effect["transform"].tolist()[:3] == ["GaussianBlur"] * 3
    assert effect["setting"].tolist()[:3] == ["glibc-steady", "jemalloc", "mimalloc"]


def test_a_skipped_setting_row_stays_with_its_reason_and_no_ratio(micro: pd.DataFrame) -> None:
    row = _pair(allocator_effect.table(micro), "jemalloc", "GaussianBlur")
    assert row["status"] == "skipped"
    assert row["reason"] == JEMALLOC_MISSING
    assert math.isnan(row["time_vs_glibc"]) and math.isnan(row["setting_ms_per_image"])
    assert row["glibc_ms_per_image"] == pytest.approx(10.0)  # the glibc side is still there
    assert row["glibc_status"] == "ok"


def test_a_row_without_a_glibc_counterpart_says_so(tmp_path: Path) -> None:
    files = [
        _write(tmp_path, "glibc", {"ColorJitter": _ok(50.0)}, regime="cpu_dataloader", workers=2),
        # Another worker count: not the same work, so no pair.
        _write(tmp_path, "mimalloc", {"ColorJitter": _ok(60.0)}, regime="cpu_dataloader",
               workers=4),
        _write(tmp_path, "mimalloc", {"ColorJitter": _ok(55.0)}, regime="cpu_dataloader",
               workers=2),
    ]  # fmt: skip
    effect = allocator_effect.table(tidy.load(files)).set_index("workers")
    assert effect.loc[2, "time_vs_glibc"] == pytest.approx(50.0 / 55.0)
    assert effect.loc[4, "status"] == "ok"
    assert effect.loc[4, "reason"] == allocator_effect.NO_COUNTERPART
    assert math.isnan(effect.loc[4, "time_vs_glibc"])
    assert effect.loc[4, "glibc_status"] == ""


def test_a_failed_glibc_row_gives_no_ratio_and_names_it(tmp_path: Path) -> None:
    files = [
        _write(tmp_path, "glibc", {"Affine": {"status": "error", "reason": "boom"}}),
        _write(tmp_path, "mimalloc", {"Affine": _ok(10.0)}),
    ]
    row = allocator_effect.table(tidy.load(files)).iloc[0]
    assert row["reason"] == "the glibc row is error: boom"
    assert math.isnan(row["time_vs_glibc"])


def test_glibc_only_or_no_rows_give_an_empty_table_with_the_columns(tmp_path: Path) -> None:
    only = tidy.load([_write(tmp_path, "glibc", {"HorizontalFlip": _ok(1000.0)})])
    for frame in (only, only.iloc[:0], pd.DataFrame()):
        effect = allocator_effect.table(frame)
        assert effect.empty and list(effect.columns) == list(allocator_effect.COLUMNS)
    assert allocator_effect.summary_lines(only) == []
    assert "## Allocator effect" not in summary.markdown(only)


def test_the_table_is_the_same_from_the_written_csv(micro: pd.DataFrame, tmp_path: Path) -> None:
    micro.to_csv(tmp_path / "all_results.csv", index=False)  # as aggregate writes it
    again = allocator_effect.table(read_table(tmp_path / "all_results.csv"))
    direct = allocator_effect.table(micro)
    pd.testing.assert_series_equal(again["time_vs_glibc"], direct["time_vs_glibc"])
    assert again["reason"].tolist() == direct["reason"].tolist()


def test_datasets_are_paired_with_their_own(tmp_path: Path) -> None:
    files = [
        _write(tmp_path, setting, {"Resize": _ok(tp)}, dataset=key, resolution=res)
        for setting, key, res, tp in (
            ("glibc", "d-224", 224, 100.0),
            ("glibc", "d-1024", 1024, 10.0),
            ("mimalloc", "d-224", 224, 100.0),
            ("mimalloc", "d-1024", 1024, 20.0),
        )
    ]
    effect = allocator_effect.table(tidy.load(files)).set_index("dataset")
    assert effect.loc["d-224", "time_vs_glibc"] == pytest.approx(1.0)
    assert effect.loc["d-1024", "time_vs_glibc"] == pytest.approx(0.5)
    assert effect.loc["d-1024", "resolution"] == 1024


# -- pipelines: tagged rows are still selected, and settings are kept apart -----------------------
def _pipeline_files(folder: Path) -> list[Path]:
    fields = {"pipeline": "p1", "variant": pipelines.VARIANT}
    step = {**fields, "variant": pipelines.STEP_VARIANT}

    def results(whole: float, shares: tuple[float, float]) -> dict[str, Any]:
        return {
            "p1": _ok(whole, harness_vs_bare=1.01, bare_ms_per_image=1000.0 / whole,
                      composition_effect=0.97, minor_faults_per_image=900.0, output_pages=147.0,
                      output_contract="torch.Tensor float32 3x4x4", **fields),
            "p1 · 0 A": _ok(4 * whole, step="A", step_index=0, share=shares[0],
                            seconds_per_image=shares[0] / whole, **step),
            "p1 · 1 B": _ok(2 * whole, step="B", step_index=1, share=shares[1],
                            seconds_per_image=shares[1] / whole, **step),
        }  # fmt: skip

    return [
        _write(folder, "glibc", results(100.0, (0.25, 0.75))),
        _write(folder, "glibc-steady", results(140.0, (0.4, 0.6))),
        _write(folder, "jemalloc", {"p1": {"status": "skipped", "reason": JEMALLOC_MISSING,
                                           **fields}}),
        _write(folder, "glibc", results(50.0, (0.5, 0.5)), library="torchvision"),
    ]  # fmt: skip


def test_pipeline_rows_with_an_allocator_tag_are_still_selected(tmp_path: Path) -> None:
    frame = tidy.load(_pipeline_files(tmp_path))
    assert "pipeline · allocator glibc-steady" in set(frame["variant"])
    assert len(pipeline_tables.pipeline_rows(frame)) == 4
    assert len(pipeline_tables.step_rows(frame)) == 6
    table = pipeline_tables.breakdown(frame)
    albx = table[table["library"] == "albumentationsx"]
    assert set(albx["allocator_setting"]) == {"glibc", "glibc-steady", "jemalloc"}
    by = {s: rows for s, rows in albx.groupby("allocator_setting")}
    # Each setting's steps under its own whole-pipeline row: never summed together.
    assert by["glibc"]["step"].tolist() == ["A", "B"]
    assert by["glibc"]["share"].tolist() == [0.25, 0.75]
    assert by["glibc"]["pipeline_ms_per_image"].tolist() == pytest.approx([10.0, 10.0])
    assert by["glibc-steady"]["share"].tolist() == [0.4, 0.6]
    assert by["glibc-steady"]["pipeline_ms_per_image"].tolist() == pytest.approx([1000 / 140] * 2)
    skipped = by["jemalloc"].iloc[0]
    assert skipped["status"] == "skipped" and skipped["reason"] == JEMALLOC_MISSING
    assert len(table[table["library"] == "torchvision"]) == 2
    # Speedups rank each setting only within itself.
    speed = pipeline_tables.speedup_table(frame, "p1")
    steady = speed[speed["variant"].str.contains("allocator glibc-steady")]
    assert steady["library"].tolist() == ["albumentationsx"] and steady["speedup"].isna().all()
    lines = "\n".join(pipeline_tables.summary_lines(frame))
    assert "| m | albumentationsx | p1 (allocator glibc-steady) |" in lines
    assert "| m | albumentationsx | p1 | 10.000 |" in lines


def test_pipeline_steps_are_paired_step_by_step(tmp_path: Path) -> None:
    effect = allocator_effect.table(tidy.load(_pipeline_files(tmp_path)))
    steady = effect[effect["setting"] == "glibc-steady"]
    assert steady["step"].fillna("").tolist() == ["", "A", "B"]  # whole pipeline, then steps
    whole = steady.iloc[0]
    assert whole["time_vs_glibc"] == pytest.approx(100.0 / 140.0)
    assert whole["glibc_allocator_bound"] is True  # 900 faults/img > 147 pages
    assert steady.iloc[1]["time_vs_glibc"] == pytest.approx(400.0 / 560.0)
    assert effect[effect["setting"] == "jemalloc"]["status"].tolist() == ["skipped"]


# -- the figure and the summary ------------------------------------------------------------------
def test_the_figure_is_drawn_with_two_settings_and_not_with_one(
    micro: pd.DataFrame, tmp_path: Path
) -> None:
    import matplotlib.pyplot as plt

    assert "allocator_effect" in figures.plan(micro).drawn
    drawn = figures.draw("allocator_effect", micro)
    assert not drawn.empty
    save(drawn, tmp_path / "f.png", tmp_path / "f.pdf", tmp_path / "f.caption.txt")
    assert (tmp_path / "f.png").stat().st_size > 1000
    assert (tmp_path / "f.pdf").read_bytes().startswith(b"%PDF")
    text = (tmp_path / "f.caption.txt").read_text()
    for part in ("Regime: micro.", "Metric:", "left of it the setting is faster", "Hardware: m",
                 "jemalloc: 2 skipped (" + JEMALLOC_MISSING):  # fmt: skip
        assert part in text, (part, text)

    glibc_only = micro[micro["allocator_setting"] == "glibc"]
    why = dict(figures.plan(glibc_only).skipped)["allocator_effect"]
    assert why.startswith("one allocator setting (glibc)")
    empty = figures.draw("allocator_effect", glibc_only)
    assert empty.empty
    only_skipped = micro[micro["allocator_setting"].isin(["glibc", "jemalloc"])]
    assert "2 skipped" in dict(figures.plan(only_skipped).skipped)["allocator_effect"]
    assert figures.draw("allocator_effect", only_skipped).empty
    plt.close("all")


def test_the_summary_names_the_effects_and_every_row_without_a_ratio(
    micro: pd.DataFrame, tmp_path: Path
) -> None:
    text = summary.markdown(micro, pipeline_rows=tidy.load(_pipeline_files(tmp_path)))
    section = text.split("## Allocator effect", 1)[1].split("\n## ", 1)[0]
    # One pair without faults per setting: too few to know the null spread, so no effect is
    # called real, whatever the ratios.
    assert "| glibc-steady | 3/3 | unknown (1 pairs without faults; 5 needed) | 0.80 | 0 | 0 |" in (
        section
    )
    assert "No effect beyond the null spread." in section
    assert f"- jemalloc: skipped on 3 rows (micro): {JEMALLOC_MISSING}" in section


def _null_files(folder: Path) -> list[Path]:
    """Six transforms without faults whose ratios stray within 3 % (the null spread), and
    GaussianBlur, allocator-bound under glibc, 20 % faster under glibc-steady."""
    quiet = {"minor_faults_per_image": 0.0, "output_pages": 49.0}
    drift = {"A": 1.0, "B": 1.02, "C": 0.98, "D": 1.03, "E": 0.99, "F": 1.01}
    glibc = {name: _ok(1000.0, **quiet) for name in drift}
    steady = {name: _ok(1000.0 / r, **quiet) for name, r in drift.items()}
    glibc["GaussianBlur"] = _ok(100.0, minor_faults_per_image=800.0, output_pages=49.0)
    steady["GaussianBlur"] = _ok(125.0, **quiet)
    return [_write(folder, "glibc", glibc), _write(folder, "glibc-steady", steady)]


def test_an_effect_is_real_only_beyond_the_null_spread(tmp_path: Path) -> None:
    frame = tidy.load(_null_files(tmp_path))
    effect = allocator_effect.table(frame).set_index("transform")
    spread = effect["null_spread"].iloc[0]
    assert math.log(1.02) < spread < math.log(1.031)  # the 95th percentile of |log ratio|
    blur = effect.loc["GaussianBlur"]
    assert blur["time_vs_glibc"] == pytest.approx(0.8)
    assert blur["ratio_low"] < 0.8 < blur["ratio_high"] < math.exp(-spread)
    assert blur["effect"] == "faster"
    assert set(effect.drop(index="GaussianBlur")["effect"]) == {"none"}
    section = summary.markdown(frame).split("## Allocator effect", 1)[1].split("\n## ", 1)[0]
    assert "| glibc-steady | 7/7 | x0.97-1.03 (6 pairs) | 1.00 | 1 | 0 | 6 |" in section
    assert "Effects beyond the null spread (1):" in section
    assert "GaussianBlur | 0.80 [0.79, 0.81] (glibc allocator-bound)" in section
    # The figure fills exactly the effects the table calls real, whatever their rows' precision.
    import matplotlib.pyplot as plt

    drawn = figures.draw("allocator_effect", frame)
    markers = [c for ax in drawn.figure.axes for c in ax.collections if len(c.get_offsets())]
    filled = sum(len(c.get_offsets()) for c in markers if len(c.get_facecolors()))
    hollow = sum(len(c.get_offsets()) for c in markers if not len(c.get_facecolors()))
    assert (filled, hollow) == (1, len(effect) - 1)
    plt.close("all")


def test_worker_rows_are_allowed_the_shared_memory_transfer() -> None:
    """A DataLoader row with workers faults one output's pages per image in the batch's fresh
    shared memory under every allocator (measured: ~148 faults for 147 pages under glibc-steady
    and mimalloc): only beyond twice the output's pages is it allocator-bound."""
    from augbench.analysis import faults

    assert faults.is_bound(150.0, 147.0, 0) is True
    assert faults.is_bound(150.0, 147.0, 2) is False
    assert faults.is_bound(1361.0, 147.0, "2") is True
    assert faults.is_bound(None, 147.0, 2) is None
    frame = pd.DataFrame(
        {
            "status": ["ok", "ok", "ok"],
            "workers": [0, 2, 2],
            "minor_faults_per_image": [150.0, 150.0, 400.0],
            "output_pages": [147.0, 147.0, 147.0],
        }
    )
    assert list(faults.bound_rows(frame).index) == [2, 0]


def test_a_row_of_several_processes_is_bound_when_its_most_faulting_process_is() -> None:
    """A pipeline row's processes fault as their address layouts make them under glibc as
    shipped (0 to 1029 pages per image for one pipeline in 16 fresh interpreters,
    docs/allocator.md): the row is allocator-bound when one of them faults beyond its output,
    though the mean over its processes does not."""
    from augbench.analysis import faults

    frame = pd.DataFrame(
        {
            "status": ["ok", "ok", "ok"],
            "workers": [0, 0, 0],
            "minor_faults_per_image": [100.0, 100.0, 100.0],
            "most_minor_faults_per_image": [990.0, 120.0, float("nan")],
            "output_pages": [147.0, 147.0, 147.0],
        }
    )
    assert [faults.row_faults(r) for _, r in frame.iterrows()] == [990.0, 120.0, 100.0]
    assert list(faults.bound_rows(frame).index) == [0]


def test_an_imprecise_pair_keeps_its_ratio_and_says_so(micro: pd.DataFrame) -> None:
    """A ratio of a row with a wide interval (a one-run DataLoader row) stays in the table with
    precise False and a wide ratio interval."""
    noisy = micro.copy()
    wide = (noisy["allocator_setting"] == "mimalloc") & (noisy["transform"] == "GaussianBlur")
    noisy.loc[wide, "relative_ci"] = 0.5
    noisy.loc[wide, "ci_low"] = 80.0
    noisy.loc[wide, "ci_high"] = 240.0
    effect = allocator_effect.table(noisy)
    mimalloc = effect[effect["setting"] == "mimalloc"].set_index("transform")
    assert not mimalloc.loc["GaussianBlur", "precise"]
    assert mimalloc.loc["HorizontalFlip", "precise"]
    assert not math.isnan(mimalloc.loc["GaussianBlur", "time_vs_glibc"])  # still a ratio
    low, high = mimalloc.loc["GaussianBlur", ["ratio_low", "ratio_high"]]
    assert low < 0.5 and high > 1.0
