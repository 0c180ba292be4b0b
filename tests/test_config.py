"""Config validation: presets, schema errors that name the bad value and the allowed ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from augbench import catalog
from augbench.config import ConfigError, resolve

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
        ({"preset": "huge"}, "unknown preset 'huge'; allowed: ['default', 'paper', 'smoke']"),
        ({"dataset": {"archive": "x.zip"}}, "dataset.archive: 'x.zip' does not match"),
        ({"num_images": 0}, "num_images: 0 is less than the minimum of 1"),
        ({"typo_key": 1}, "'typo_key' was unexpected"),
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
