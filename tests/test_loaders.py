"""The cpu_dataloader loaders' declarations (augbench/loaders.py), the config's refusal of an
unknown one, and the jobs and result names a configured loader adds (the default run's names
unchanged). The loaders in a library env: tests/test_loaders_envs.py."""

from __future__ import annotations

import pytest
import yaml
from conftest import REPO

from augbench import loaders, paths, regimes, sweep
from augbench.config import ConfigError, deep_merge, resolve


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
    assert kind.rule == "cpu_dataloader" and paths.loader_name(found["loader"]) == "thread"
    kind, found = regimes.kind_of_result(decode[0])
    assert found["loader"] == "" and paths.loader_name(found["loader"]) == "process"


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
