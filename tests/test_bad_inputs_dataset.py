"""Bad inputs, round two: datasets as users have them, on the real workflow.

``TABLE`` lists each input (the files put in the archive) and what the user gets: an ``error``
(one line naming the counts and the key to change, before any benchmark job, no traceback, earlier
results untouched), images ``converted`` to 8-bit RGB (counted per source mode in the manifest),
members ``skipped`` (counted and named), or ``fewer`` (dataset.allow_fewer: the jobs run on every
usable image and their rows say so). Every case runs Snakemake (``--until stage_dataset``, or the
micro job of pillow, the lightest env, where the outcome needs a benchmark job). Unit tests of the
conversion, the count check and the ``dataset_note`` column follow.
"""

from __future__ import annotations

import io
import json
import os
import struct
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, run_snakemake
from PIL import Image
from synthetic import tar_archive

from augbench.analysis import tidy
from augbench.measuring import media
from augbench.planning import dataset
from augbench.planning.config import resolve
from augbench.planning.dataset import DatasetError, sha256_file, stage_archive
from augbench.planning.sweep import Sweep

MACHINE = "bad-ds"
LOCAL_ENVS = f"envs={{'manager': 'uv', 'dir': '{REPO / '.venvs'}'}}"
CONFIG = (
    "preset=smoke", f"machine={MACHINE}", LOCAL_ENVS, "libraries=[pillow]", "regimes=[micro]",
    "transforms=[HorizontalFlip]",
)  # fmt: skip
SIZE = (240, 224)  # staging needs both sides >= 224 px (the 224 px crops); small files all the same


# -- the files users put in archives ----------------------------------------------------------
def _encode(img: Image.Image, fmt: str, **save: object) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **save)
    return buf.getvalue()


def _gradient() -> np.ndarray:
    """An RGB gradient (a truncated JPEG of it cannot decode in full)."""
    w, h = SIZE
    x, y = np.meshgrid(np.arange(w), np.arange(h))
    return np.stack([x % 256, y % 256, (x + y) % 256], axis=-1).astype(np.uint8)


def _palette(transparency: bool) -> bytes:
    img = Image.new("P", SIZE, 1)
    img.putpalette([0, 0, 0, 200, 30, 60] + [0] * 762)
    return _encode(img, "PNG", **({"transparency": 1} if transparency else {}))


def _png16_rgb(arr: np.ndarray) -> bytes:
    """A 48-bit RGB PNG (Pillow writes none): signature, IHDR (depth 16, colour type 2), IDAT."""
    h, w, _ = arr.shape

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    raw = b"".join(b"\x00" + arr[y].astype(">u2").tobytes() for y in range(h))
    ihdr = struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def _truncated_jpeg() -> bytes:
    data = _encode(Image.fromarray(_gradient()), "JPEG", quality=90)
    return data[: len(data) // 3]


KINDS = {
    "jpeg": lambda: _encode(Image.fromarray(_gradient()), "JPEG"),
    "rgba_png": lambda: _encode(Image.new("RGBA", SIZE, (200, 40, 10, 90)), "PNG"),
    "gray_png": lambda: _encode(Image.new("L", SIZE, 77), "PNG"),
    "la_png": lambda: _encode(Image.new("LA", SIZE, (77, 10)), "PNG"),
    "palette_png": lambda: _palette(transparency=False),
    "palette_transparent_png": lambda: _palette(transparency=True),
    "cmyk_jpeg": lambda: _encode(Image.new("CMYK", SIZE, (0, 50, 100, 0)), "JPEG"),
    "gray16_png": lambda: _encode(
        Image.fromarray(np.full(SIZE[::-1], 40000, dtype=np.uint16)), "PNG"
    ),
    "rgb16_png": lambda: _png16_rgb(np.full((*SIZE[::-1], 3), 51400, dtype=np.uint16)),
    "truncated_jpeg": _truncated_jpeg,
    "text": lambda: b"this is a note, not a JPEG\n",
}


def make_archive(path: Path, members: dict[str, str]) -> Path:
    """A tar of ``{member name: kind of file}`` (kinds: ``KINDS``)."""
    with tarfile.open(path, "w") as tar:
        for name, kind in members.items():
            data = KINDS[kind]()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


# -- the table ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    id: str
    description: str
    files: dict[str, str]
    # "error" | "converted" | "skipped" | "fewer"
    outcome: str
    # error/fewer: text on the one line the user sees; skipped: the members named
    fragments: tuple[str, ...] = ()
    # run pillow's micro job (an error must stop the workflow before it; "fewer" needs its rows),
    # else only stage the dataset (--until stage_dataset)
    benchmark: bool = False
    converted: dict[str, int] = field(default_factory=dict)
    skipped: int = 0
    # top-level num_images (None: the smoke preset's 12)
    num_images: int | None = None


THREE = {"a.jpg": "jpeg", "b_alpha.png": "rgba_png", "c_gray.png": "gray_png"}
UNDECODABLE = {f"bad{i}.jpg": "text" for i in range(6)}

TABLE: list[Case] = [
    Case(
        "three-of-twelve",
        "1 JPEG + RGBA PNG + grayscale PNG under smoke (num_images 12)",
        THREE,
        "error",
        fragments=(
            "has 3 usable images",
            "asks for 12",
            "num_images=12",
            "lower num_images",
            "dataset.allow_fewer: true",
        ),
        benchmark=True,
    ),
    Case(
        "three-of-twelve-allow-fewer",
        "the same with dataset.allow_fewer: the micro job runs on the 3 images and says so",
        THREE,
        "fewer",
        fragments=("has 3 usable images", "asks for 12", "every job uses the 3"),
        converted={"RGBA": 1, "L": 1},
        benchmark=True,
    ),
    Case(
        "palette",
        "palette PNG",
        {"a.jpg": "jpeg", "p.png": "palette_png"},
        "converted",
        converted={"P": 1},
        num_images=2,
    ),
    Case(
        "palette-transparency",
        "palette PNG with a transparent colour",
        {"a.jpg": "jpeg", "pt.png": "palette_transparent_png"},
        "converted",
        converted={"P": 1},
        num_images=2,
    ),
    Case(
        "cmyk-jpeg",
        "CMYK JPEG (becomes a PNG)",
        {"a.jpg": "jpeg", "print.jpg": "cmyk_jpeg"},
        "converted",
        converted={"CMYK": 1},
        num_images=2,
    ),
    Case(
        "gray16-png",
        "16-bit grayscale PNG",
        {"a.jpg": "jpeg", "depth.png": "gray16_png"},
        "converted",
        converted={"I;16": 1},
        num_images=2,
    ),
    Case(
        "rgb16-png",
        "16-bit RGB PNG (Pillow reports RGB)",
        {"a.jpg": "jpeg", "deep.png": "rgb16_png"},
        "converted",
        converted={"RGB;16": 1},
        num_images=2,
    ),
    Case(
        "la-png",
        "grayscale + alpha PNG",
        {"a.jpg": "jpeg", "la.png": "la_png"},
        "converted",
        converted={"LA": 1},
        num_images=2,
    ),
    Case(
        "truncated-jpeg",
        "a truncated JPEG beside two good ones",
        {"a.jpg": "jpeg", "b.jpg": "jpeg", "cut.jpg": "truncated_jpeg"},
        "skipped",
        fragments=("cut.jpg",),
        skipped=1,
        num_images=2,
    ),
    Case(
        "text-named-jpg",
        "a text file named .jpg",
        {"a.jpg": "jpeg", "notes.jpg": "text"},
        "skipped",
        fragments=("notes.jpg",),
        skipped=1,
        num_images=1,
    ),
    Case(
        "empty-archive",
        "an archive without members",
        {},
        "error",
        fragments=("dataset archive contains no usable images",),
    ),
    Case(
        "only-undecodable",
        "six undecodable files: the first five named",
        UNDECODABLE,
        "error",
        fragments=(
            "contains no usable images",
            "6 not a decodable image",
            "undecodable: bad0.jpg, bad1.jpg, bad2.jpg, bad3.jpg, bad4.jpg, ...",
        ),
    ),
]


def _key(archive: Path) -> str:
    return f"{archive.name.removesuffix('.tar')}-{sha256_file(archive)[:12]}"


def _micro_result(archive: Path) -> str:
    return f"results/raw/{MACHINE}/{_key(archive)}/micro/pillow/s000.json"


def _earlier_result(workdir: Path) -> tuple[Path, bytes, int]:
    """A result of another dataset from an earlier run: no run may touch it."""
    path = workdir / f"results/raw/{MACHINE}/earlier-000000000000/micro/pillow/s000.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"metadata": {"library": "pillow"}, "results": {}}))
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    return path, path.read_bytes(), path.stat().st_mtime_ns


def _config_file(workdir: Path, archive: Path, case: Case, name: str = "case.yaml") -> Path:
    """The case's dataset block (a file: nested booleans need YAML) and its num_images."""
    block = {"archive": str(archive), "allow_fewer": case.outcome == "fewer"}
    doc = {"dataset": block, **({"num_images": case.num_images} if case.num_images else {})}
    path = workdir / name
    path.write_text(json.dumps(doc))
    return path


def _one_line(output: str, fragments: tuple[str, ...]) -> str:
    lines = [line for line in output.splitlines() if all(f in line for f in fragments)]
    assert lines, f"no line with {fragments} in:\n{output[-4000:]}"
    return lines[0]


@dataclass
class Run:
    workdir: Path
    archive: Path
    earlier: tuple[Path, bytes, int]
    # Snakemake invocations, one after another: their arguments, then (status, stdout + stderr,
    # the staged manifest's mtime_ns after it or None)
    steps: list[tuple[str, ...]] = field(default_factory=list)
    done: list[tuple[int, str, int | None]] = field(default_factory=list)

    @property
    def returncode(self) -> int:
        return self.done[0][0]

    @property
    def output(self) -> str:
        return self.done[0][1]


def _prepare(base: Path, case: Case, *later: Case) -> Run:
    """A working directory with an earlier result in it, the case's archive and its Snakemake
    run (pillow's micro job, or staging only), then a dry run with each ``later`` config."""
    work = base / case.id / "work"
    work.mkdir(parents=True)
    archive = make_archive(base / case.id / f"{case.id}.tar", case.files)
    run = Run(work, archive, _earlier_result(work))
    config = ("--configfile", str(_config_file(work, archive, case)), "--config", *CONFIG)
    targets = (_micro_result(archive),) if case.benchmark else ("--until", "stage_dataset")
    run.steps.append(("--cores", "1", *targets, *config))
    for i, then in enumerate(later):
        config_file = _config_file(work, archive, then, f"later-{i}.yaml")
        run.steps.append(("-n", "--configfile", str(config_file), "--config", *CONFIG))
    return run


def _run_steps(run: Run) -> None:
    manifest = run.workdir / f"results/data/{_key(run.archive)}/manifest.json"
    for args in run.steps:
        proc = run_snakemake(run.workdir, *args, check=False)
        mtime = manifest.stat().st_mtime_ns if manifest.exists() else None
        run.done.append((proc.returncode, proc.stdout + proc.stderr, mtime))


# The staged-dataset check: THREE staged for num_images 3, then dry runs asking for 12, without
# and with allow_fewer.
STAGED_FOR_THREE = Case("staged-for-three", "", THREE, "converted", num_images=3)
THEN = (Case("asks-more", "", THREE, "converted"), Case("allows", "", THREE, "fewer"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Every TABLE case (and the runs of the staged-dataset check) through Snakemake, two working
    directories at a time (a run is mostly Snakemake's start-up: CPU-bound, one core each)."""
    from concurrent.futures import ThreadPoolExecutor

    base = tmp_path_factory.mktemp("bad-datasets")
    prepared = {c.id: _prepare(base, c) for c in TABLE}
    prepared[STAGED_FOR_THREE.id] = _prepare(base, STAGED_FOR_THREE, *THEN)
    # The longest chains first, so the pool ends together.
    order = sorted(prepared.values(), key=lambda r: -len(r.steps))
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(_run_steps, order))
    return prepared


@pytest.mark.workflow
@pytest.mark.parametrize("case", TABLE, ids=[c.id for c in TABLE])
def test_dataset_as_users_have_it(case: Case, runs: dict[str, Run]) -> None:
    run = runs[case.id]
    work, archive, out = run.workdir, run.archive, run.output
    raw = work / "results/raw" / MACHINE / _key(archive)
    assert "Traceback" not in out, out[-4000:]
    earlier, earlier_bytes, earlier_mtime = run.earlier
    assert earlier.read_bytes() == earlier_bytes and earlier.stat().st_mtime_ns == earlier_mtime

    if case.outcome == "error":
        assert run.returncode != 0
        line = _one_line(out, case.fragments)
        assert line.startswith("augbench: ") and str(archive) in line
        log = work / f"logs/data/stage_dataset-{_key(archive)}.log"
        assert line in log.read_text().splitlines()  # the rule's log holds the same line
        assert not raw.exists()  # no benchmark job started
        assert not list((work / "results/data").glob("*/manifest.json"))
        return
    assert run.returncode == 0, out[-4000:]
    manifest = json.loads((work / f"results/data/{_key(archive)}/manifest.json").read_text())
    assert manifest["converted"] == case.converted
    assert {f["mode"] for f in manifest["files"]} == {"RGB"}
    images = work / f"results/data/{_key(archive)}/images"
    for entry in manifest["files"]:
        with Image.open(images / entry["path"]) as img:
            assert img.mode == "RGB"
            assert img.format == ("PNG" if "converted_from" in entry else entry["format"])
    if case.outcome == "skipped":
        assert manifest["skipped_count"] == case.skipped
        assert manifest["skipped_by_reason"] == {dataset.SKIP_UNDECODABLE: case.skipped}
        assert manifest["undecodable"]["first"] == list(case.fragments)
        log = (work / f"logs/data/stage_dataset-{_key(archive)}.log").read_text()
        assert all(name in log for name in case.fragments)
    if case.outcome == "fewer":
        assert _one_line(out, case.fragments).startswith("augbench: ")
        assert manifest["allow_fewer"] is True
        assert manifest["fewer_than_configured"]["configured"] == 12
        assert manifest["fewer_than_configured"]["usable"] == 3
        result = raw / "micro/pillow/s000.json"
        doc = json.loads(result.read_text())
        assert doc["metadata"]["dataset"]["fewer_than_configured"]["usable"] == 3
        rows = tidy.rows_from_file(result)
        assert {r["status"] for r in rows} == {"ok"}
        assert {r["num_images"] for r in rows} == {3}
        assert {r["dataset_note"] for r in rows} == {
            "3 of 12 configured images (dataset.allow_fewer)"
        }


@pytest.mark.workflow
def test_a_staged_dataset_is_checked_again_when_the_config_asks_for_more(
    runs: dict[str, Run],
) -> None:
    """Staged for num_images 3, then asked for 12: one line while the job graph is built (a
    changed count does not re-stage), and with allow_fewer a note instead."""
    (staged, out, before), (code, more, after), (allowed, note, _) = runs[STAGED_FOR_THREE.id].done
    assert staged == 0, out[-4000:]
    assert code != 0 and "Traceback" not in more
    line = _one_line(more, ("has 3 usable images", "asks for 12"))
    assert line.startswith("augbench: ") and "num_images=12" in line
    assert "Job stats" not in more  # stopped before planning any job
    assert after == before  # not re-staged
    assert allowed == 0, note[-4000:]
    assert "every job uses the 3 (dataset.allow_fewer)" in note


# -- unit tests: conversion ---------------------------------------------------------------------
def _pixels(img: Image.Image) -> np.ndarray:
    rgb = dataset.to_rgb8(img)
    assert rgb.mode == "RGB"
    return np.asarray(rgb)


def test_alpha_is_dropped_not_composited() -> None:
    assert _pixels(Image.new("RGBA", (4, 3), (200, 40, 10, 0)))[0, 0].tolist() == [200, 40, 10]
    assert _pixels(Image.new("LA", (4, 3), (90, 0)))[0, 0].tolist() == [90, 90, 90]


def test_palette_is_expanded_with_or_without_transparency() -> None:
    img = Image.new("P", (4, 3), 1)
    img.putpalette([0, 0, 0, 200, 30, 60] + [0] * 762)
    assert _pixels(img)[0, 0].tolist() == [200, 30, 60]
    img.info["transparency"] = 1
    assert _pixels(img)[0, 0].tolist() == [200, 30, 60]


def test_gray_bilevel_and_cmyk_as_pillow_converts_them() -> None:
    assert _pixels(Image.new("L", (4, 3), 77))[0, 0].tolist() == [77, 77, 77]
    assert _pixels(Image.new("1", (4, 3), 1))[0, 0].tolist() == [255, 255, 255]
    cmyk = Image.new("CMYK", (4, 3), (0, 50, 100, 0))
    assert _pixels(cmyk).tolist() == np.asarray(cmyk.convert("RGB")).tolist()


@pytest.mark.parametrize("mode", ["I;16", "I;16B", "I"])
def test_sixteen_bit_gray_is_scaled_to_eight_bits(mode: str) -> None:
    values = np.array([[0, 255, 256, 40000, 65535]], dtype=np.uint16)
    if mode == "I;16B":
        img = Image.frombytes("I;16B", (5, 1), values.astype(">u2").tobytes())
    else:
        img = Image.fromarray(values if mode == "I;16" else values.astype(np.int32))
    assert img.mode == mode
    # value >> 8 (Pillow's own convert("RGB") would clip everything above 255 to 255)
    assert _pixels(img)[0, :, 0].tolist() == [0, 0, 1, 156, 255]


def test_sixteen_bit_rgb_png_is_read_by_its_high_byte(tmp_path: Path) -> None:
    values = np.zeros((2, 3, 3), dtype=np.uint16)
    values[..., 0], values[..., 1], values[..., 2] = 51400, 256, 65535
    (tmp_path / "deep.png").write_bytes(_png16_rgb(values))
    info = dataset._inspect_image(tmp_path / "deep.png")
    assert info.mode == "RGB;16"
    dataset.convert_to_rgb_png(tmp_path / "deep.png", tmp_path / "out.png")
    with Image.open(tmp_path / "out.png") as img:
        assert img.mode == "RGB" and np.asarray(img)[0, 0].tolist() == [200, 1, 255]


def test_a_converted_jpeg_becomes_a_png_without_taking_another_members_name(
    tmp_path: Path,
) -> None:
    archive = tar_archive(
        tmp_path / "names.tar",
        {
            "x.jpg": KINDS["cmyk_jpeg"](),
            "x.png": KINDS["jpeg"](),  # a JPEG named .png: used as it is
            "y.jpeg": KINDS["cmyk_jpeg"](),
            "z.png": KINDS["rgba_png"](),
        },
    )
    manifest = stage_archive(archive, tmp_path / "out", name="d")
    paths = {
        f.get("converted_from", {}).get("member", f["path"]): f["path"] for f in manifest["files"]
    }
    assert paths == {"x.jpg": "x.jpg.png", "x.png": "x.png", "y.jpeg": "y.png", "z.png": "z.png"}
    assert manifest["converted"] == {"CMYK": 2, "RGBA": 1} and manifest["converted_count"] == 3
    with Image.open(tmp_path / "out/images/x.png") as img:
        assert img.format == "JPEG"  # the member's own bytes
    for name in ("x.jpg.png", "y.png", "z.png"):
        with Image.open(tmp_path / "out/images" / name) as img:
            assert (img.format, img.mode) == ("PNG", "RGB")
    assert not (tmp_path / "out/images/x.jpg").exists()


def test_undecodable_members_are_skipped_and_the_first_five_named(tmp_path: Path) -> None:
    members = {"good.jpg": KINDS["jpeg"](), **{n: b"not an image" for n in UNDECODABLE}}
    manifest = stage_archive(tar_archive(tmp_path / "u.tar", members), tmp_path / "out", name="d")
    assert manifest["file_count"] == 1
    assert manifest["undecodable"] == {"count": 6, "first": [f"bad{i}.jpg" for i in range(5)]}
    detail = manifest["skipped"][0]["detail"]
    assert detail.startswith("UnidentifiedImageError") and ".staging-" not in detail


# -- unit tests: how many images the configuration asks for ------------------------------------
PIPELINES = ["config/pipelines/train_light.yaml"]


def _sweep(**extra: object) -> Sweep:
    config = {
        "preset": "smoke", "machine": "m", "dataset": {"archive": None}, "envs": {},
        "libraries": ["pillow"], "regimes": ["micro"], "pipelines": PIPELINES, **extra,
    }  # fmt: skip
    return Sweep(resolve(config, REPO), "d")


def test_required_images_names_the_key_that_decides_each_count() -> None:
    # smoke: num_images 12; the lazy-output diagnostic reads min(10, 12); a pipeline's breakdown
    # min(4, 12).
    assert _sweep().required_images() == {
        "num_images": 12,
        "lazy_outputs.num_images": 10,
        "pipeline_runs.breakdown_images": 4,
    }
    micro = {"processes": 1, "values": 2, "warmups": 1, "shard_size": 3, "num_images": 20}
    asked = _sweep(micro=micro, pipelines=[], lazy_outputs={"num_images": 30}).required_images()
    # micro's own count; the diagnostic capped by num_images counts as num_images
    assert asked == {"micro.num_images": 20, "num_images": 12}
    dl = _sweep(
        regimes=["cpu_dataloader"], pipelines=[], cpu_dataloader={"num_images": 7}
    ).required_images()
    assert dl == {"cpu_dataloader.num_images": 7}


def test_the_shortfall_message_is_one_line_with_counts_and_keys() -> None:
    counts = {
        "skipped_count": 2,
        "skipped_by_reason": {dataset.SKIP_UNDECODABLE: 1, dataset.SKIP_NOT_IMAGE: 1},
        "undecodable": {"count": 1, "first": ["cut.jpg"]},
    }
    fewer = dataset.fewer_than_configured(1, {"num_images": 12, "micro.num_images": 12})
    assert fewer == {
        "configured": 12,
        "usable": 1,
        "keys": {"num_images": 12, "micro.num_images": 12},
    }
    message = dataset.shortfall_message("x.tar", counts, fewer)
    assert "\n" not in message
    assert message.startswith("dataset x.tar has 1 usable image (2 skipped: ")
    assert "undecodable: cut.jpg" in message
    assert "asks for 12 (num_images=12, micro.num_images=12)" in message
    assert "lower num_images or micro.num_images" in message
    assert dataset.fewer_than_configured(12, {"num_images": 12}) is None
    assert dataset.fewer_than_configured(3, {}) is None


def test_staging_refuses_fewer_images_than_asked_and_leaves_nothing(tmp_path: Path) -> None:
    archive = make_archive(tmp_path / "t.tar", THREE)
    with pytest.raises(DatasetError, match=r"has 3 usable images; .*asks for 12 \(num_images=12\)"):
        stage_archive(archive, tmp_path / "out", name="d", asked={"num_images": 12})
    assert not (tmp_path / "out/manifest.json").exists()
    assert not (tmp_path / "out/images").exists()
    assert not list((tmp_path / "out").glob(".staging-*"))


def test_allow_fewer_lets_jobs_use_every_usable_image(tmp_path: Path) -> None:
    archive = make_archive(tmp_path / "t.tar", THREE)
    manifest = stage_archive(
        archive, tmp_path / "out", name="d", asked={"num_images": 12}, allow_fewer=True
    )
    assert manifest["fewer_than_configured"] == {
        "configured": 12,
        "usable": 3,
        "keys": {"num_images": 12},
    }
    path = tmp_path / "out/manifest.json"
    assert len(media.select_files(path, 12)) == 3
    meta = media.dataset_metadata(path, 12)
    assert meta["num_images_used"] == 3
    assert meta["fewer_than_configured"] == {
        "configured": 12,
        "usable": 3,
        "setting": "allow_fewer",
    }
    assert meta["converted"] == {"RGBA": 1, "L": 1}
    assert media.dataset_metadata(path, 2)["fewer_than_configured"] is None
    # Without allow_fewer in the manifest, asking for more is still an error.
    strict = stage_archive(archive, tmp_path / "strict", name="d")
    assert "allow_fewer" not in strict
    with pytest.raises(ValueError, match="num_images=12 but the staged dataset has only 3"):
        media.select_files(tmp_path / "strict/manifest.json", 12)


def test_dataset_note_column() -> None:
    fewer = {"configured": 12, "usable": 3, "setting": "allow_fewer"}
    note = tidy._dataset_columns({"fewer_than_configured": fewer})["dataset_note"]
    assert note == "3 of 12 configured images (dataset.allow_fewer)"
    assert tidy._dataset_columns({"fewer_than_configured": None})["dataset_note"] == ""
    assert tidy._dataset_columns({})["dataset_note"] == ""
    assert "dataset_note" in tidy.COLUMNS
