"""Figures and analysis math on fixed small inputs covering every regime."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from synthetic import multi_regime, row

from augbench.analysis import compare, diagnostics, figures, groups, summary
from augbench.analysis.figures import coverage as coverage_fig
from augbench.analysis.figures import cpu_gpu, scaling, style
from augbench.analysis.figures import winners as winners_fig
from augbench.analysis.tidy import COLUMNS
from augbench.planning.regimes import NAMES as REGIMES
from augbench.workload import adapters

FIXTURES = Path(__file__).parent / "fixtures"


def test_every_library_has_its_own_fixed_color() -> None:
    colors = [style.library_color(library) for library in adapters.names()]
    assert len(set(colors)) == len(colors) and style.UNKNOWN_LIBRARY_COLOR not in colors
    assert style.library_color("not-a-library") == style.UNKNOWN_LIBRARY_COLOR


@pytest.mark.parametrize("name", figures.NAMES)
def test_every_figure_draws_from_all_regimes_and_says_what_it_shows(
    name: str, tmp_path: Path
) -> None:
    drawn = figures.draw(name, multi_regime())
    style.save(drawn, tmp_path / "f.png", tmp_path / "f.pdf", tmp_path / "f.caption.txt")
    assert (tmp_path / "f.png").stat().st_size > 1000
    assert (tmp_path / "f.pdf").read_bytes().startswith(b"%PDF")
    text = (tmp_path / "f.caption.txt").read_text()
    if name == "stability_dali":  # only skipped dali rows: nothing has repeated runs
        assert "No dali rows with repeated runs in these results (3 skipped)." in text
        return
    if name == "throughput_vs_resolution":  # no resolution sweep here (tests/test_resolution.py)
        assert "No ok rows of a resolution sweep in these results" in text
        return
    for part in ("Metric:", "Transform set:", "Dataset: tiny, 8 images", "Hardware: m1 (Test CPU)",
                 "Rows:"):  # fmt: skip
        assert part in text, (name, text)
    assert "Regime" in text


@pytest.mark.parametrize("name", figures.NAMES)
def test_absent_rows_give_a_figure_that_says_so(name: str) -> None:
    import matplotlib.pyplot as plt

    only_micro = multi_regime().query("regime == 'micro'")
    empty = figures.draw(name, pd.DataFrame(columns=list(COLUMNS)))
    assert "no " in empty.caption.lower()
    drawn = figures.draw(name, only_micro)
    regime = next((r for r in REGIMES if name.endswith(f"_{r}")), None)
    if regime and regime != "micro":
        assert f"no {regime} rows" in drawn.caption.lower()
    plt.close("all")


def test_unknown_figure_name_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match="unknown figure 'pie'"):
        figures.draw("pie", multi_regime())


def test_winner_counts_count_only_contested_transforms_within_one_group() -> None:
    table = winners_fig.counts(multi_regime()).set_index("group")
    micro = table.loc["m1: micro"]
    # Rotate has one (error) row only: no winner, but still counted in the bar's length.
    assert micro["albumentationsx"] == 3 and micro["no_winner"] == 1
    assert micro["transforms"] == 4 and micro["contested"] == 3
    gpu = table.loc["m1: gpu_dataloader · memory · 4 workers · batch 32"]
    assert gpu["torchvision"] == 3 and gpu["kornia"] == 0
    dali = table.loc["m1: dali · memory"]
    assert dali["contested"] == 0 and dali["no_winner"] == 3


def test_ties_give_no_winner() -> None:
    frame = pd.DataFrame(
        [
            row(library="a", transform="T", runs=[100.0]),
            row(library="b", transform="T", runs=[100.0]),
        ]
    )
    table = groups.winners(frame)
    assert table["winner"].tolist() == [""]
    assert table["gap"].tolist() == [1.0]


def test_coverage_denominators() -> None:
    table = coverage_fig.table(multi_regime())
    micro = table[table["group"] == "m1: micro"].set_index("library")
    assert micro.loc["torchvision", "coverage"] == "3/4"
    assert micro.loc["kornia", "early_stopped"] == 1
    assert micro.loc["pillow", "unsupported"] == 1
    dali = table[table["library"] == "dali"].iloc[0]
    assert dali["coverage"] == "0/3" and dali["skipped"] == 3


def test_cpu_gpu_ratio_uses_the_best_albumentationsx_dataloader_row_of_the_same_machine() -> None:
    frame = multi_regime()
    other = frame[frame["regime"] == "gpu_dataloader"].assign(machine="m2")
    table = cpu_gpu.ratios(pd.concat([frame, other]))
    # m2 has no CPU rows: its GPU rows are never divided by m1's CPU rows.
    assert set(table["machine"]) == {"m1"}
    flip = table[(table["transform"] == "HorizontalFlip") & (table["library"] == "torchvision")]
    # best albx row: 4 workers, runs 3600, 3600, 4000 -> median 3600
    assert flip["ratio"].iloc[0] == pytest.approx(6000.0 / 3600.0)


def test_worker_scaling_uses_a_fixed_transform_set() -> None:
    frame = multi_regime()
    drop = (frame["regime"] == "cpu_dataloader") & (frame["workers"] == 4)
    drop &= (frame["library"] == "pillow") & (frame["transform"] == "ColorJitter")
    table = scaling.scaling_table(frame[~drop])
    pillow = table[table["library"] == "pillow"]
    assert set(pillow["transforms"]) == {2}
    albx = table[table["library"] == "albumentationsx"].set_index("workers")
    assert albx.loc[4, "median_throughput"] == pytest.approx(1800.0)  # of 3600, 1800, 1200


def test_log_axis_only_with_a_wide_range_and_then_labelled() -> None:
    assert not style.use_log_scale([100, 200, 2000])
    assert style.use_log_scale([10, 20000])
    assert style.throughput_label("median", True).endswith("(log scale)")


def test_warmup_drift_needs_three_runs_and_flags_a_cold_first_run() -> None:
    assert diagnostics.warmup_drift([50.0, 100.0]) is None
    assert diagnostics.warmup_drift([60.0, 100.0, 101.0, 99.0]) == pytest.approx(-0.4)
    assert diagnostics.warmup_drift([98.0, 100.0, 101.0]) is None


def test_diagnostics_flag_high_cv_and_unstable_warmup() -> None:
    frame = pd.DataFrame(
        [
            row(library="a", transform="Noisy", runs=[100.0, 60.0, 140.0, 100.0]),
            row(library="a", transform="Cold", runs=[40.0, 100.0, 100.0, 101.0, 99.0]),
            row(library="a", transform="Steady", runs=[100.0, 101.0, 99.0]),
            row(library="a", transform="External", runs=[100.0, 100.0], unstable=True),
        ]
    )
    diag = diagnostics.diagnose(frame).set_index("transform")
    assert diag.loc["Noisy", "cv_high"] and diag.loc["Noisy", "flagged"]
    assert diag.loc["Cold", "warmup_unstable"]
    assert "first run -60%" in diag.loc["Cold", "detail"]
    assert not diag.loc["Steady", "flagged"]
    assert diag.loc["External", "warmup_unstable"]


def test_slow_rows_list_every_early_stop_and_the_slowest_ok_rows() -> None:
    slow = diagnostics.slow_rows(multi_regime(), slowest=2)
    early = slow[slow["kind"] == "early_stopped"]
    assert early[["library", "transform"]].values.tolist() == [["kornia", "GaussianBlur"]]
    assert early["throughput"].iloc[0] == 12.0
    per_regime = slow[slow["kind"] == "slowest_ok"].groupby("regime").size()
    assert per_regime.to_dict() == {
        "cpu_dataloader": 2, "gpu_dataloader": 2, "micro": 2, "training": 2,
    }  # fmt: skip


def test_compare_flags_changes_beyond_the_threshold() -> None:
    base = pd.DataFrame(
        [
            row(library="a", transform="T1", runs=[100.0]),
            row(library="a", transform="T2", runs=[100.0]),
            row(library="a", transform="T3", runs=[100.0]),
            row(library="a", transform="T4", runs=[100.0]),
            row(library="a", transform="Gone", runs=[100.0]),
        ]
    )
    new = pd.DataFrame(
        [
            row(library="a", transform="T1", runs=[85.0]),
            row(library="a", transform="T2", runs=[95.0]),
            row(library="a", transform="T3", runs=[130.0]),
            row(library="a", transform="T4", status="error", reason="boom"),
            row(library="a", transform="New", runs=[100.0]),
        ]
    )
    table = compare.compare(base, new).set_index("transform")
    assert table.loc["T1", "flag"] == "regression"
    assert table.loc["T1", "change"] == pytest.approx(-0.15)
    assert table.loc["T2", "flag"] == "within_threshold"
    assert table.loc["T3", "flag"] == "improvement"
    assert table.loc["T4", "flag"] == "status_changed" and table.loc["T4", "is_regression"]
    assert table.loc["Gone", "flag"] == "only_in_base"
    assert table.loc["New", "flag"] == "only_in_new"
    assert table["is_regression"].sum() == 2
    loose = compare.compare(base, new, threshold=0.2).set_index("transform")
    assert loose.loc["T1", "flag"] == "within_threshold"
    assert math.isnan(loose.loc["T4", "change"])


def test_compare_refuses_different_machines_unless_asked() -> None:
    base = pd.DataFrame([row(library="a", transform="T", runs=[100.0])])
    new = base.assign(machine="m2", median_throughput=50.0)
    with pytest.raises(compare.MachineMismatch, match="--cross-machine"):
        compare.compare(base, new)
    table = compare.compare(base, new, cross_machine=True)
    assert table["flag"].tolist() == ["regression"]
    assert table["machine"].tolist() == ["m1 -> m2"]


def test_summary_has_winners_gaps_medians_and_denominators() -> None:
    text = summary.markdown(multi_regime())
    assert "## m1: micro" in text
    assert "## m1: gpu_dataloader · memory · 4 workers · batch 32" in text
    assert "| albumentationsx | 3/3 | 505 | 3/3 |" in text  # median of 1010, 505, 337
    assert "| kornia | 0/3 | 135 | 2/3 |" in text  # 202 and 67: kornia early-stopped once
    assert "Largest gaps" in text
    assert "| m1 | micro | kornia | GaussianBlur | 12.0 | slow |" in text


def test_summary_flags_rows_above_the_ci_target_with_counts_per_regime() -> None:
    rows = [
        row(library="albumentationsx", transform="HorizontalFlip", runs=[100, 101, 99],
            relative_ci=0.02, relative_ci_target=0.05),
        row(library="kornia", transform="HorizontalFlip", runs=[60, 100, 80],
            relative_ci=0.31, relative_ci_target=0.05),
        row(library="pillow", transform="HorizontalFlip", runs=[50], relative_ci=None,
            relative_ci_target=0.05),
        row(library="kornia", transform="GaussianBlur", status="error", reason="boom"),
        row(regime="cpu_dataloader", workers=2, library="torchvision", transform="HorizontalFlip",
            runs=[300, 330, 270], relative_ci=0.12, relative_ci_target=0.05),
    ]  # fmt: skip
    text = summary.markdown(pd.DataFrame(rows))
    section = text.split("## Rows above the CI target", 1)[1].split("\n## ", 1)[0]
    assert "| regime | ok rows | above target | no CI |" in section
    assert "| micro | 3 | 1 | 1 |" in section
    assert "| cpu_dataloader | 1 | 1 | 0 |" in section
    listed = [line for line in section.splitlines() if line.startswith("| m1 |")]
    # Widest CI first; the ok row within target, the single-value row and the error row are absent.
    assert [line.split(" | ")[3:5] for line in listed] == [
        ["kornia", "HorizontalFlip"],
        ["torchvision", "HorizontalFlip"],
    ]
    assert "31.0%" in listed[0] and "5%" in listed[0]


# -- which families are drawn (figures.plan) -------------------------------------------------------
def _plan_frames() -> dict[str, pd.DataFrame]:
    full = multi_regime()
    # A machine without CUDA (GPU rows skipped) that measured one DataLoader worker count.
    partial = full[~((full["regime"] == "cpu_dataloader") & (full["workers"] != 2))]
    partial = partial[partial["regime"] != "training"].copy()
    gpu_rows = partial["regime"] == "gpu_dataloader"
    partial.loc[gpu_rows, ["status", "reason"]] = ["skipped", "no CUDA device"]
    partial.loc[gpu_rows, ["throughputs", "median_throughput"]] = None
    return {
        "all regimes": full,
        "micro only": full[full["regime"] == "micro"],
        "gpu skipped, one worker count": partial,
        "no rows": pd.DataFrame(columns=list(COLUMNS)),
    }


@pytest.mark.parametrize("frame_name", list(_plan_frames()))
def test_plan_draws_exactly_the_families_whose_figure_shows_rows(frame_name: str) -> None:
    import matplotlib.pyplot as plt

    frame = _plan_frames()[frame_name]
    drawn, skipped = figures.plan(frame)
    assert set(drawn) | {name for name, _ in skipped} == set(figures.NAMES)
    assert all(why for _, why in skipped)
    for name in figures.NAMES:
        result = figures.draw(name, frame)
        assert result.empty == (name not in drawn), (name, result.caption)
        plt.close(result.figure)


def test_plan_says_why_each_family_is_not_drawn() -> None:
    frames = _plan_frames()
    why = dict(figures.plan(frames["micro only"]).skipped)
    assert why["throughput_gpu_dataloader"] == "no gpu_dataloader rows"
    assert why["cpu_vs_gpu"] == "no gpu_dataloader or dali rows"
    assert why["worker_scaling"] == "no ok DataLoader rows (cpu_dataloader, gpu_dataloader)"
    assert "throughput_vs_memory" in figures.plan(frames["micro only"]).drawn  # peak RSS
    why = dict(figures.plan(frames["gpu skipped, one worker count"]).skipped)
    assert why["stability_gpu_dataloader"] == (
        "no ok gpu_dataloader rows with repeated runs (6 skipped)"
    )
    assert why["cpu_vs_gpu"].startswith("no ok gpu_dataloader or dali row has an ok")
    assert why["worker_scaling"].startswith("no DataLoader setting measured ok at two or more")
    assert set(dict(figures.plan(frames["no rows"]).skipped).values()) == {"no result rows"}
    assert figures.plan(frames["all regimes"]).skipped == (
        ("stability_dali", "no ok dali rows with repeated runs (3 skipped)"),
        ("throughput_vs_resolution", "no ok rows of a resolution sweep (config resolutions)"),
        (
            "allocator_effect",
            "one allocator setting (glibc) in these results; config allocators lists the "
            "settings to compare (docs/allocator.md)",
        ),
    )


def test_summary_lists_the_figures_not_drawn() -> None:
    text = summary.markdown(multi_regime().query("regime == 'micro'"))
    section = text.split("## Figures not drawn", 1)[1]
    assert "5 of 17 figure families are drawn" in section
    assert "| cpu_vs_gpu | no gpu_dataloader or dali rows |" in section
    full = summary.markdown(multi_regime())
    assert "| stability_dali | no ok dali rows with repeated runs (3 skipped) |" in full


def test_cpu_gpu_figure_names_the_machines_of_each_side_per_panel() -> None:
    frame = multi_regime()
    cpu = frame["regime"] == "cpu_dataloader"
    frame.loc[cpu, "machine_actual"] = "cpu-vm"
    frame.loc[frame["regime"] == "gpu_dataloader", "machine_actual"] = "gpu-vm"
    second = frame[cpu & (frame["library"] == "albumentationsx")].assign(machine_actual="cpu-vm-2")
    second["median_throughput"] = second["median_throughput"] * 2
    table = cpu_gpu.ratios(frame)
    pairs = zip(table["cpu_machine_actual"], table["gpu_machine_actual"], strict=True)
    assert set(pairs) == {("cpu-vm", "gpu-vm")}
    drawn = cpu_gpu.draw(frame)
    assert "m1: CPU rows from cpu-vm, GPU rows from gpu-vm" in drawn.caption
    assert len(drawn.figure.axes) == 1
    both = cpu_gpu.draw(pd.concat([frame, second], ignore_index=True))
    assert len(both.figure.axes) == 2  # one panel per actual CPU machine, never mixed
    assert "m1: CPU rows from cpu-vm-2, GPU rows from gpu-vm" in both.caption
    assert "Under m1 the CPU reference rows come from more than one machine" in both.caption
    import matplotlib.pyplot as plt

    plt.close("all")
