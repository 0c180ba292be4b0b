"""Default archive and staging, including every kind of bad input."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from PIL import Image

from augbench.dataset import DatasetError, build_default_archive, stage_archive


def _jpeg(size: tuple[int, int] = (320, 240)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (120, 30, 200)).save(buf, format="JPEG")
    return buf.getvalue()


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_default_archive_is_deterministic_and_imagenet_like(tmp_path: Path) -> None:
    a = build_default_archive(tmp_path / "a.tar", num_images=12)
    b = build_default_archive(tmp_path / "b.tar", num_images=12)
    assert a["sha256"] == b["sha256"]
    manifest = stage_archive(tmp_path / "a.tar", tmp_path / "staged", name="d")
    assert manifest["file_count"] == 12
    assert len({f["bytes"] for f in manifest["files"]}) == 12  # distinct files
    for f in manifest["files"]:
        assert min(f["width"], f["height"]) >= 333 and max(f["width"], f["height"]) <= 640
        assert f["format"] == "JPEG"
    assert manifest["archive_sha256"] == a["sha256"]
    on_disk = json.loads((tmp_path / "staged" / "manifest.json").read_text())
    assert on_disk["total_bytes"] == sum(f["bytes"] for f in manifest["files"])


def test_tar_gz_is_accepted(tmp_path: Path) -> None:
    archive = tmp_path / "d.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        data = _jpeg()
        info = tarfile.TarInfo("x/one.jpg")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    manifest = stage_archive(archive, tmp_path / "out", name="d")
    assert manifest["files"][0]["path"] == "x/one.jpg"


def _assert_nothing_staged(out: Path) -> None:
    assert not (out / "manifest.json").exists()
    assert not (out / "images").exists()
    assert not list(out.glob(".staging-*"))


def test_missing_archive(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not found: .*nope.tar"):
        stage_archive(tmp_path / "nope.tar", tmp_path / "out", name="d")


def test_zero_byte_archive(tmp_path: Path) -> None:
    (tmp_path / "z.tar").write_bytes(b"")
    with pytest.raises(DatasetError, match="empty"):
        stage_archive(tmp_path / "z.tar", tmp_path / "out", name="d")


def test_archive_without_images(tmp_path: Path) -> None:
    archive = tmp_path / "e.tar"
    with tarfile.open(archive, "w"):
        pass
    with pytest.raises(DatasetError, match="contains no images"):
        stage_archive(archive, tmp_path / "out", name="d")
    _assert_nothing_staged(tmp_path / "out")


def test_corrupt_member_is_named_and_nothing_is_left_looking_complete(tmp_path: Path) -> None:
    good = _jpeg()
    archive = _tar(tmp_path / "c.tar", {"a.jpg": good, "b_broken.jpg": good[: len(good) // 3]})
    with pytest.raises(DatasetError, match="b_broken.jpg"):
        stage_archive(archive, tmp_path / "out", name="d")
    _assert_nothing_staged(tmp_path / "out")


def test_non_image_member_is_named(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "n.tar", {"a.jpg": _jpeg(), "notes.txt": b"hello"})
    with pytest.raises(DatasetError, match="notes.txt.*not an image"):
        stage_archive(archive, tmp_path / "out", name="d")


def test_image_named_jpg_that_is_not_an_image(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "f.tar", {"fake.jpg": b"definitely not a jpeg"})
    with pytest.raises(DatasetError, match="fake.jpg.*not a decodable image"):
        stage_archive(archive, tmp_path / "out", name="d")


def test_images_too_small_for_the_crops_are_rejected(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "s.tar", {"tiny.jpg": _jpeg((100, 100))})
    with pytest.raises(DatasetError, match="tiny.jpg.*100x100"):
        stage_archive(archive, tmp_path / "out", name="d")


def test_not_a_tar(tmp_path: Path) -> None:
    (tmp_path / "x.tar").write_bytes(b"this is no tar archive at all" * 40)
    with pytest.raises(DatasetError, match="not a readable"):
        stage_archive(tmp_path / "x.tar", tmp_path / "out", name="d")


def test_path_traversal_is_refused(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "t.tar", {"../evil.jpg": _jpeg()})
    with pytest.raises(DatasetError, match="unsafe path"):
        stage_archive(archive, tmp_path / "out", name="d")
