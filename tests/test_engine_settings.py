"""Each engine parses its command line into a typed settings record at one place (its parse
function, through augbench.measuring.engines.cli.settings_from) and passes that record on: every
field holds a value of its declared type, no engine function but the parse function sees the
argparse namespace, and a record and its parser cannot drift apart."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from augbench.measuring.engines import cli
from augbench.policy import SlowTransformPolicy
from augbench.workload import pipelines

ENGINES = REPO / "augbench" / "measuring" / "engines"
# The functions that turn a command line into a settings record.
PARSE_FUNCTIONS = {"parse_args", "parse_own_args"}
SHARED = ["--manifest", "m.json", "--num-images", "4", "--machine", "m", "--output", "o.json",
          "--env-marker", "env.json"]  # fmt: skip
FLIP = pipelines.to_json([pipelines.Pipeline("flip", (pipelines.Step("HorizontalFlip"),))])

# An example command line of each engine (what the rules and augbench.planning.provision build),
# with every kind of value its record holds: lists, policies, user pipelines, paths.
EXAMPLES: dict[str, list[str]] = {
    "micro": ["--library", "pillow", "--transforms", "HorizontalFlip,Rotate", "--shard", "s1",
              "--policy", '{"preflight_items": 3}', "--values", "2", "--channels", "9",
              "--max-megapixels", "5", *SHARED],
    "cpu_dataloader": ["--library", "pillow", "--transforms", "HorizontalFlip,flip",
                       "--pipelines", FLIP, "--settings", "memory-w0,decode-w2", "--outputs",
                       "a.json", "b.json", "--processes", "2", "--window-seconds", "0.5",
                       "--persistent-workers", "false",
                       *[a for a in SHARED if a not in ("--output", "o.json")]],
    "gpu_dataloader": ["--library", "torchvision", "--transforms", "Identity,flip", "--pipelines",
                       FLIP, "--scope", "decode", "--workers", "2", "--batch-size", "8",
                       "--randomness", "per-sample", "--gpu", "required", *SHARED],
    "dali": ["--variant", "dali-cpu", "--transforms", "HorizontalFlip", "--batch-size", "8",
             "--num-threads", "2", *SHARED],
    "training": ["--library", "torchvision", "--transforms", "RandomResizedCrop,flip",
                 "--pipelines", FLIP, "--workers", "1", "--accelerator", "sleep:5",
                 "--feeds", "cpu,gpu", "--allow-cpu-device-feed", "true", *SHARED],
    "pipeline_breakdown": ["--library", "pillow", "--pipelines", FLIP, "--warmups", "2",
                           *SHARED],
    "lazy_outputs": ["--library", "pillow", "--transforms", "HorizontalFlip,NoSuchName",
                     "--repeats", "2", *SHARED],
    "decoders": ["--library", "albumentationsx", "--decoders", "pil,simplejpeg", "--warmups",
                 "1", "--max-values", "7", *SHARED],
}  # fmt: skip


def conforms(value: Any, hint: Any) -> bool:
    """Whether ``value`` is of the annotated type ``hint`` (the kinds a settings record holds)."""
    origin, parts = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        return any(conforms(value, part) for part in parts)
    if hint is type(None):
        return value is None
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(parts) == 2 and parts[1] is Ellipsis:
            return all(conforms(v, parts[0]) for v in value)
        return len(parts) == len(value) and all(map(conforms, value, parts))
    if origin is dict:
        return isinstance(value, dict) and all(
            conforms(k, parts[0]) and conforms(v, parts[1]) for k, v in value.items()
        )
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def assert_typed(record: Any) -> None:
    assert dataclasses.is_dataclass(record) and type(record).__dataclass_params__.frozen
    hints = typing.get_type_hints(type(record))
    for field in dataclasses.fields(record):
        value = getattr(record, field.name)
        assert conforms(value, hints[field.name]), (field.name, value, hints[field.name])


@pytest.mark.parametrize("engine", sorted(EXAMPLES))
def test_each_engine_parses_its_command_line_into_a_typed_record(engine: str) -> None:
    module = importlib.import_module(f"augbench.measuring.engines.{engine}")
    settings = module.parse_args(EXAMPLES[engine])
    assert_typed(settings)
    assert isinstance(settings, cli.CommonSettings)
    assert (settings.manifest, settings.env_marker) == (Path("m.json"), Path("env.json"))
    if isinstance(settings, cli.PolicyFlag):
        assert isinstance(settings.policy, SlowTransformPolicy)
    if isinstance(settings, cli.PipelinesFlag) and "--pipelines" in EXAMPLES[engine]:
        assert list(settings.pipelines) == ["flip"]


def test_the_values_are_parsed_once_into_their_types() -> None:
    from augbench.measuring.engines import cpu_dataloader, micro, training

    settings = micro.parse_args(EXAMPLES["micro"])
    assert settings.transforms == ("HorizontalFlip", "Rotate")
    assert settings.policy.preflight_items == 3 and settings.max_megapixels == 5.0
    loader = cpu_dataloader.parse_args(EXAMPLES["cpu_dataloader"])
    assert loader.setting_list == (
        ("memory", 0, "native", "process"),
        ("decode", 2, "native", "process"),
    )
    assert loader.outputs == (Path("a.json"), Path("b.json")) and loader.persistent_workers is False
    # The command line a later process of a --processes job is started with.
    assert loader.argv == tuple(EXAMPLES["cpu_dataloader"])
    assert training.parse_args(EXAMPLES["training"]).feeds == ("cpu", "gpu")


def test_an_unknown_transform_fails_when_the_command_line_is_parsed() -> None:
    from augbench.measuring.engines import micro

    argv = ["--library", "pillow", "--transforms", "NoSuchTransform", *SHARED]
    with pytest.raises(KeyError):
        micro.parse_args(argv)


def test_the_micro_worker_parses_its_own_options_into_a_record(tmp_path: Path) -> None:
    from augbench.measuring.engines import micro_worker

    argv = ["--library", "pillow", "--transforms", "HorizontalFlip", "--cache", "c.pkl",
            "--out-dir", "out", "--progress", "p", "--loops-by-transform", '{"HorizontalFlip": 4}',
            "--worker", "--loops", "1"]  # fmt: skip
    settings, pyperf_args = micro_worker.parse_own_args(argv)
    assert_typed(settings)
    assert settings.policy is None and settings.loops_by_transform == {"HorizontalFlip": 4}
    assert pyperf_args == ["--worker", "--loops", "1"]
    first_round, _ = micro_worker.parse_own_args([*argv, "--policy", "{}"])
    assert first_round.policy == SlowTransformPolicy()


def test_a_later_process_measures_its_request_with_a_copy_of_the_settings(tmp_path: Path) -> None:
    """A --processes job starts the engine again with its argv and --process-request: the later
    process measures the request's setting, without baselines, with the window sized for each
    row by the first process."""
    from augbench.measuring.engines import cpu_dataloader
    from augbench.measuring.engines.dataloader import processes

    request, output = tmp_path / "request.json", tmp_path / "output.json"
    request.write_text(json.dumps({"scope": "decode", "workers": 2, "windows": {"r": 6}}))
    argv = [*EXAMPLES["cpu_dataloader"], "--process-request", str(request)]
    settings = cpu_dataloader.parse_args([*argv, "--process-output", str(output)])
    seen = []

    def measure(setting: Any, name: str, window: int, bar: Any) -> dict[str, Any]:
        seen.append((setting.scope, setting.workers, setting.baseline_runs, name, window))
        assert isinstance(setting, cpu_dataloader.DataLoaderSettings)
        return {"status": "ok", "throughputs": [1.0], "other": "not handed back"}

    assert processes.run_process_request(settings, measure) == 0
    assert seen == [("decode", 2, 0, "r", 6)]
    assert json.loads(output.read_text()) == {"rows": {"r": {"status": "ok", "throughputs": [1.0]}}}


def test_a_record_and_its_parser_cannot_drift_apart() -> None:
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Record:
        workers: int
        names: tuple[str, ...] = dataclasses.field(metadata={cli.FROM_FLAG: cli.comma_list})

    made = cli.settings_from(Record, argparse.Namespace(workers=2, names="a,b"))
    assert made == Record(workers=2, names=("a", "b"))
    with pytest.raises(TypeError, match="no flag or derived value for field 'names'"):
        cli.settings_from(Record, argparse.Namespace(workers=2))
    with pytest.raises(TypeError, match="flag 'extra' has no field"):
        cli.settings_from(Record, argparse.Namespace(workers=2, names="", extra=1))
    with pytest.raises(TypeError, match="derived value 'other' has no field"):
        cli.settings_from(Record, argparse.Namespace(workers=2, names=""), other=1)
    consumed = argparse.Namespace(workers=2, text="a")
    assert cli.settings_from(Record, consumed, consumed=("text",), names=("a",)).names == ("a",)


def engine_functions() -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    found = []
    for path in sorted(ENGINES.rglob("*.py")):
        name = str(path.relative_to(REPO))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((name, node))
    return found


def namespace_problems(module: str, function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """What in ``function``'s signature lets the argparse namespace past the parse function."""
    where, problems = f"{module}:{function.name}", []
    params = [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
    for param in params:
        annotation = ast.unparse(param.annotation) if param.annotation else ""
        if param.arg == "args":
            problems.append(f"{where} takes a parameter named args")
        if "Namespace" in annotation and where != "augbench/measuring/engines/cli.py:settings_from":
            problems.append(f"{where}: {param.arg} is a {annotation}")
        if "setting" in param.arg and annotation in ("", "Any"):
            problems.append(f"{where}: {param.arg} has no settings type")
    if function.name in PARSE_FUNCTIONS:
        returns = ast.unparse(function.returns) if function.returns else ""
        if "Namespace" in returns or "Settings" not in returns:
            problems.append(f"{where} returns {returns or 'nothing declared'}")
    return problems


def test_no_engine_function_but_the_parse_function_takes_the_namespace() -> None:
    """The namespace goes no further than the parse function (and the one helper that turns it
    into the record): no parameter named ``args``, none annotated ``argparse.Namespace``, no
    settings typed ``Any``; every parse function returns a record."""
    functions = engine_functions()
    assert {
        "augbench/measuring/engines/cli.py",
        "augbench/measuring/engines/dataloader/job.py",
    } <= {module for module, _ in functions}
    assert [p for module, function in functions for p in namespace_problems(module, function)] == []


@pytest.mark.parametrize(
    "planted",
    [
        "def rows(args, name: str) -> None: ...",
        "def rows(name: str, *, job: argparse.Namespace) -> None: ...",
        "def rows(settings: Any) -> None: ...",
        "def parse_args(argv: list[str]) -> argparse.Namespace: ...",
    ],
)
def test_the_scan_finds_a_function_that_takes_the_namespace(planted: str) -> None:
    function = ast.parse(planted).body[0]
    assert isinstance(function, ast.FunctionDef)
    assert len(namespace_problems("m.py", function)) == 1
