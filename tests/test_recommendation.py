"""The answer page: one table per machine (a column per library with its version, the winner in
bold only when decided), one verdict sentence per pipeline from augbench.decision over process
values, the one-thread comparison in its own column, the share of the target model's need and
the workers that feed it (from the real starvation table), cost with its marker, and words for
what was not measured."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

from augbench.analysis import recommendation, starvation
from augbench.analysis.groups import read_table
from augbench.planning.starvation_model import Model, target_model, target_problem

CLOUD = {
    "regimes": {
        "cpu_dataloader": {"machine_type": "n2-standard-16", "cpus": 16},
        "micro": {"machine_type": "c3-standard-4", "cpus": 4},
    },
    "prices_usd_per_hour": {"n2-standard-16": 0.8},
}
VERSIONS = {"albumentationsx": "2.5.1", "torchvision": "0.28.0", "pillow": "13.0.0"}


def _row(
    pipeline: str, library: str, workers: int, rates: list[float] | None, **extra: object
) -> dict:
    """A tidy pipeline row whose ``rates`` are its processes' throughputs (one per process)."""
    status = extra.pop("status", "ok")
    if extra.get("regime") == "micro":
        extra.setdefault("scope", "memory")
    median = float(pd.Series(rates).median()) if rates else None
    return {
        "pipeline": pipeline,
        "transform": pipeline,
        "variant": "pipeline",
        "machine": "m-2c",
        "usable_cores": 2,
        "dataset": "d-abc",
        "resolution": None,
        "randomness": None,
        "regime": "cpu_dataloader",
        "scope": "decode",
        "batch_size": 32,
        "library": library,
        "library_version": VERSIONS.get(library, "1.0"),
        "workers": workers,
        "status": status,
        "reason": "" if status == "ok" else "step 1 Foo: not in this library",
        "median_throughput": median,
        "throughputs": json.dumps(rates) if rates else None,
        "processes": len(rates) if rates else None,
        "ci_low": min(rates) if rates else None,
        "ci_high": max(rates) if rates else None,
        "ci_level": 0.95,
        "allocator_setting": "glibc",
        "under_load": False,
        **extra,
    }


def _around(rate: float, n: int = 5, spread: float = 0.02) -> list[float]:
    return [rate * (1 + spread * (i - (n - 1) / 2) / n) for i in range(n)]


@pytest.fixture
def rows() -> pd.DataFrame:
    return pd.DataFrame(
        [
            # "fast": decided, 2x over five processes each; 2 workers feed a 300 img/s model.
            _row("fast", "albumentationsx", 0, _around(200.0)),
            _row("fast", "albumentationsx", 2, _around(600.0)),
            _row("fast", "torchvision", 0, _around(100.0)),
            _row("fast", "torchvision", 2, _around(300.0)),
            _row("fast", "pillow", 2, None, status="unsupported"),
            # Another allocator setting is never ranked against glibc's rows.
            _row("fast", "torchvision", 2, _around(5000.0), allocator_setting="mimalloc"),
            # "close": the processes overlap: no clear winner.
            _row("close", "albumentationsx", 2, _around(500.0, spread=0.3)),
            _row("close", "torchvision", 2, _around(490.0, spread=0.3)),
            # "rough": 1.5x from two processes each: below the level, not decided ...
            _row("rough", "albumentationsx", 2, [590.0, 610.0]),
            _row("rough", "torchvision", 2, [395.0, 405.0]),
            # ... and its one-thread rows (five processes each) decide, in their own column.
            _row("rough", "albumentationsx", -1, _around(900.0), regime="micro"),
            _row("rough", "torchvision", -1, _around(450.0), regime="micro"),
            # "loaded": 2x over five processes, but torchvision's row was measured under load.
            _row("loaded", "albumentationsx", 2, _around(600.0)),
            _row("loaded", "torchvision", 2, _around(300.0), under_load=True),
            # "single": one library runs it; the other's missing step is named.
            _row("single", "albumentationsx", 2, _around(50.0)),
            _row("single", "torchvision", 2, None, status="unsupported"),
            _row("single", "pillow", 2, None, status="unsupported"),
            # "broken": no library ran it.
            _row("broken", "albumentationsx", 2, None, status="error"),
        ]
    )


PIPELINES = [
    {"name": n, "yours": False} for n in ("fast", "close", "rough", "loaded", "single", "broken")
] + [{"name": "mine", "yours": True}]


def _recommend(rows: pd.DataFrame, model: Model, starved: pd.DataFrame | None = None):
    if starved is None:
        starved = starvation.table(rows[rows["allocator_setting"] == "glibc"], [model])
    return recommendation.recommend(rows, starved, PIPELINES, model, CLOUD)


@pytest.fixture
def rec(rows: pd.DataFrame) -> pd.DataFrame:
    return _recommend(rows, Model("m300", 300.0)).set_index("pipeline")


@pytest.fixture
def page(rec: pd.DataFrame) -> str:
    return "\n".join(recommendation.markdown(rec.reset_index(), depth=1))


def _table_row(page: str, pipeline: str) -> list[str]:
    line = next(x for x in page.splitlines() if x.startswith(f"| {pipeline} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def _tables(page: str) -> str:
    return "\n".join(line for line in page.splitlines() if line.startswith("|"))


def _header(page: str) -> list[str]:
    line = next(x for x in page.splitlines() if x.startswith("| pipeline |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_the_users_pipeline_comes_first_and_says_why_it_has_no_answer(rec, page) -> None:
    assert list(rec.index) == ["mine", "fast", "close", "rough", "loaded", "single", "broken"]
    mine = rec.loc["mine"]
    assert mine["status"] == "not measured" and "no rows yet" in mine["why"]
    assert "Not measured: mine (yours): no rows yet" in page


def test_one_table_per_machine_a_column_per_library_with_its_version(page) -> None:
    assert page.startswith("# The answer\n") and page.count("\n## m-2c\n") == 1
    head = _header(page)
    assert head[:4] == ["pipeline", "AlbumentationsX 2.5.1", "torchvision 0.28.0", "Pillow 13.0.0"]
    assert head[4:6] == ["verdict", "one thread"]
    assert "share of m300's 300 img/s" in head and "workers to feed" in head
    # Machine, setting and definitions once, under the table.
    assert page.count("Machine: m-2c, 2 cores") == 1
    assert page.count("Setting: DataLoader, read + decode + pipeline, 2 workers, batch 32") == 1


def test_a_run_without_the_breakdown_has_no_one_thread_column(rec) -> None:
    bare = rec.reset_index().assign(one_thread_margin=None)
    page = "\n".join(recommendation.markdown(bare, depth=1))
    head = _header(page)
    assert "one thread" not in head and head[4] == "verdict"
    assert all(len(_table_row(page, p)) == len(head) for p in ("fast", "close"))
    assert "One thread:" not in page


def test_a_decided_margin_is_a_sentence_and_the_winner_is_bold(rec, page) -> None:
    fast = rec.loc["fast"]
    assert fast["library"] == "albumentationsx" and fast["img_per_s"] == pytest.approx(600.0)
    # Against the runner-up at the same setting, not the mimalloc row; over five processes each.
    assert fast["runner_up"] == "torchvision" and fast["margin"] == pytest.approx(2.0)
    assert fast["margin_low"] > 1 and fast["margin_level"] >= 0.9
    assert fast["verdict"] == "faster" and fast["decided"]
    assert fast["processes"] == 5 and fast["ci_level"] >= 0.9
    cells = _table_row(page, "fast")
    assert cells[1] == "**600**" and cells[2] == "300" and cells[3] == "no Foo"
    assert re.fullmatch(
        r"AlbumentationsX is 2\.0x faster than torchvision \[\d\.\d+, \d\.\d+\]", cells[4]
    )
    assert "pillow unsupported" in fast["other_libraries"]
    libraries = json.loads(fast["libraries"])
    assert libraries["pillow"]["reason"] == "no Foo" and libraries["torchvision"]["processes"] == 5


def test_an_interval_holding_one_is_no_clear_winner_and_nobody_is_bold(rec, page) -> None:
    close = rec.loc["close"]
    assert close["verdict"] == "no clear winner" and not close["decided"]
    assert close["margin_low"] <= 1 <= close["margin_high"]
    cells = _table_row(page, "close")
    assert "**" not in " ".join(cells)
    within = math.ceil(100 * max(close["margin_high"] - 1, 1 - close["margin_low"]))
    assert cells[4] == f"no clear winner: AlbumentationsX and torchvision within {within} %"


def test_a_level_below_ninety_percent_is_not_decided_with_its_processes(rec, page) -> None:
    rough = rec.loc["rough"]
    assert rough["margin"] == pytest.approx(1.5) and rough["margin_low"] > 1
    assert rough["margin_level"] == pytest.approx(2 / 3)  # 2 x 2 processes: [min, max] at 67 %
    assert rough["verdict"] == "not decided" and not rough["decided"]
    cells = _table_row(page, "rough")
    assert cells[4] == "not decided (2 processes, 67 % interval): AlbumentationsX 1.50x torchvision"
    assert "**" not in cells[1]
    # The one-thread comparison in its own column, never in the verdict's cell.
    assert rough["one_thread_margin"] == pytest.approx(2.0)
    assert rough["one_thread_verdict"] == "faster"
    assert re.fullmatch(r"2\.0x \[\d\.\d+, \d\.\d+\]", cells[5])
    assert "thread" not in cells[4]


def test_a_row_under_load_is_flagged_and_its_margin_not_decided(rec, page) -> None:
    loaded = rec.loc["loaded"]
    assert loaded["decision_verdict"] == "faster"  # the interval alone would decide
    assert loaded["verdict"] == "not decided" and not loaded["decided"]
    assert loaded["runner_up_under_load"]
    cells = _table_row(page, "loaded")
    assert cells[4] == (
        "not decided: AlbumentationsX 2.0x torchvision; torchvision measured under load"
    )
    assert "**" not in cells[1]


def test_only_one_library_says_only_library_and_why_not_the_others(rec, page) -> None:
    single = rec.loc["single"]
    assert single["verdict"] == "only library" and not single["decided"]
    assert _table_row(page, "single")[4] == "only library (Pillow, torchvision: no Foo)"
    broken = rec.loc["broken"]
    assert broken["status"] == "not measured"
    assert broken["why"].startswith("no library ran it ok: albumentationsx error")
    assert "nan" not in page.lower()


def test_share_of_need_and_workers_to_feed_measured_or_extrapolated(rows, rec, page) -> None:
    fast = rec.loc["fast"]
    assert fast["share_of_need"] == pytest.approx(2.0, rel=0.02)  # 600 of 300 img/s
    assert fast["workers_to_feed"] == 2 and fast["workers_to_feed_basis"] == "measured"
    cells = _table_row(page, "fast")
    assert cells[-3] == "200 %" and cells[-2] == "2 (measured)"
    # A model no measured count feeds: the extrapolated count with its basis, never "none".
    big = _recommend(rows, Model("big", 5000.0)).set_index("pipeline")
    assert big.loc["fast", "workers_to_feed_basis"] == "extrapolated"
    assert big.loc["fast", "workers_to_feed"] > 2 and big.loc["fast", "scaling"]
    text = "\n".join(recommendation.markdown(big.reset_index()))
    assert "none" not in _tables(text).lower()
    assert f"| {int(big.loc['fast', 'workers_to_feed'])} (extrapolated" in text


def test_a_starvation_table_without_the_feed_columns_is_one_line(rows) -> None:
    model = Model("m300", 300.0)
    starved = starvation.table(rows[rows["allocator_setting"] == "glibc"], [model])
    old = starved.drop(columns=list(starvation.FEED_COLUMNS))
    rec = _recommend(rows, model, old).set_index("pipeline")
    assert rec.loc["fast", "fed_answer"].startswith("not in this starvation table")
    assert rec.loc["fast", "share_of_need"] == pytest.approx(2.0, rel=0.02)
    page = "\n".join(recommendation.markdown(rec.reset_index()))
    assert page.count("not in this starvation table") == 1
    assert "Workers to feed, fast, close, rough, loaded, single: not in this starvation" in page
    assert "none" not in _tables(page).lower() and "nan" not in page.lower()


def test_cost_says_measured_or_estimated_in_the_cell(rows, rec, page) -> None:
    fast = rec.loc["fast"]
    # 0.8 $/h for 16 vCPUs, 2 of them busy (2 workers + half a core, at most the 2 cores the
    # rate was measured on), at 600 img/s.
    expected = 0.8 / 16 * 2 * 1e6 / (600 * 3600)
    assert fast["usd_per_million_images"] == pytest.approx(expected, rel=0.01)
    assert fast["cost_marker"] == "estimated from m-2c"
    assert _table_row(page, "fast")[-1] == f"${expected:,.3f} estimated from m-2c"
    on_placement = rows.assign(machine_actual="gce-n2-standard-16")
    measured = _recommend(on_placement, Model("m300", 300.0)).set_index("pipeline")
    assert measured.loc["fast", "cost_marker"] == "measured"


def test_the_page_reads_back_from_its_csv_and_from_older_tables(rec, page, tmp_path) -> None:
    path = tmp_path / "recommendation.csv"
    rec.reset_index().to_csv(path, index=False)
    assert "\n".join(recommendation.markdown(read_table(path), depth=1)) == page
    # A table written before these columns existed still renders, without "nan".
    old = REPO / "docs/results/amd-epyc-2c/2026-11-26-default-run-5/recommendation.csv"
    text = "\n".join(recommendation.markdown(read_table(old)))
    assert "| imagenet_train |" in text and "nan" not in text.lower()
    assert "none" not in text.lower() and text.count("`snakemake --until figures` rebuilds") == 1
    assert "nan" not in recommendation.short_text(pd.read_csv(old)).lower()


def test_short_text_has_the_verdicts(rec) -> None:
    short = recommendation.short_text(rec.reset_index())
    assert "fast on m-2c: AlbumentationsX 600 img/s (AlbumentationsX is 2.0x faster" in short
    assert "mine (yours): not measured" in short and "nan" not in short.lower()


def test_no_pipeline_configured_is_one_sentence() -> None:
    rec = recommendation.recommend(None, None, [], Model("m", 1.0), CLOUD)
    assert rec.empty
    assert "no pipeline is configured" in "\n".join(recommendation.markdown(rec))


def words(page: str) -> int:
    """Words a reader reads: whitespace-separated tokens with a letter or digit (table rules and
    cell separators are not words)."""
    return sum(1 for token in page.split() if re.search(r"[A-Za-z0-9]", token))


def test_a_committed_runs_page_is_at_most_300_words() -> None:
    """The six shipped pipelines of a committed default-preset run, four libraries (the forks
    beside their originals: more columns than the default run's three), with the starvation
    table the workflow computes from the same rows."""
    run = REPO / "docs/results/amd-epyc-2c/2026-11-26-forks"
    rows = read_table(run / "pipeline_results.csv")
    model = Model("resnet50-a100-amp", 2470.0)
    starved = starvation.table(rows, [model])
    names = list(dict.fromkeys(rows.loc[rows["variant"] == "pipeline", "pipeline"]))
    assert len(names) == 6
    pipelines = [{"name": n, "yours": False} for n in names]
    rec = recommendation.recommend(rows, starved, pipelines, model, CLOUD)
    page = "\n".join(recommendation.markdown(rec, depth=1))
    assert words(page) <= 300, page
    assert all(f"| {n} |" in page for n in names)
    assert (rec["workers_to_feed"].notna()).all()


TARGETS = [{"name": "resnet50-a100-amp", "images_per_second": 2470}]


@pytest.mark.parametrize(
    ("target", "name", "rate"),
    [
        (None, "resnet50-a100-amp", 2470.0),
        ("resnet50-a100-amp", "resnet50-a100-amp", 2470.0),
        (300, "300-img-per-s", 300.0),
        ("450.5", "450.5-img-per-s", 450.5),
    ],
)
def test_target_is_a_model_name_or_images_per_second(target, name, rate) -> None:
    model = target_model({"target": target}, TARGETS)
    assert (model.name, model.img_per_s) == (name, rate)


@pytest.mark.parametrize("target", ["resnet-51", 0, -5, "-1", True])
def test_a_bad_target_is_one_line_naming_the_models(target) -> None:
    problem = target_problem({"target": target}, TARGETS)
    assert problem is not None and "\n" not in problem
    assert problem.startswith("config error at starvation.target:")
    assert "['resnet50-a100-amp']" in problem


def test_docs_answer_page_names_every_verdict_form() -> None:
    text = (Path(REPO) / "docs/answer.md").read_text()
    for form in ("faster than", "no clear winner", "not decided (", "only library", "under load"):
        assert form in text


def test_the_summary_opens_on_the_answer(rec, rows) -> None:
    from augbench.analysis import summary

    answer = recommendation.markdown(rec.reset_index())
    text = summary.markdown(rows.assign(under_load=False), answer=answer)
    assert text.startswith("# Benchmark summary\n\n## The answer\n\n### m-2c\n")
    assert text.index("## The rows") > text.index("**Bold**")


def test_the_committed_default_runs_page_is_at_most_300_words() -> None:
    """The page a default run wrote, as committed with its run."""
    page = REPO / "docs/results/amd-epyc-2c/2026-11-29-default-run-decided-1/recommendation.md"
    text = page.read_text()
    assert words(text) <= 300, text
    assert "AlbumentationsX 2.5.1" in text and "workers to feed" in text
