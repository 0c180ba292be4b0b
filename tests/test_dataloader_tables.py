"""Worker-scaling and data-starvation tables on fixed inputs; recipe construction."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from augbench.analysis.dataloader import parallel_efficiency, starvation, worker_scaling
from augbench.workload import catalog, recipes


def _rows(throughputs: dict[int, float | None], library: str = "pillow") -> list[dict]:
    rows = []
    for workers, thr in throughputs.items():
        rows.append(
            {
                "machine": "m",
                "dataset": "d-000000000000",
                "regime": "cpu_dataloader",
                "scope": "decode",
                "batch_size": 32,
                "variant": "",
                "library": library,
                "transform": "HorizontalFlip",
                "recipe": recipes.recipe_name("HorizontalFlip"),
                "workers": workers,
                "status": "ok" if thr is not None else "skipped",
                "reason": "" if thr is not None else "4 workers > 2 usable cores",
                "median_throughput": thr if thr is not None else math.nan,
            }
        )
    return rows


def test_recipe_names_follow_the_issue() -> None:
    assert recipes.recipe_name("HorizontalFlip") == (
        "RandomCrop224 + HorizontalFlip + Normalize + ToTensor"
    )
    # Crop transforms replace the crop.
    assert recipes.recipe_name("RandomResizedCrop") == "RandomResizedCrop + Normalize + ToTensor"
    assert recipes.steps("RandomCrop224") == ["RandomCrop224"]
    for name in catalog.names():
        assert recipes.steps(name)[0] == (name if catalog.get(name).is_crop else "RandomCrop224")
    with pytest.raises(KeyError, match="unknown transform 'Nope'"):
        recipes.steps("Nope")


def test_parallel_efficiency_definition() -> None:
    assert parallel_efficiency(180.0, 2, 100.0) == pytest.approx(0.9)
    assert parallel_efficiency(100.0, 1, 100.0) == pytest.approx(1.0)
    assert math.isnan(parallel_efficiency(90.0, 0, 100.0))  # no worker process: undefined
    assert math.isnan(parallel_efficiency(90.0, 2, math.nan))


def test_worker_scaling_table() -> None:
    tidy = pd.DataFrame(_rows({0: 90.0, 1: 100.0, 2: 150.0, 4: None}))
    table = worker_scaling(tidy).set_index("workers")
    assert list(table.index) == [0, 1, 2, 4]
    assert table.loc[2, "parallel_efficiency"] == pytest.approx(0.75)
    assert table.loc[1, "parallel_efficiency"] == pytest.approx(1.0)
    assert math.isnan(table.loc[0, "parallel_efficiency"])
    assert table.loc[0, "speedup_vs_w1"] == pytest.approx(0.9)
    assert table.loc[2, "speedup_vs_w0"] == pytest.approx(150 / 90)
    # The skipped worker count stays, with its reason and no numbers.
    assert table.loc[4, "status"] == "skipped"
    assert "usable cores" in table.loc[4, "reason"]
    assert math.isnan(table.loc[4, "median_throughput"])
    assert table["recipe"].iloc[0].startswith("RandomCrop224 + HorizontalFlip")


def test_worker_scaling_without_a_one_worker_row_has_no_efficiency() -> None:
    table = worker_scaling(pd.DataFrame(_rows({0: 90.0, 2: 150.0})))
    assert table["parallel_efficiency"].isna().all()
    assert table["speedup_vs_w0"].tolist() == pytest.approx([1.0, 150 / 90])


def test_starvation_table() -> None:
    tidy = pd.DataFrame(_rows({0: 90.0, 1: 100.0, 2: 150.0, 4: None}))
    targets = [
        {"name": "slow-gpu", "images_per_second": 120.0, "source": "test"},
        {"name": "fast-gpu", "images_per_second": 1000.0, "source": "test"},
    ]
    table = starvation(tidy, targets)
    assert len(table) == 8  # every row x every target, skipped rows included
    slow = table[table["target"] == "slow-gpu"].set_index("workers")
    assert slow.loc[2, "fed_ratio"] == pytest.approx(1.25)
    assert slow.loc[2, "keeps_up"] is True
    assert slow.loc[2, "verdict"] == "keeps up"
    assert slow.loc[1, "keeps_up"] is False
    assert slow.loc[1, "verdict"] == "starved"
    assert slow.loc[4, "verdict"] == "not measured (skipped)"
    assert (slow["min_workers_keeping_up"] == 2).all()
    fast = table[table["target"] == "fast-gpu"]
    assert fast["min_workers_keeping_up"].isna().all()
    assert not fast["keeps_up"].dropna().any()


def test_starvation_rejects_a_non_positive_target() -> None:
    with pytest.raises(ValueError, match="'broken'"):
        starvation(pd.DataFrame(_rows({0: 1.0})), [{"name": "broken", "images_per_second": 0}])


def _baseline_rows() -> pd.DataFrame:
    """Memory and decode rows of two recipes of one library at one worker count."""
    rows = []
    for scope, transform, thr, bare, transport, floor in (
        ("memory", "RandomCrop224", 1000.0, 1000.0, 1100.0, None),
        ("memory", "GaussianBlur", 250.0, 200.0, 1100.0, None),
        ("decode", "RandomCrop224", 400.0, 500.0, 450.0, 800.0),
        ("decode", "GaussianBlur", 150.0, 150.0, 450.0, 800.0),
    ):
        rows.append(
            {
                "machine": "m",
                "regime": "cpu_dataloader",
                "scope": scope,
                "dataset": "d",
                "num_images": 100,
                "batch_size": 32,
                "variant": "",
                "library": "pillow",
                "transform": transform,
                "workers": 1,
                "status": "ok",
                "median_throughput": thr,
                "bare_loop_throughput": bare,
                "regime_vs_bare": thr / bare,
                "transport_throughput": transport,
                "decode_floor_throughput": floor,
            }
        )
    return pd.DataFrame(rows)


def test_baseline_columns_transport_bound_and_decode_composition() -> None:
    from augbench.analysis.dataloader import add_baselines, decode_expectation
    from augbench.policy import TRANSPORT_BOUND_FRACTION

    table = add_baselines(_baseline_rows()).set_index(["scope", "transform"])
    crop = table.loc[("memory", "RandomCrop224")]
    assert crop["fraction_of_transport"] == pytest.approx(1000 / 1100)
    assert bool(crop["transport_bound"]) is (TRANSPORT_BOUND_FRACTION <= 1000 / 1100)
    assert not table.loc[("memory", "GaussianBlur"), "transport_bound"]
    assert table.loc[("decode", "RandomCrop224"), "below_bare_loop"]  # 0.8 < 0.95
    assert not table.loc[("memory", "GaussianBlur"), "below_bare_loop"]
    decode = table.loc[("decode", "RandomCrop224")]
    expected = 1 / (1 / 800 + 1 / 1000)
    assert decode_expectation(800.0, 1000.0) == pytest.approx(expected)
    assert decode["memory_row_throughput"] == 1000.0
    assert decode["decode_expected_throughput"] == pytest.approx(expected)
    assert decode["decode_composition_ratio"] == pytest.approx(400 / expected)
    assert math.isnan(table.loc[("memory", "RandomCrop224"), "decode_composition_ratio"])


def test_baseline_exceptions_flag_bare_loop_and_cheapest_decode_recipe() -> None:
    from augbench.analysis.dataloader import baseline_exceptions

    flagged = baseline_exceptions(_baseline_rows())
    checks = set(zip(flagged["transform"], flagged["check"], strict=True))
    # decode RandomCrop224: 400 / 500 bare; the cheapest recipe (highest memory throughput) at
    # 400 / 444 = 0.9 of its composition passes; GaussianBlur is not the cheapest.
    assert checks == {("RandomCrop224", "regime_vs_bare")}
    slow = _baseline_rows()
    slow.loc[2, "median_throughput"] = 300.0  # 300 / 444 = 0.68 < 0.8
    slow.loc[2, "regime_vs_bare"] = 1.0
    flagged = baseline_exceptions(slow)
    assert list(flagged["check"]) == ["decode_composition_ratio (cheapest recipe)"]
    assert flagged["value"].iloc[0] == pytest.approx(300 / (1 / (1 / 800 + 1 / 1000)))


def test_paired_ratio_is_the_median_of_round_by_round_ratios() -> None:
    from augbench.paired import paired_ratio

    # Round 3 was disturbed for the regime only, round 2 for the bare loop only: the ratio of the
    # medians (200 / 150 = 1.33) reads both disturbances as a harness effect, the paired median
    # does not.
    regime = [200.0, 210.0, 100.0, 190.0]
    bare = [200.0, 100.0, 105.0, 190.0]
    pairs = paired_ratio(regime, bare)
    assert pairs.pairs == 4
    assert pairs.ratios == pytest.approx([1.0, 2.1, 100 / 105, 1.0])
    assert pairs.median == pytest.approx(1.0)
    assert (pairs.low, pairs.high) == (pytest.approx(100 / 105), pytest.approx(2.1))
    # Only rounds both took part in are paired; a missing or zero term is no pair.
    assert paired_ratio([100.0, 120.0, 130.0], [100.0, 0.0]).ratios == [1.0]
    empty = paired_ratio([100.0], [])
    assert (empty.pairs, empty.median, empty.low, empty.high) == (0, None, None, None)


def test_same_job_composition_terms_are_kept_and_the_join_is_only_a_fallback() -> None:
    from augbench.analysis.dataloader import JOINED, SAME_JOB, add_baselines

    rows = _baseline_rows()
    # The decode job of RandomCrop224 measured its own memory-scope companion and floor.
    rows["decode_composition_source"] = None
    rows["source_file"] = ["mem.json", "mem.json", "dec.json", "dec.json"]
    rows.loc[2, "decode_composition_source"] = SAME_JOB
    rows.loc[2, "memory_row_throughput"] = 700.0
    rows.loc[2, "decode_expected_throughput"] = 350.0
    rows.loc[2, "decode_composition_ratio"] = 1.1
    table = add_baselines(rows).set_index(["scope", "transform"])
    same = table.loc[("decode", "RandomCrop224")]
    assert same["decode_composition_source"] == SAME_JOB
    assert same["memory_row_throughput"] == 700.0  # not the other job's 1000
    assert same["decode_expected_throughput"] == 350.0
    assert same["decode_composition_ratio"] == 1.1
    assert same["memory_row_source_file"] == "dec.json"
    joined = table.loc[("decode", "GaussianBlur")]
    assert joined["decode_composition_source"] == JOINED
    assert joined["memory_row_throughput"] == 250.0
    assert joined["memory_row_source_file"] == "mem.json"
    assert joined["decode_composition_ratio"] == pytest.approx(150 / (1 / (1 / 800 + 1 / 250)))
    assert pd.isna(table.loc[("memory", "GaussianBlur"), "decode_composition_source"])


def test_checks_script_renders_every_row_and_the_cheapest_recipes_composition() -> None:
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "tools/reports/dataloader_checks.py"
    spec = importlib.util.spec_from_file_location("dataloader_checks", script)
    assert spec is not None and spec.loader is not None
    checks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checks)
    rows = _baseline_rows()
    rows["recipe"] = [recipes.recipe_name(t) for t in rows["transform"]]
    rows["timestamp"] = "2026-11-23T18:00:00+00:00"
    rows["processor"] = "test cpu"
    rows["reason"] = ""
    rows["decode_composition_source"] = None
    text = checks.render(rows, note="noisy")
    assert "Machine m (test cpu)" in text and "noisy" in text
    table = [line for line in text.splitlines() if line.startswith("| pillow |")]
    assert len(table) == 4 + 1  # every row, and the library's line of the composition summary
    # The cheapest recipe's composition: 400 / (1 / (1/800 + 1/1000)) = 0.90, joined here.
    assert table[-1] == "| pillow | 0.90 |"
    assert "memory_row_of_another_job" in text
