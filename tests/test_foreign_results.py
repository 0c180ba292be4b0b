"""Result files written by other tools keep their meaning: early_stopped next to status "ok",
supported: false, variance flags, the run's scenario (channels, scenario, mode) and the slow
threshold the file records. The published fixture plus small files crafted in its format."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from augbench.analysis import speedups, summary, tidy
from augbench.analysis.groups import iter_groups, winners

FIXTURE = Path(__file__).parent / "fixtures" / "external-results" / "pillow_micro_results.json"


def _ok(median: float) -> dict:
    runs = [median * 0.99, median, median * 1.01]
    return {
        "status": "ok", "supported": True, "early_stopped": False, "variance_stable": True,
        "throughputs": runs, "median_throughput": median, "mean_throughput": median,
        "std_throughput": median * 0.01, "num_successful_runs": 3,
    }  # fmt: skip


def _foreign(tmp_path: Path, name: str, library: str, results: dict, **meta: object) -> Path:
    """A file in the fixture's own format (its metadata, our rows), as that tool writes them."""
    payload = json.loads(FIXTURE.read_text())
    payload["metadata"] = copy.deepcopy(payload["metadata"])
    payload["metadata"]["library"] = library
    payload["metadata"]["library_versions"][library] = "9.9.9"
    for key, value in meta.items():
        if key in ("num_channels", "slow_threshold_sec_per_item"):
            payload["metadata"]["benchmark_params"][key] = value
        else:
            payload["metadata"][key] = value
    payload["results"] = results
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(payload))
    return path


@pytest.fixture
def nine_channel_run(tmp_path: Path) -> list[Path]:
    """A 9-channel run of two libraries (slow threshold 0.1 s/item) and an RGB run of one more
    library over the fixture's dataset, next to the fixture itself."""
    slow = {
        "status": "ok", "supported": True, "early_stopped": True, "median_throughput": 8.0,
        "throughputs": [8.0], "early_stop_reason": "",
    }  # fmt: skip
    pillow_9 = _foreign(
        tmp_path, "pillow_9ch", "pillow",
        {
            "HorizontalFlip": _ok(900.0),
            "GaussianBlur": slow,
            "Equalize": {"status": "ok", "supported": False, "median_throughput": 0.0},
            "Rotate": {**_ok(300.0), "variance_stable": False},
        },
        scenario="image-9ch", num_channels=9, slow_threshold_sec_per_item=0.1,
    )  # fmt: skip
    albx_9 = _foreign(
        tmp_path, "albumentationsx_9ch", "albumentationsx",
        {"HorizontalFlip": _ok(1000.0), "GaussianBlur": _ok(50.0), "Rotate": _ok(250.0)},
        scenario="image-9ch", num_channels=9, slow_threshold_sec_per_item=0.1,
    )  # fmt: skip
    albx_rgb = _foreign(
        tmp_path, "albumentationsx_rgb", "albumentationsx", {"HorizontalFlip": _ok(99999.0)}
    )
    return [FIXTURE, pillow_9, albx_9, albx_rgb]


def test_flags_keep_their_meaning(nine_channel_run: list[Path]) -> None:
    frame = tidy.load(nine_channel_run)
    nine = frame[frame["channels"] == 9].set_index(["library", "transform"])
    blur = nine.loc[("pillow", "GaussianBlur")]
    assert blur["status"] == "early_stopped"
    assert blur["preflight_throughput"] == 8.0  # drawn and listed as a preflight, open marker
    assert "0.1 s/item" in blur["reason"]  # the file's threshold, not ours (0.05)
    assert nine.loc[("pillow", "Equalize"), "status"] == "unsupported"
    assert nine.loc[("pillow", "Rotate"), "status"] == "ok"
    assert not nine.loc[("pillow", "Rotate"), "variance_stable"]  # kept, flagged below
    assert set(nine["slow_threshold_sec_per_item"]) == {0.1}
    # The published file records no threshold: none is invented for it.
    published = frame[frame["source_file"] == str(FIXTURE)]
    assert published["slow_threshold_sec_per_item"].isna().all()
    assert set(published["status"]) == {"ok"}


def test_scenario_reaches_the_row_and_is_never_ranked_with_rgb(
    nine_channel_run: list[Path],
) -> None:
    frame = tidy.load(nine_channel_run)
    nine = frame[frame["channels"] == 9]
    assert set(nine["scenario"]) == {"image-9ch"} and set(nine["mode"]) == {"micro"}
    assert set(nine["variant"]) == {"image-9ch · channels9"}
    rgb = frame[frame["channels"] == 3]
    assert set(rgb["variant"]) == {"image-manual"} and set(rgb["regime"]) == {"micro"}

    table = speedups.compute(frame)
    flips = table[table["transform"] == "HorizontalFlip"].set_index(["variant", "library"])
    # 9-channel pillow competes with 9-channel albumentationsx only, never the 99999 img/s RGB row.
    assert flips.loc[("image-9ch · channels9", "pillow"), "fastest_other_throughput"] == 1000.0
    assert flips.loc[("image-manual", "pillow"), "fastest_other_throughput"] == 99999.0
    labels = [g.label for g in iter_groups(frame)]
    assert len(labels) == 2 and any("image-9ch · channels9" in label for label in labels)


def test_early_stopped_rows_win_nothing_and_are_counted(nine_channel_run: list[Path]) -> None:
    frame = tidy.load(nine_channel_run)
    table = speedups.compute(frame).set_index(["variant", "transform", "library"])
    blur = ("image-9ch · channels9", "GaussianBlur")
    assert math.isnan(table.loc[(*blur, "pillow"), "speedup"])
    # albumentationsx's 50 img/s has no ok competitor: no speedup against a preflight.
    assert math.isnan(table.loc[(*blur, "albumentationsx"), "speedup"])
    group = next(g for g in iter_groups(frame) if g.key["variant"] == blur[0])
    win = winners(group.rows).set_index("transform")
    assert win.loc["GaussianBlur", "winner"] == "" and win.loc["GaussianBlur", "contenders"] == 1
    text = summary.markdown(frame)
    early = text.split("## Early-stopped rows")[1]
    assert "| pillow | GaussianBlur | 8.0 |" in early and "None." not in early
    assert "recorded variance_stable=false" in text.split("## Unstable rows")[1]
    coverage = speedups.coverage(frame)
    pillow_9 = coverage[(coverage["library"] == "pillow") & (coverage["ok"] == 2)].iloc[0]
    assert pillow_9["early_stopped"] == 1 and pillow_9["unsupported"] == 1
    assert pillow_9["coverage"] == "2/4"


def test_explicit_non_ok_status_wins_over_flags(tmp_path: Path) -> None:
    path = _foreign(
        tmp_path, "mixed", "pillow",
        {
            "A": {"status": "error", "early_stopped": True, "error": "boom"},
            "B": {"supported": False},
            "C": {"early_stopped": "true", "median_throughput": 3.0},
        },
    )  # fmt: skip
    statuses = tidy.load([path]).set_index("transform")["status"].to_dict()
    assert statuses == {"A": "error", "B": "unsupported", "C": "early_stopped"}
