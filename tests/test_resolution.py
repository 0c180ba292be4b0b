"""Resolution sweep: derived dataset keys, the resize itself, the scaling table, the config."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from test_config import BASE

from augbench.analysis.resolution import scaling_table
from augbench.planning.config import ConfigError, resolve
from augbench.planning.dataset import build_default_archive, default_identity, stage_archive
from augbench.planning.resize import ResizeSpec, build_derived, derived_identity, resize_archive

REPO = Path(__file__).resolve().parents[1]


def test_derived_key_changes_with_the_base_archive_and_every_resize_parameter() -> None:
    base = default_identity("default-24", 24)
    key = derived_identity(base, ResizeSpec(512)).key
    assert key.startswith("default-24-r512-") and len(key.rsplit("-", 1)[1]) == 12
    assert derived_identity(base, ResizeSpec(512)).key == key  # stable
    other_base = default_identity("default-24", 25)
    assert derived_identity(other_base, ResizeSpec(512)).key != key
    assert derived_identity(base, ResizeSpec(512, jpeg_quality=90)).key != key
    assert derived_identity(base, ResizeSpec(512, version=2)).key != key
    assert derived_identity(base, ResizeSpec(1024)).key != key


def test_derived_key_follows_the_bytes_of_a_local_archive(tmp_path: Path) -> None:
    from augbench.planning.dataset import archive_identity

    first = build_default_archive(tmp_path / "a" / "val.tar", 2)["path"]
    second = build_default_archive(tmp_path / "b" / "val.tar", 3)["path"]
    keys = {
        derived_identity(archive_identity(Path(path), "val"), ResizeSpec(224)).key
        for path in (first, second)
    }
    assert len(keys) == 2 and all(k.startswith("val-r224-") for k in keys)


def test_shorter_side_keeps_the_aspect() -> None:
    spec = ResizeSpec(224)
    assert spec.target_size(500, 375) == (299, 224)
    assert spec.target_size(375, 500) == (224, 299)
    assert ResizeSpec(1024).target_size(640, 480) == (1365, 1024)
    with pytest.raises(ValueError, match="resize mode"):
        ResizeSpec(224, mode="square")


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("base")
    archive = build_default_archive(root / "base.tar", 4)["path"]
    stage_archive(Path(archive), root / "staged", name="base", key="base-x")
    return root / "staged" / "manifest.json"


def test_resize_is_deterministic_and_counts_upscales(staged: Path, tmp_path: Path) -> None:
    spec = ResizeSpec(400)
    first = resize_archive(staged, spec, tmp_path / "a.tar")
    resize_archive(staged, spec, tmp_path / "b.tar")
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()
    shorter = [min(f["width"], f["height"]) for f in json.loads(staged.read_text())["files"]]
    assert first["upscaled"] == sum(s < 400 for s in shorter)
    assert first["images"] == len(shorter)


def test_derived_dataset_is_staged_with_its_sweep_fields(staged: Path, tmp_path: Path) -> None:
    spec = ResizeSpec(32)  # below the 224 px staging minimum: allowed for derived datasets
    found = derived_identity(default_identity("base", 4), spec)
    manifest = build_derived(staged, spec, tmp_path / "d.tar", tmp_path / "d", found, "base-x")
    assert manifest["key"] == found.key and manifest["resolution"] == 32
    assert manifest["base_key"] == "base-x" and manifest["resize"]["filter"] == "lanczos"
    assert all(min(f["width"], f["height"]) == 32 for f in manifest["files"])
    assert json.loads((tmp_path / "d" / "manifest.json").read_text())["resolution"] == 32


def _swept(transform: str, thr: dict, rci: float = 0.02, **extra: object) -> list[dict]:
    return [
        {
            "machine": "m",
            "regime": "micro",
            "scope": "memory",
            "workers": -1,
            "batch_size": -1,
            "variant": "",
            "dataset": f"base-r{r}-abcdef123456",
            "dataset_name": f"base-r{r}",
            "library": "pillow",
            "transform": transform,
            "status": "ok",
            "reason": "",
            "median_throughput": t,
            "relative_ci": rci,
            "resolution": r,
            "megapixels": (r * r * 4 / 3) / 1e6,
            **extra,
        }
        for r, t in thr.items()
    ]


def test_scaling_table_flags_only_costs_growing_faster_than_pixels() -> None:
    rows = [
        # pixels x4 per step: img/s / 4 is proportional, / 8 grows faster (slope 1.5)
        *_swept("Proportional", {256: 800.0, 512: 200.0, 1024: 50.0}),
        *_swept("Faster", {256: 800.0, 512: 200.0, 1024: 25.0}),
        # the same drop, but rows too noisy to tell
        *_swept("Noisy", {256: 800.0, 512: 200.0, 1024: 25.0}, rci=0.5),
        *_swept("Fixed", {256: 1000.0, 512: 900.0}),
    ]
    rows += _swept("Fixed", {1024: None}, status="early_stopped", reason="slow")
    table = scaling_table(pd.DataFrame(rows)).set_index("transform")
    assert table.loc["Proportional", "grows_faster_than_pixels"] == False  # noqa: E712
    assert table.loc["Proportional", "slope"] == pytest.approx(1.0)
    assert table.loc["Faster", "grows_faster_than_pixels"] == True  # noqa: E712
    assert table.loc["Faster", "faster_than_pixels_between"] == "512-1024"
    assert table.loc["Noisy", "grows_faster_than_pixels"] == False  # noqa: E712
    assert table.loc["Fixed", "not_ok"] == "1024: early_stopped (slow)"
    assert table.loc["Fixed", "base_dataset"] == "base"


def test_config_resolutions_from_the_command_line_and_checks() -> None:
    cfg = resolve({**BASE, "preset": "smoke", "resolutions": ["32", "64"]}, REPO)
    assert cfg["resolutions"] == [32, 64] and cfg["resolution_regimes"] == ["micro"]
    assert cfg["starvation"]["dataset_images"] == 1281167
    assert resolve({**BASE, "preset": "paper"}, REPO)["resolutions"] == [224, 512, 1024, 2048]
    with pytest.raises(ConfigError, match="resolutions"):
        resolve({**BASE, "preset": "smoke", "resolutions": [0]}, REPO)
    with pytest.raises(ConfigError, match="starvation"):
        resolve({**BASE, "preset": "smoke", "starvation": {"model_step_ms": 10}}, REPO)
    with pytest.raises(ConfigError, match="starvation"):
        resolve(
            {**BASE, "preset": "smoke", "starvation": {"model_img_per_s": 5, "model_step_ms": 1}},
            REPO,
        )


def test_figure_draws_the_sweep_and_says_so_without_one(tmp_path: Path) -> None:
    from augbench.analysis.figures import draw
    from augbench.analysis.figures.style import save

    rows = [
        *_swept("Faster", {256: 800.0, 512: 200.0, 1024: 25.0}),
        *_swept("Slow", {256: 90.0, 512: 30.0}),
        *_swept("Slow", {1024: None}, status="early_stopped", preflight_throughput=4.0),
    ]
    frame = pd.DataFrame(rows).assign(processor="cpu", num_images=8)
    drawn = draw("throughput_vs_resolution", frame)
    save(drawn, tmp_path / "f.png", tmp_path / "f.pdf", tmp_path / "f.txt")
    assert (tmp_path / "f.png").stat().st_size > 5000
    assert "Hollow circles: early-stopped" in drawn.caption
    plain = frame.assign(resolution=None)
    assert "No ok rows of a resolution sweep" in draw("throughput_vs_resolution", plain).caption


def test_a_node_without_the_images_restages_a_derived_dataset(staged: Path, tmp_path: Path) -> None:
    """A cloud node stages the derived archive itself (augbench.planning.provision), small images
    and the sweep's manifest fields included."""
    import shutil

    from augbench.planning import provision

    spec = ResizeSpec(32)
    found = derived_identity(default_identity("base", 4), spec)
    build_derived(staged, spec, tmp_path / "d.tar", tmp_path / "d", found, "base-x")
    shutil.rmtree(tmp_path / "d" / "images")  # as on a node that only has the manifest
    got = provision.ensure_dataset(tmp_path / "d" / "manifest.json", tmp_path / "d.tar", tmp_path)
    doc = json.loads(Path(got["manifest"]).read_text())
    assert got["staged"] and doc["resolution"] == 32 and doc["key"] == found.key
    assert all(min(f["width"], f["height"]) == 32 for f in doc["files"])
