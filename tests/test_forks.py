"""The two forks as declarations: Albumentations 2.0.8 (MIT) and Pillow-SIMD. What they share with
their originals, what differs, how their envs are locked and built, and what is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from augbench.analysis import tidy
from augbench.logs import UserError
from augbench.planning import config, provision
from augbench.workload import adapters, catalog
from augbench.workload.adapters import albumentations_mit, pillow_simd

REPO = Path(__file__).resolve().parents[1]


def test_a_fork_never_changes_the_transform_set() -> None:
    libraries = catalog.eligibility_libraries()
    assert "albumentations_mit" not in libraries and "pillow_simd" not in libraries
    assert {"albumentationsx", "pillow"} <= set(libraries)
    # Nor the GPU tables' CPU baseline, which exactly one library declares.
    assert [n for n in adapters.names() if adapters.declared(n).cpu_reference] == [
        "albumentationsx"
    ]
    # Yet both are measured wherever their originals are.
    for fork in ("albumentations_mit", "pillow_simd"):
        declared = adapters.declared(fork)
        assert declared.capabilities == adapters.declared(declared.sibling).capabilities


def test_pillow_simd_has_exactly_pillows_mappings() -> None:
    simd, pillow = adapters.get("pillow_simd"), adapters.get("pillow")
    assert set(simd.mappings) == set(pillow.mappings)
    assert all(simd.mapping_call(n) == pillow.mapping_call(n) for n in pillow.mappings)
    for name in catalog.CANDIDATES:
        if not simd.supports(name):
            assert simd.unsupported_reason(name).startswith("pillow_simd")


def test_mit_mappings_are_spelled_in_the_2_0_8_api() -> None:
    mit = adapters.get("albumentations_mit")
    assert "blur_limit=" in mit.mapping_call("GaussianBlur")
    assert "blur_range" not in mit.mapping_call("GaussianBlur")
    assert mit.mapping_call("Rotate").startswith("A.Rotate(limit=")
    assert "alpha=50" in mit.mapping_call("Elastic")
    for name in albumentations_mit.NOT_IN_2_0_8:
        assert not mit.supports(name) and "2.0.8" in mit.unsupported_reason(name)
    # Every renamed keyword is one AlbumentationsX's own calls use.
    x_calls = " ".join(m.call for m in adapters.get("albumentationsx").mappings.values())
    for renamed in albumentations_mit.KEYWORD_SPELLING.values():
        assert all(f"{old}=" in x_calls for old in renamed)


def test_the_shipped_locks_hold_one_module_each() -> None:
    simd = provision.lock_pins(REPO / "envs/pillow_simd.txt")
    assert simd["pillow-simd"] == "12.1.1.post0" and "pillow" not in simd
    assert "torchvision" in simd  # the training model, without its Pillow
    mit = provision.lock_pins(REPO / "envs/albumentations_mit.txt")
    assert mit["albumentations"] == "2.0.8" and "albumentationsx" not in mit
    shared = provision.lock_pins(REPO / "envs/pillow.txt")
    for name in ("numpy", "torch", "torchvision"):  # the versions every env shares
        assert simd[name] == shared[name] == mit[name]


def test_an_env_that_would_hold_pillow_and_pillow_simd_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pillow_simd.txt").write_text("pillow-simd==12.1.1.post0\npillow==13.0.0\n")
    (tmp_path / "pillow.txt").write_text("pillow==13.0.0\n")
    problems = config.env_conflicts(["pillow", "pillow_simd"], tmp_path)
    assert len(problems) == 1
    assert "pillow_simd's env (pillow_simd.txt) also installs pillow" in problems[0]
    assert "lock_envs.py --only pillow_simd" in problems[0]
    assert config.env_conflicts(["pillow", "pillow_simd"], REPO / "envs") == []


def test_a_misspelt_library_is_one_line_naming_the_valid_names() -> None:
    with pytest.raises(UserError) as caught:
        base = yaml.safe_load((REPO / "config/config.yaml").read_text())
        config.resolve(config.deep_merge(base, {"libraries": ["pillow-simd"]}), REPO)
    (line,) = caught.value.problems
    assert "did you mean 'pillow_simd'" in line and "albumentations_mit" in line


def test_pillow_simd_without_a_compiler_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CC", "/nonexistent/cc")
    problem = pillow_simd.PillowSimdAdapter.build_problem()
    assert problem and "install the Debian package build-essential" in problem
    assert pillow_simd.PillowSimdAdapter.build_variables({"CC": "gcc"}) == {"CC": "gcc -mavx2"}


def test_a_missing_header_is_found_by_the_compiler() -> None:
    compiler = pillow_simd.PillowSimdAdapter.compiler({})
    if provision.shutil.which(compiler) is None:
        pytest.skip("no C compiler here")
    assert not pillow_simd._header_found(compiler, "no_such_header_anywhere.h")
    assert pillow_simd._header_found(compiler, "stddef.h")


def test_an_env_failure_writes_every_planned_file_with_its_rows(tmp_path: Path) -> None:
    """What a timed job of a library whose env cannot be built leaves: each of its result files,
    its planned rows (recipes or pipelines) env_failed with the reason, each file's setting."""
    outputs = [tmp_path / "memory-w0-s000.json", tmp_path / "decode-w2-s000.json"]
    dataloader = [
        "-m", "augbench.measuring.engines.cpu_dataloader", "--settings", "memory-w0,decode-w2",
        "--library", "pillow_simd", "--machine", "m", "--num-images", "4",
        "--transforms", "HorizontalFlip,GaussianBlur", "--outputs", *map(str, outputs),
    ]  # fmt: skip
    reason = "pillow_simd: no C compiler"
    written = provision.write_env_failure("pillow_simd", dataloader, tmp_path / "none.json", reason)
    assert written == outputs
    for path, (scope, workers) in zip(outputs, [("memory", 0), ("decode", 2)], strict=True):
        doc = json.loads(path.read_text())
        meta = doc["metadata"]
        assert (meta["scope"], meta["benchmark_params"]["workers"]) == (scope, workers)
        assert set(doc["results"]) == {"HorizontalFlip", "GaussianBlur"}
        for row in doc["results"].values():
            assert row["status"] == "env_failed" and reason in row["reason"]
    pipelines = [
        "-m", "augbench.measuring.engines.pipeline_breakdown", "--library", "pillow_simd",
        "--pipelines", json.dumps([{"name": "train_light"}, {"name": "mine"}]),
        "--output", str(tmp_path / "breakdown.json"),
    ]  # fmt: skip
    provision.write_env_failure("pillow_simd", pipelines, tmp_path / "none.json", reason)
    rows = json.loads((tmp_path / "breakdown.json").read_text())["results"]
    assert set(rows) == {"train_light", "mine"}
    # The tables keep them, each with its library, setting and reason.
    table = tidy.load(outputs)
    assert set(table["status"]) == {"env_failed"} and set(table["library"]) == {"pillow_simd"}
    settings = set(zip(table["scope"], table["workers"], strict=True))
    assert settings == {("memory", 0), ("decode", 2)}
