"""Config validation: presets, schema errors that name the bad value and the allowed ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from augbench.planning.config import ConfigError, coerce, resolve
from augbench.workload import catalog

REPO = Path(__file__).resolve().parents[1]
BASE = {
    "machine": "auto",
    "dataset": {"archive": None},
    "libraries": ["pillow"],
    "regimes": ["micro"],
    "envs": {},
}


@pytest.mark.parametrize("preset", ["smoke", "default", "paper"])
def test_presets_resolve(preset: str) -> None:
    cfg = resolve({**BASE, "preset": preset}, REPO)
    assert cfg["preset"] == preset
    assert cfg["transforms"]
    assert cfg["micro"]["shard_size"] >= 1


def test_paper_preset_is_the_full_set_on_2000_images() -> None:
    cfg = resolve({**BASE, "preset": "paper"}, REPO)
    assert cfg["transforms"] == catalog.names()
    assert cfg["num_images"] == 2000


def test_user_values_override_the_preset() -> None:
    cfg = resolve({**BASE, "preset": "smoke", "num_images": 5}, REPO)
    assert cfg["num_images"] == 5


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        ({"libraries": ["albx"]}, "libraries[0]: 'albx' is not one of ['albumentationsx'"),
        ({"transforms": ["Foo"]}, "transforms[0]: 'Foo' is not one of ["),
        ({"regimes": ["gpu"]}, "regimes[0]: 'gpu' is not one of ['micro'"),
        (
            {"preset": "huge"},
            "unknown preset 'huge'; allowed: ['default', 'paper', 'paper-lite', 'smoke']",
        ),
        ({"dataset": {"archive": "x.zip"}}, "dataset.archive: 'x.zip' does not match"),
        ({"num_images": 0}, "num_images: 0 is less than the minimum of 1"),
        ({"typo_key": 1}, "config error at typo_key: unknown key (valid: preset, machine,"),
        (
            {"cpu_dataloader": {"job_per": "node"}},
            "cpu_dataloader.job_per: 'node' is not one of ['setting', 'library']",
        ),
    ],
)
def test_bad_values_are_named_with_allowed_ones(override: dict, needle: str) -> None:
    with pytest.raises(ConfigError) as err:
        resolve({**BASE, "preset": "smoke", **override}, REPO)
    assert needle in str(err.value)


def test_nine_channel_scenario_has_its_own_set() -> None:
    cfg = resolve({**BASE, "preset": "paper", "channels": 9}, REPO)
    assert cfg["transforms"] == catalog.names(9)
    assert resolve({**BASE, "preset": "smoke"}, REPO)["channels"] == 3


def test_nine_channel_scenario_rejects_rgb_only_transforms() -> None:
    with pytest.raises(ConfigError, match=r"\['ColorJitter'\] not in the 9-channel set"):
        resolve({**BASE, "preset": "smoke", "channels": 9}, REPO)
    with pytest.raises(ConfigError, match="channels: 4 is not one of"):
        resolve({**BASE, "preset": "smoke", "channels": 4}, REPO)


# -- command-line values: strings coerced to the schema's types ----------------------------------
# `snakemake --config 'micro={values: 3}'` hands the config {"micro": {"values": "3"}} (YAML's
# BaseLoader); top-level values like `disable_slow_skip=true` also arrive as strings.
def test_command_line_strings_become_the_types_the_schema_asks_for() -> None:
    cfg = resolve(
        {
            **BASE,
            "preset": "smoke",
            "micro": {"values": "3", "transform_timeout_s": "2.5"},
            "cpu_dataloader": {"workers": ["0", "2"], "num_images": "null"},
            "disable_slow_skip": "true",
            "resolutions": ["224", "512"],
            "dataset": {"archive": "null", "default_images": "30"},
            "starvation": {"model_img_per_s": "1500"},
            "cloud": {"regimes": {"micro": {"machine_type": "c3-standard-4", "cpus": "4",
                                            "memory_mb": "14000"}}},
        },
        REPO,
    )  # fmt: skip
    assert cfg["micro"]["values"] == 3 and type(cfg["micro"]["values"]) is int
    assert cfg["micro"]["transform_timeout_s"] == 2.5
    assert cfg["cpu_dataloader"]["workers"] == [0, 2]
    assert cfg["cpu_dataloader"]["num_images"] is None
    assert cfg["disable_slow_skip"] is True
    assert cfg["resolutions"] == [224, 512]
    assert cfg["dataset"]["archive"] is None and cfg["dataset"]["default_images"] == 30
    assert cfg["starvation"]["model_img_per_s"] == 1500
    assert cfg["cloud"]["regimes"]["micro"]["cpus"] == 4


@pytest.mark.parametrize(
    ("text", "expected"),
    [("true", True), ("True", True), ("yes", True), ("on", True), ("false", False),
     ("no", False), ("OFF", False)],
)  # fmt: skip
def test_booleans_read_as_yaml_reads_them(text: str, expected: bool) -> None:
    cfg = resolve({**BASE, "preset": "smoke", "disable_slow_skip": text}, REPO)
    assert cfg["disable_slow_skip"] is expected


def test_strings_the_schema_takes_as_strings_stay_strings() -> None:
    cfg = resolve(
        {
            **BASE,
            "preset": "smoke",
            "machine": "123",
            "dataset": {"archive": None, "name": "2024"},
            "envs": {"dir": "1"},
            "plot_from": {"x": ["3"]},
            "cloud": {"price_source": "true", "scratch": "0"},
        },
        REPO,
    )
    assert cfg["machine"] == "123"
    assert cfg["dataset"]["name"] == "2024"
    assert cfg["envs"]["dir"] == "1"
    assert cfg["plot_from"] == {"x": ["3"]}
    assert cfg["cloud"]["price_source"] == "true" and cfg["cloud"]["scratch"] == "0"


def test_a_yaml_null_where_the_schema_allows_null_is_null() -> None:
    """As in a config file: `envs={python: null}` means the driver's interpreter, not one named
    "null" (the one exception to "a string the schema takes stays a string")."""
    cfg = resolve({**BASE, "preset": "smoke", "envs": {"python": "null"}, "pipeline": "~"}, REPO)
    assert cfg["envs"]["python"] is None and cfg["pipeline"] is None


INTEGER = {"type": "integer"}
SCHEMA = {
    "type": "object",
    "properties": {
        "count": {"type": "integer", "minimum": 1},
        "ratio": {"type": "number"},
        "label_or_size": {"oneOf": [{"type": "string", "pattern": "^[a-z]+$"}, INTEGER]},
        "size_or_off": {"anyOf": [INTEGER, {"type": "boolean"}]},
        "mode": {"type": "integer", "enum": [3, 9]},
        "flags": {"type": "object", "additionalProperties": {"type": "boolean"}},
        "rows": {"type": "array", "items": {"type": "object", "properties": {"n": INTEGER}}},
        "free": {"type": "object"},
    },
}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"count": "7"}, {"count": 7}),
        ({"count": "0"}, {"count": 0}),  # coerced; the schema then names the minimum
        ({"count": "many"}, {"count": "many"}),  # not an integer: the schema names the type
        ({"count": "3.0"}, {"count": "3.0"}),  # an integer is never read from a decimal
        ({"ratio": "3"}, {"ratio": 3}),
        ({"ratio": "0.25"}, {"ratio": 0.25}),
        ({"ratio": "1e-3"}, {"ratio": 0.001}),
        ({"ratio": "nan"}, {"ratio": "nan"}),
        ({"label_or_size": "abc"}, {"label_or_size": "abc"}),
        ({"label_or_size": "224"}, {"label_or_size": 224}),
        ({"size_or_off": "off"}, {"size_or_off": False}),
        ({"size_or_off": "8"}, {"size_or_off": 8}),
        ({"mode": "9"}, {"mode": 9}),
        ({"flags": {"a": "yes", "b": "false"}}, {"flags": {"a": True, "b": False}}),
        ({"rows": [{"n": "1"}, {"n": "2"}]}, {"rows": [{"n": 1}, {"n": 2}]}),
        ({"free": {"n": "1"}}, {"free": {"n": "1"}}),  # no types declared: left as given
        ({"other": "1"}, {"other": "1"}),  # unknown keys are reported, not coerced
        ({"count": 5, "ratio": True}, {"count": 5, "ratio": True}),  # only strings are coerced
    ],
)
def test_coerce_tries_each_type_the_schema_allows(value: dict, expected: dict) -> None:
    before = repr(value)
    assert coerce(value, SCHEMA) == expected
    assert repr(value) == before  # the input is not changed in place


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        (
            {"micro": {"valuse": "3"}},
            "config error at micro.valuse: unknown key; did you mean 'values'? (valid: processes, "
            "min_processes, values,",
        ),
        ({"micor": {}}, "config error at micor: unknown key; did you mean 'micro'?"),
        (
            {"cloud": {"regimes": {"micro": {"machine_typ": "c3-standard-4"}}}},
            "config error at cloud.regimes.micro.machine_typ: unknown key; did you mean "
            "'machine_type'?",
        ),
        (
            {"pipelines": [{"nme": "x", "steps": ["HorizontalFlip"]}]},
            "config error at pipelines[0].nme: unknown key; did you mean 'name'?",
        ),
        ({"regimes": ["mikro"]}, "did you mean 'micro'?"),
        (
            {"preset": "smok"},
            "unknown preset 'smok'; allowed: ['default', 'paper', 'paper-lite', 'smoke']",
        ),
        ({"preset": "smok"}, "did you mean 'smoke'?"),
        ({"transforms": "al"}, "config error at transforms: 'al' is neither 'all' nor a list"),
        ({"micro": {"values": "many"}}, "micro.values: 'many' is not of type 'integer'"),
    ],
)
def test_unknown_keys_and_values_name_the_nearest_valid_one(override: dict, needle: str) -> None:
    with pytest.raises(ConfigError) as err:
        resolve({**BASE, "preset": "smoke", **override}, REPO)
    assert needle in str(err.value)


def test_every_problem_is_reported_once_in_one_line() -> None:
    with pytest.raises(ConfigError) as err:
        resolve(
            {**BASE, "preset": "smoke", "micro": {"valuse": "3", "warmups": "-1"}, "gpu": "x"},
            REPO,
        )
    problems = err.value.problems
    assert len(problems) == 3, problems
    assert all("\n" not in p and p.startswith("config error at ") for p in problems)
    assert [p.split(":")[0] for p in problems] == [  # sorted by where
        "config error at gpu",
        "config error at micro.valuse",
        "config error at micro.warmups",
    ]
    assert not any("was unexpected" in p for p in problems)  # the unknown key, reported once
