"""The cpu_dataloader loaders' declarations (augbench/workload/loaders.py), the config's refusal of
an unknown one, and the jobs and result names a configured loader adds (the default run's names
unchanged). The loaders in a library env: tests/test_loaders_envs.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import REPO

from augbench.analysis import dataloader as dataloader_tables
from augbench.analysis import groups, speedups, tidy
from augbench.analysis import loaders as loaders_table
from augbench.planning import regimes, sweep
from augbench.planning.config import ConfigError, deep_merge, resolve
from augbench.results import ok_row, write_result_file
from augbench.workload import loaders


def config(**extra: object) -> dict:
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    settings = {"preset": "smoke", "machine": "m", "dataset": {"archive": None}, **extra}
    return resolve(deep_merge(base, settings), REPO)


def dataloader_outputs(cfg: dict) -> list[str]:
    return sorted(
        path
        for job in sweep.Sweep(cfg, "d").jobs()
        if job.rule == "cpu_dataloader"
        for path in job.outputs
    )


# -- the declarations ---------------------------------------------------------------------------
def test_every_loader_is_declared_once_with_its_packages() -> None:
    assert loaders.NAMES == ("process", "thread", "spdl") and loaders.DEFAULT == "process"
    assert loaders.get("spdl").packages == (("spdl", "spdl==0.8.0"),)
    assert loaders.get("thread").packages == ()  # torchdata is optional: a futures pool stands
    assert [loaders.suffix(n) for n in loaders.NAMES] == ["", "-thread", "-spdl"]
    assert [loaders.from_suffix(loaders.suffix(n)) for n in loaders.NAMES] == list(loaders.NAMES)
    assert loaders.impl_of("thread") in (loaders.TORCHDATA_IMPL, loaders.FUTURES_IMPL)
    with pytest.raises(loaders.UnknownLoader, match="valid loaders: process, thread, spdl"):
        loaders.get("fibers")


def test_a_loader_whose_package_is_missing_says_so_in_one_line() -> None:
    missing = loaders.Loader("x", "test", packages=(("no_such_module_here", "nope==1.0"),))
    assert missing.problem() == "loader x: not installed in this env (PyPI nope==1.0)"
    assert loaders.get("process").problem() is None


# -- the config ---------------------------------------------------------------------------------
def test_the_default_is_process_only_and_an_unknown_loader_stops_the_run() -> None:
    assert config()["cpu_dataloader"]["loaders"] == ["process"]
    with pytest.raises(ConfigError) as caught:
        config(cpu_dataloader={"loaders": ["process", "fibers"]})
    message = str(caught.value)
    assert "cpu_dataloader.loaders" in message
    assert all(name in message for name in loaders.NAMES)


# -- jobs and names -----------------------------------------------------------------------------
def test_the_default_run_keeps_its_result_names() -> None:
    default = dataloader_outputs(config())
    explicit = dataloader_outputs(config(cpu_dataloader={"loaders": ["process"]}))
    assert default == explicit and default
    assert not [p for p in default if "-thread" in p or "-spdl" in p]
    assert all(p.rsplit("/", 1)[1].count("-") == 2 for p in default)  # <scope>-w<n>-<shard>


def test_a_loader_adds_the_decode_settings_named_after_it() -> None:
    chosen = config(cpu_dataloader={"loaders": ["process", "thread", "spdl"]})
    default = dataloader_outputs(config())
    outputs = dataloader_outputs(chosen)
    assert set(default) < set(outputs)
    added = sorted(set(outputs) - set(default))
    decode = [p for p in default if "/decode-w" in p]
    assert len(added) == 2 * len(decode)
    for loader in ("thread", "spdl"):
        assert sorted(p for p in added if f"-{loader}-" in p) == sorted(
            p.replace("-s0", f"-{loader}-s0") for p in decode
        )
    # Each result maps back to its kind, with the loader's wildcard.
    kind, found = regimes.kind_of_result(next(p for p in added if "-thread-" in p))
    assert kind.rule == "cpu_dataloader" and loaders.from_suffix(found["loader"]) == "thread"
    kind, found = regimes.kind_of_result(decode[0])
    assert found["loader"] == "" and loaders.from_suffix(found["loader"]) == "process"


def test_a_loader_job_measures_its_rows_only_and_is_priced_as_its_setting() -> None:
    chosen = config(
        cpu_dataloader={"loaders": ["process", "thread"], "job_per": "setting", "baseline_runs": 2}
    )
    s = sweep.Sweep(chosen, "d")
    kind = regimes.KINDS["cpu_dataloader"]
    jobs = [j for j in s.jobs() if j.rule == "cpu_dataloader"]
    thread = next(j for j in jobs if dict(j.wildcards).get("loader") == "-thread")
    flags = kind.args(s, kind, s.wildcards_of(thread))
    assert flags["loader"] == "thread" and flags["baseline-runs"] == 0
    assert flags["scope"] == "decode"
    same = next(j for j in jobs if dict(j.wildcards) == {**dict(thread.wildcards), "loader": ""})
    plain = kind.args(s, kind, s.wildcards_of(same))
    assert "loader" not in plain and plain["baseline-runs"] == 2  # the default's flags as before
    priced = {str(job.outputs): job for job in s.cost_jobs()}
    assert any("-thread-" in key for key in priced)  # the plan prices the new jobs


def test_a_library_job_lists_each_setting_with_its_loader() -> None:
    chosen = config(cpu_dataloader={"loaders": ["process", "thread"]})
    s = sweep.Sweep(chosen, "d")
    kind = regimes.KINDS["cpu_dataloader"]
    job = next(j for j in s.jobs() if j.rule == "cpu_dataloader")
    flags = kind.args(s, kind, s.wildcards_of(job))
    assert [x for x in flags["settings"] if x.endswith("-thread")] == [
        x + "-thread" for x in flags["settings"] if x.startswith("decode-") and "-t" not in x
    ]


# -- the tables ---------------------------------------------------------------------------------
def _setting_file(tmp_path: Path, loader: str, rates: dict[str, list[float]]) -> Path:
    rows = {}
    for library_rates in rates.items():
        transform, values = library_rates
        rows[transform] = {
            **ok_row(values, [0.1] * len(values), warmup_iterations=1),
            "scope": "decode", "workers": 2, "batch_size": 4, "loader": loader,
            "cpu_utilisation": 1.5, "total_pss_mb": 300.0, "first_batch_s": 0.2,
        }  # fmt: skip
    metadata = {
        "machine": "m", "regime": "cpu_dataloader", "scope": "decode", "library": "torchvision",
        "dataset": {"key": "d-0123456789ab", "name": "d"},
        "benchmark_params": {"num_images": 8, "workers": 2, "batch_size": 4},
    }  # fmt: skip
    out = tmp_path / f"decode-w2{loaders.suffix(loader)}-s000.json"
    write_result_file(out, metadata, rows)
    return out


def test_rows_carry_their_loader_and_only_the_loaders_table_divides_two(tmp_path: Path) -> None:
    files = [
        _setting_file(tmp_path, "process", {"HorizontalFlip": [100.0, 110.0, 90.0, 105.0, 95.0]}),
        _setting_file(tmp_path, "thread", {"HorizontalFlip": [200.0, 210.0, 190.0, 205.0, 195.0]}),
    ]
    frame = tidy.load(files)
    assert sorted(frame["loader"]) == ["process", "thread"]
    # The speedups compare libraries within one loader: two groups, never thread / process.
    assert len(list(groups.iter_groups(frame, "cpu_dataloader"))) == 2
    assert "loader" in speedups.compute(frame).columns
    assert "loader" in speedups.throughput_table(frame).columns
    # A worker-scaling series is one loader's.
    assert sorted(dataloader_tables.worker_scaling(frame)["loader"]) == ["process", "thread"]
    table = loaders_table.table(frame)
    assert list(table.columns) == list(loaders_table.COLUMNS)
    (row,) = table.to_dict("records")
    assert row["loader"] == "thread" and row["transform"] == "HorizontalFlip"
    assert row["ratio_vs_process"] == 2.0 and row["ratio_low"] < 2.0 < row["ratio_high"]
    assert row["cpu_utilisation"] == 1.5 and row["process_total_pss_mb"] == 300.0
    assert loaders_table.table(frame[frame["loader"] == "process"]).empty
