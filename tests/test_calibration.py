"""A/A calibration without measuring: a library's second name resolves to its base wherever the
plan, the envs and the adapters look a library up, and the calibration counts row pairs, job
pairs and false calls with the answer's decision rule (augbench.decision)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO

from augbench import decision
from augbench.analysis import calibration, runs
from augbench.planning import provision, regimes, sweep
from augbench.planning.config import ConfigError, deep_merge, resolve
from augbench.workflow_inputs import env_marker
from augbench.workload import adapters, gpu_recipes
from augbench.workload.adapters.albumentationsx import AlbumentationsXAdapter
from augbench.workload.adapters.base import CPU_TRANSFORMS, GPU_BATCHES

ALIAS = "albumentationsx~b"


@pytest.fixture
def registered() -> Iterator[None]:
    """Aliases a test's config registers are gone after it (the registry is per process)."""
    before = set(adapters.names())
    yield
    for name in set(adapters.names()) - before:
        adapters.unregister(name)


def config(**extra: object) -> dict:
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    return resolve(deep_merge(base, {"preset": "smoke", "machine": "m", **extra}), REPO)


# -- the second name ------------------------------------------------------------------------
def test_a_second_name_is_its_base_adapter_under_its_own_name() -> None:
    declared = adapters.declared(ALIAS)
    assert issubclass(declared, AlbumentationsXAdapter)
    assert declared.name == ALIAS and declared.alias_of == "albumentationsx"
    assert adapters.get(ALIAS).name == ALIAS  # the rows' library (engines.common.metadata)
    assert declared.capabilities == AlbumentationsXAdapter.capabilities
    assert adapters.base_of(ALIAS) == "albumentationsx"
    assert adapters.base_of("pillow_simd") == "pillow_simd"
    assert adapters.is_alias(ALIAS) and not adapters.is_alias("albumentations_mit")
    # One reference library, no fork pairing: those facts stay the base's.
    assert not adapters.declared("torchvision~b").cpu_reference
    assert adapters.has_capability("torchvision~b", GPU_BATCHES)
    assert not adapters.has_capability("nolib~b", GPU_BATCHES)
    with pytest.raises(KeyError):
        adapters.declared("nolib~b")
    # Not a shipped library: the tables, docs and checks that list libraries do not list it.
    assert ALIAS not in adapters.names()


def test_a_configured_second_name_is_planned_like_its_base(registered: None) -> None:
    cfg = config(
        libraries=["albumentationsx", ALIAS],
        regimes=["micro"],
        calibration={"pairs": [["albumentationsx", ALIAS]]},
    )
    assert cfg["libraries"] == ["albumentationsx", ALIAS]
    assert ALIAS in regimes.libraries_for("micro", cfg["libraries"])
    plan = sweep.Sweep(cfg, "d")
    jobs = [j for j in plan.jobs() if j.rule == "micro"]
    assert {j.library for j in jobs} == {"albumentationsx", ALIAS}
    ours = [o for j in jobs if j.library == ALIAS for o in j.outputs]
    assert ours and all(f"/micro/{ALIAS}/" in o for o in ours)
    # The rule's own pattern takes the second name as its library wildcard.
    found = regimes.KINDS["micro"].wildcards_of(ours[0])
    assert found and found["library"] == ALIAS
    assert ALIAS in adapters.with_capability(CPU_TRANSFORMS)


def test_a_second_name_uses_its_base_env_lock_and_venv() -> None:
    assert env_marker(ALIAS) == env_marker("albumentationsx") == "results/envs/albumentationsx.json"
    lock, venv = provision.env_paths(ALIAS, Path("/r/envs/albumentationsx~b.txt"), Path(".v/x~b"))
    assert lock == Path("/r/envs/albumentationsx.txt") and venv == Path(".v/albumentationsx")
    lock, venv = provision.env_paths("pillow", Path("/r/envs/pillow.txt"), None)
    assert lock == Path("/r/envs/pillow.txt") and venv is None


def test_the_gpu_dataloader_takes_a_second_name() -> None:
    assert gpu_recipes.randomness_of("torchvision~b") == gpu_recipes.randomness_of("torchvision")
    assert gpu_recipes.randomness_of("albumentationsx~b") == ()
    from augbench.measuring.engines import gpu_dataloader

    flags = [
        "--library", "torchvision~b", "--transforms", "Identity", "--manifest", "m.json",
        "--num-images", "4", "--machine", "m", "--output", "o.json", "--scope", "decode",
        "--workers", "1", "--batch-size", "4", "--randomness", "per-sample",
    ]  # fmt: skip
    assert gpu_dataloader.parse_args(flags).library == "torchvision~b"
    with pytest.raises(SystemExit):
        gpu_dataloader.parse_args([*flags[:1], "albumentationsx~b", *flags[2:]])


def test_pairs_naming_an_unconfigured_library_are_one_line_each(registered: None) -> None:
    with pytest.raises(ConfigError) as caught:
        config(
            libraries=["albumentationsx", ALIAS],
            regimes=["micro"],
            calibration={"pairs": [["albumentationsx", "albumentationsx~c"], [ALIAS, ALIAS]]},
        )
    problems = caught.value.problems
    assert len(problems) == 2
    assert "calibration.pairs[0]" in problems[0] and "albumentationsx~c" in problems[0]
    assert "calibration.pairs[1]" in problems[1] and "repeats" in problems[1]
    with pytest.raises(ConfigError, match="nolib~b"):
        config(libraries=["albumentationsx", "nolib~b"], regimes=["micro"])


# -- counting -----------------------------------------------------------------------------
def _row(library: str, transform: str, processes: list[float], **extra: object) -> dict:
    return {
        "machine": "m",
        "regime": "micro",
        "scope": "memory",
        "library": library,
        "transform": transform,
        "status": "ok",
        # two values per process, in process order (micro's pyperf processes)
        "throughputs": json.dumps([v for p in processes for v in (p * 0.99, p * 1.01)]),
        "pyperf_processes": len(processes),
        "source_file": f"results/raw/m/d/micro/{library}/s000.json",
        **extra,
    }


def test_process_values_are_the_pages_one_per_process() -> None:
    assert calibration.process_values is runs.process_values
    row = _row("a", "T", [100.0, 110.0, 90.0])
    assert calibration.process_values(row) == pytest.approx([100.0, 110.0, 90.0])


def test_rows_pair_by_name_pair_and_false_calls_are_counted() -> None:
    same = [100.0, 101.0, 99.0, 100.5, 99.5]
    rows = []
    for i in range(12):
        rows.append(_row("a", f"T{i}", same))
        rows.append(_row("a~b", f"T{i}", same))
    # Two rows a separate run made twice as fast: clear "faster" calls, i.e. false calls.
    rows.append(_row("a", "T12", [200.0, 201.0, 199.0, 200.5, 199.5]))
    rows.append(_row("a~b", "T12", same))
    rows.append(_row("a", "T13", [200.0, 201.0, 199.0, 200.5, 199.5], under_load=True))
    rows.append(_row("a~b", "T13", same, other_load_cores=0.4))
    # Measured under one name only, or not ok: no pair.
    rows.append(_row("a", "lonely", same))
    rows.append(_row("a", "T99", same))
    rows.append({**_row("a~b", "T99", same), "status": "error"})
    frame = pd.DataFrame(rows)
    found = calibration.family_pairs("micro", frame, [["a", "a~b"]])
    assert len(found) == 14
    assert sum(p.false_call for p in found) == 2
    assert {p.verdict for p in found if p.false_call} == {decision.FASTER}
    line = calibration.summary_line("micro", found, "m")
    assert line["pairs"] == 14 and line["false_calls"] == 2 and line["job_pairs"] == 1
    assert line["measured_pairs"] == 14 and line["under_load_pairs"] == 1
    assert line["most_other_load_cores"] == 0.4
    assert line["level"] == decision.DECISION_LEVEL
    assert line["false_call_rate"] == pytest.approx(2 / 14)
    # Fewer than 20 pairs: says how many, and does not pass.
    assert line["passes"] is False
    assert "14 pairs" in line["note"] and "fewer than 20" in line["note"]


def test_twenty_pairs_with_few_false_calls_pass_and_pairs_below_the_level_do_not_count() -> None:
    same = [100.0, 101.0, 99.0, 100.5, 99.5]
    rows = []
    for i in range(20):
        rows += [_row("a", f"T{i}", same), _row("a~b", f"T{i}", same)]
    for i in range(5):  # one process each: below the level, no call either way
        rows += [_row("a", f"U{i}", [100.0]), _row("a~b", f"U{i}", [150.0])]
    found = calibration.family_pairs("micro", pd.DataFrame(rows), [["a", "a~b"]])
    line = calibration.summary_line("micro", found, "m")
    assert line["measured_pairs"] == 25 and line["pairs"] == 20
    assert line["false_calls"] == 0 and line["passes"] is True
    assert line["lowest_achieved_level"] < decision.DECISION_LEVEL


def test_the_table_has_a_line_per_kind_of_row_even_without_rows() -> None:
    same = [100.0, 101.0, 99.0]
    rows = [_row("a", "T", same), _row("a~b", "T", same)]
    pipelines = pd.DataFrame(
        [{**_row(n, "p1", same, pipeline="p1"), "step": None} for n in ("a", "a~b")]
        + [{**_row(n, "p1", same, pipeline="p1"), "step": "Flip"} for n in ("a", "a~b")]
    )
    table, pairs = calibration.calibrate(
        {"all": pd.DataFrame(rows), "pipelines": pipelines},
        [["a", "a~b"]],
        ["micro", "pipeline_breakdown", "training"],
        "m",
    )
    assert list(table.columns[:4]) == ["regime", "pairs", "false_calls", "level"]
    assert {"false_call_rate", "passes", "machine", "job_pairs"} <= set(table.columns)
    by = table.set_index("regime")
    assert by.loc["micro", "measured_pairs"] == 1
    assert by.loc["pipeline_breakdown", "measured_pairs"] == 1  # the whole row, not its step
    assert by.loc["training", "measured_pairs"] == 0 and "no pairs" in by.loc["training", "note"]
    assert not table["passes"].any()
    assert len(pairs) == 2 and set(pairs["regime"]) == {"micro", "pipeline_breakdown"}
    assert math.isnan(by.loc["training", "false_call_rate"])


# -- publishing ---------------------------------------------------------------------------
def test_the_publishing_tool_copies_the_table_with_its_readme(tmp_path: Path) -> None:
    same = [100.0, 101.0, 99.0]
    rows = pd.DataFrame([_row(n, "T", same, machine="m-2c") for n in ("a", "a~b")])
    table, pairs = calibration.calibrate({"all": rows}, [["a", "a~b"]], ["micro"], "m-2c")
    tables = tmp_path / "results" / "tables"
    tables.mkdir(parents=True)
    table.to_csv(tables / "calibration.csv", index=False)
    pairs.to_csv(tables / "calibration_pairs.csv", index=False)
    docs = tmp_path / "docs"
    done = subprocess.run(
        [sys.executable, str(REPO / "tools/checks/calibration.py"),
         "--results", str(tmp_path / "results"), "--docs", str(docs)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    folder = docs / "m-2c"
    assert (folder / "calibration.csv").read_text() == (tables / "calibration.csv").read_text()
    assert (folder / "calibration_pairs.csv").is_file()
    readme = (folder / "calibration.md").read_text()
    for needed in ("Written:", "Commit:", "Command:", "Load:", "| micro | 1 |", "fewer than 20"):
        assert needed in readme
    assert "does not pass" in done.stdout and str(folder) in done.stdout
    missing = subprocess.run(
        [sys.executable, str(REPO / "tools/checks/calibration.py"),
         "--results", str(tmp_path / "none"), "--docs", str(docs)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert missing.returncode != 0 and "calibration" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


def test_a_second_name_is_not_another_implementation_of_a_transform() -> None:
    from augbench.workload import adapters, catalog

    before = catalog.eligibility_libraries()
    adapters.register_aliases(["albumentationsx~zz"])
    try:
        assert "albumentationsx~zz" in adapters.names()
        assert catalog.eligibility_libraries() == before
    finally:
        adapters.unregister("albumentationsx~zz")
