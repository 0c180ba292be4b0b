"""Default archive and staging, including every kind of bad input."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from PIL import Image
from synthetic import tar_archive

from augbench.planning import dataset
from augbench.planning.dataset import DatasetError, build_default_archive, stage_archive


def _jpeg(size: tuple[int, int] = (320, 240)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (120, 30, 200)).save(buf, format="JPEG")
    return buf.getvalue()


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
    with pytest.raises(DatasetError, match="contains no usable images"):
        stage_archive(archive, tmp_path / "out", name="d")
    _assert_nothing_staged(tmp_path / "out")


def test_corrupt_member_is_skipped_and_named(tmp_path: Path) -> None:
    good = _jpeg()
    archive = tar_archive(
        tmp_path / "c.tar", {"a.jpg": good, "b_broken.jpg": good[: len(good) // 3]}
    )
    manifest = stage_archive(archive, tmp_path / "out", name="d")
    assert [f["path"] for f in manifest["files"]] == ["a.jpg"]
    assert manifest["undecodable"] == {"count": 1, "first": ["b_broken.jpg"]}
    assert manifest["skipped_by_reason"] == {dataset.SKIP_UNDECODABLE: 1}
    assert not (tmp_path / "out/images/b_broken.jpg").exists()


def test_non_image_member_is_skipped_and_counted(tmp_path: Path) -> None:
    archive = tar_archive(tmp_path / "n.tar", {"a.jpg": _jpeg(), "notes.txt": b"hello"})
    manifest = stage_archive(archive, tmp_path / "out", name="d")
    assert [f["path"] for f in manifest["files"]] == ["a.jpg"]
    assert manifest["skipped"] == [
        {"member": "notes.txt", "reason": dataset.SKIP_NOT_IMAGE, "detail": ".txt"}
    ]
    assert not (tmp_path / "out/images/notes.txt").exists()


def test_image_named_jpg_that_is_not_an_image(tmp_path: Path) -> None:
    archive = tar_archive(tmp_path / "f.tar", {"fake.jpg": b"definitely not a jpeg"})
    with pytest.raises(DatasetError, match="no usable images.*not a decodable image.*fake.jpg"):
        stage_archive(archive, tmp_path / "out", name="d")
    _assert_nothing_staged(tmp_path / "out")


def test_images_too_small_for_the_crops_are_rejected(tmp_path: Path) -> None:
    archive = tar_archive(tmp_path / "s.tar", {"tiny.jpg": _jpeg((100, 100))})
    with pytest.raises(DatasetError, match="tiny.jpg.*100x100"):
        stage_archive(archive, tmp_path / "out", name="d")


def test_not_atar_archive(tmp_path: Path) -> None:
    (tmp_path / "x.tar").write_bytes(b"this is no tar archive at all" * 40)
    with pytest.raises(DatasetError, match="not a readable"):
        stage_archive(tmp_path / "x.tar", tmp_path / "out", name="d")


def test_path_traversal_is_refused(tmp_path: Path) -> None:
    archive = tar_archive(tmp_path / "t.tar", {"../evil.jpg": _jpeg()})
    with pytest.raises(DatasetError, match="unsafe path"):
        stage_archive(archive, tmp_path / "out", name="d")


# -- every broken input a user hits: used, skipped with a count, or a clear error ---------------
def _image(mode: str, fmt: str, size: tuple[int, int] = (320, 240)) -> bytes:
    buf = io.BytesIO()
    color = {"RGB": (10, 200, 30), "L": 128, "RGBA": (10, 20, 30, 40), "CMYK": (0, 50, 100, 0)}
    Image.new(mode, size, color.get(mode, 7)).save(buf, format=fmt)
    return buf.getvalue()


def _linkstar_archive(path: Path) -> Path:
    """A tar with a symlink pointing outside, a hard link, and one real image."""
    with tarfile.open(path, "w") as tar:
        data = _jpeg()
        info = tarfile.TarInfo("imgs/real.jpg")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        sym = tarfile.TarInfo("imgs/escape.jpg")
        sym.type, sym.linkname = tarfile.SYMTYPE, "../../../../outside.jpg"
        tar.addfile(sym)
        hard = tarfile.TarInfo("imgs/hard.jpg")
        hard.type, hard.linkname = tarfile.LNKTYPE, "imgs/real.jpg"
        tar.addfile(hard)
    return path


def _files_outside(root: Path, out: Path) -> set[Path]:
    return {p for p in root.rglob("*") if out not in p.parents and p != out}


def test_truncated_archive_is_a_dataset_error_naming_it(tmp_path: Path) -> None:
    build_default_archive(tmp_path / "full.tar", 6)
    raw = (tmp_path / "full.tar").read_bytes()
    with tarfile.open(tmp_path / "full.tar") as tar:
        second = tar.getmembers()[1].offset  # where the second member's header starts
    cuts = {"data.tar": len(raw) // 2, "header.tar": second + 200, "boundary.tar": second}
    for name, cut in cuts.items():
        (tmp_path / name).write_bytes(raw[:cut])
        with pytest.raises(DatasetError, match=f"{name} is truncated or corrupt"):
            stage_archive(tmp_path / name, tmp_path / f"out-{name}", name="d")
        _assert_nothing_staged(tmp_path / f"out-{name}")
    with tarfile.open(tmp_path / "full.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "full.tar", arcname="inner/full.tar")  # any content; cut below
    gz = (tmp_path / "full.tar.gz").read_bytes()
    (tmp_path / "cut.tar.gz").write_bytes(gz[: len(gz) // 2])
    with pytest.raises(DatasetError, match=r"cut.tar.gz (is truncated|is not a readable)"):
        stage_archive(tmp_path / "cut.tar.gz", tmp_path / "out-gz", name="d")


def test_nested_folders_are_used_with_their_paths(tmp_path: Path) -> None:
    archive = tar_archive(tmp_path / "n.tar", {"a/b/c/one.jpg": _jpeg(), "./two.JPEG": _jpeg()})
    manifest = stage_archive(archive, tmp_path / "out", name="d")
    assert [f["path"] for f in manifest["files"]] == ["a/b/c/one.jpg", "two.JPEG"]
    assert (tmp_path / "out/images/a/b/c/one.jpg").is_file()
    assert manifest["skipped_count"] == 0


def test_non_rgb_images_are_converted_and_counted_by_mode(tmp_path: Path) -> None:
    members = {
        "rgb.jpg": _image("RGB", "JPEG"),
        "rgb.png": _image("RGB", "PNG"),
        "gray.jpg": _image("L", "JPEG"),
        "cmyk.jpg": _image("CMYK", "JPEG"),
        "alpha.png": _image("RGBA", "PNG"),
        "deep.png": _image("I;16", "PNG"),
        "palette.png": _image("P", "PNG"),
    }
    manifest = stage_archive(tar_archive(tmp_path / "m.tar", members), tmp_path / "out", name="d")
    # JPEGs that were not RGB become PNGs (<stem>.png, or <name>.png where that is taken).
    expected = ["alpha.png", "cmyk.png", "deep.png", "gray.png", "palette.png", "rgb.jpg"]
    assert [f["path"] for f in manifest["files"]] == [*expected, "rgb.png"]
    assert {f["mode"] for f in manifest["files"]} == {"RGB"}
    sources = {f["converted_from"]["member"]: f["converted_from"]["mode"]
               for f in manifest["files"] if "converted_from" in f}  # fmt: skip
    assert sources == {
        "gray.jpg": "L", "cmyk.jpg": "CMYK", "alpha.png": "RGBA", "deep.png": "I;16",
        "palette.png": "P",
    }  # fmt: skip
    assert manifest["converted"] == {"L": 1, "CMYK": 1, "RGBA": 1, "I;16": 1, "P": 1}
    assert manifest["skipped_count"] == 0
    assert sorted(p.name for p in (tmp_path / "out/images").iterdir()) == [*expected, "rgb.png"]


def test_links_are_skipped_and_nothing_is_written_outside(tmp_path: Path) -> None:
    archive = _linkstar_archive(tmp_path / "l.tar")
    before = _files_outside(tmp_path, tmp_path / "out")
    manifest = stage_archive(archive, tmp_path / "out", name="d")
    assert [f["path"] for f in manifest["files"]] == ["imgs/real.jpg"]
    assert {s["member"]: s["detail"] for s in manifest["skipped"]} == {
        "imgs/escape.jpg": "symlink",
        "imgs/hard.jpg": "hard link",
    }
    assert _files_outside(tmp_path, tmp_path / "out") == before
    assert not any(p.is_symlink() for p in (tmp_path / "out").rglob("*"))


def test_absolute_member_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    target = tmp_path / "abs-target.jpg"
    archive = tar_archive(tmp_path / "a.tar", {"ok.jpg": _jpeg(), str(target): _jpeg()})
    with pytest.raises(DatasetError, match="unsafe path"):
        stage_archive(archive, tmp_path / "out", name="d")
    assert not target.exists()
    _assert_nothing_staged(tmp_path / "out")


def test_zero_byte_and_duplicate_members_are_skipped(tmp_path: Path) -> None:
    first, second = _jpeg((320, 240)), _jpeg((300, 260))
    with tarfile.open(tmp_path / "d.tar", "w") as tar:
        for name, data in (("a.jpg", first), ("empty.jpg", b""), ("./a.jpg", second)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    manifest = stage_archive(tmp_path / "d.tar", tmp_path / "out", name="d")
    assert [f["path"] for f in manifest["files"]] == ["a.jpg"]
    assert (tmp_path / "out/images/a.jpg").read_bytes() == first  # the first copy is used
    assert manifest["skipped_by_reason"] == {dataset.SKIP_EMPTY: 1, dataset.SKIP_DUPLICATE: 1}
    assert manifest["skipped_count"] == 2


def test_archive_of_only_unusable_members_says_why(tmp_path: Path) -> None:
    archive = tar_archive(tmp_path / "u.tar", {"README": b"hi", "g.jpg": b"GIF89a broken"})
    with pytest.raises(DatasetError, match="no usable images.*not an image file.*not a decodable"):
        stage_archive(archive, tmp_path / "out", name="d")
    _assert_nothing_staged(tmp_path / "out")


# -- identity: the dataset key of every result path ----------------------------------------
def test_archive_identity_is_the_sha256_and_is_cached_by_size_and_mtime(tmp_path: Path) -> None:
    archive = tar_archive(tmp_path / "set.tar", {"a.jpg": _jpeg()})
    cache = tmp_path / "cache/ids.json"
    first = dataset.archive_identity(archive, "set", cache)
    assert first.digest == dataset.sha256_file(archive) and first.kind == "archive-sha256"
    assert first.key == f"set-{first.digest[:12]}"
    # A cached entry is trusted while size and mtime match (the file is not read again) ...
    entry = json.loads(cache.read_text())
    entry[str(archive.resolve())]["sha256"] = "f" * 64
    cache.write_text(json.dumps(entry))
    assert dataset.archive_identity(archive, "set", cache).digest == "f" * 64
    # ... and a rewritten archive is hashed again.
    tar_archive(archive, {"a.jpg": _jpeg(), "b.jpg": _jpeg((400, 300))})
    assert dataset.archive_identity(archive, "set", cache).digest == dataset.sha256_file(archive)


def test_same_name_different_content_gives_different_keys(tmp_path: Path) -> None:
    a = (
        tar_archive(tmp_path / "a/set.tar", {"a.jpg": _jpeg()})
        if (tmp_path / "a").mkdir() is None
        else None
    )
    b = (
        tar_archive(tmp_path / "b/set.tar", {"a.jpg": _jpeg((400, 300))})
        if (tmp_path / "b").mkdir() is None
        else None
    )
    assert dataset.archive_identity(a, "set").key != dataset.archive_identity(b, "set").key


def test_missing_archive_identity_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"dataset archive not found: .*nope/x.tar"):
        dataset.identity({"archive": str(tmp_path / "nope/x.tar")}, "x")


def test_default_identity_is_deterministic_per_size() -> None:
    a = dataset.identity({"default_images": 24}, "default-24")
    assert a == dataset.identity({"default_images": 24}, "default-24")
    assert a.key != dataset.identity({"default_images": 300}, "default-300").key
    assert a.kind == "default-params"
