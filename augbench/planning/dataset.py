"""The dataset archive: building the embedded default, and staging any archive once.

Runs in the driver environment (Pillow + scikit-image's shipped sample photographs).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")

# Colour photographs that scikit-image ships inside its wheel (no download), all public domain or
# CC0 (see docs/dataset.md for each source).
DEFAULT_SOURCES: tuple[str, ...] = (
    "astronaut.png",
    "coffee.png",
    "chelsea.png",
    "rocket.jpg",
    "hubble_deep_field.jpg",
    "ihc.png",
    "retina.jpg",
)

# Output sizes (width, height) typical of ImageNet validation images.
IMAGENET_LIKE_SIZES: tuple[tuple[int, int], ...] = (
    (500, 375),
    (375, 500),
    (500, 333),
    (333, 500),
    (500, 400),
    (400, 500),
    (500, 500),
    (640, 480),
)


class DatasetError(Exception):
    """Bad dataset input; the message names the archive or member at fault."""


# ---------------------------------------------------------------------------------------------
# Default archive
# ---------------------------------------------------------------------------------------------


def skimage_data_dir() -> Path:
    import skimage

    return Path(skimage.__file__).parent / "data"


def _load_sources() -> list[Any]:
    from PIL import Image

    data = skimage_data_dir()
    images = []
    for name in DEFAULT_SOURCES:
        with Image.open(data / name) as img:
            images.append(img.convert("RGB"))
    return images


def _image_size(rng: np.random.Generator) -> tuple[int, int]:
    """The (width, height) of a default-archive image: its generator's first draw."""
    return IMAGENET_LIKE_SIZES[int(rng.integers(len(IMAGENET_LIKE_SIZES)))]


def default_image_sizes(num_images: int, seed: int = 0) -> list[tuple[int, int]]:
    """The sizes of the default archive's images in member order, without building it (the
    plan's memory model needs them before anything is staged)."""
    return [_image_size(np.random.default_rng([seed, i])) for i in range(num_images)]


def _variant(source: Any, rng: np.random.Generator) -> Any:
    """A random crop of ``source`` at an ImageNet-like aspect, resized and maybe mirrored."""
    from PIL import Image

    out_w, out_h = _image_size(rng)
    src_w, src_h = source.size
    aspect = out_w / out_h
    # The largest crop of this aspect that fits, then a random fraction of its area.
    max_w = min(src_w, int(src_h * aspect))
    max_h = int(max_w / aspect)
    frac = float(rng.uniform(0.35, 1.0)) ** 0.5
    crop_w, crop_h = max(32, int(max_w * frac)), max(32, int(max_h * frac))
    x = int(rng.integers(0, src_w - crop_w + 1))
    y = int(rng.integers(0, src_h - crop_h + 1))
    img = source.resize(
        (out_w, out_h), Image.Resampling.LANCZOS, box=(x, y, x + crop_w, y + crop_h)
    )
    if rng.random() < 0.5:
        img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    return img


def add_tar_member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    """A file member with zeroed timestamp and ownership: same bytes in, same archive out."""
    info = tarfile.TarInfo(name=name)
    info.size = len(data)
    info.mtime = 0
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    tar.addfile(info, io.BytesIO(data))


def build_default_archive(out_path: Path, num_images: int, seed: int = 0) -> dict[str, Any]:
    """Write a deterministic tar of ``num_images`` distinct JPEGs and return its description.

    Same inputs and same Pillow give the same bytes: fixed seeds, sorted members, zeroed
    timestamps and ownership.
    """
    if num_images < 1:
        raise DatasetError(f"default archive needs at least one image, got {num_images}")
    sources = _load_sources()
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(f".{out_path.name}.tmp")
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
        for i in range(num_images):
            rng = np.random.default_rng([seed, i])
            source_idx = i % len(sources)
            img = _variant(sources[source_idx], rng)
            buf = io.BytesIO()
            img.save(buf, format="JPEG", quality=int(rng.integers(75, 96)), optimize=False)
            data = buf.getvalue()
            name = f"images/{i:05d}_{DEFAULT_SOURCES[source_idx].split('.')[0]}.jpg"
            add_tar_member(tar, name, data)
    tmp.replace(out_path)
    return {"path": str(out_path), "num_images": num_images, "sha256": sha256_file(out_path)}


# ---------------------------------------------------------------------------------------------
# Identity: the dataset key in every result path, known when the workflow builds its job graph
# ---------------------------------------------------------------------------------------------

# Bump when build_default_archive changes what it writes: the default dataset's key changes with it.
DEFAULT_ARCHIVE_VERSION = 1
KEY_DIGITS = 12


@dataclass(frozen=True)
class DatasetIdentity:
    """``key`` = ``<name>-<first 12 hex digits of digest>``: the folder of the staged dataset and
    of every raw result. ``kind`` says what the digest is a hash of."""

    name: str
    digest: str
    kind: str  # archive-sha256 | default-params | gcs-md5 | gcs-name
    note: str = ""

    @property
    def key(self) -> str:
        return f"{self.name}-{self.digest[:KEY_DIGITS]}"


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def default_identity(name: str, num_images: int, seed: int = 0) -> DatasetIdentity:
    """The embedded default is deterministic: its build parameters identify its content."""
    params = {"builder": "default", "version": DEFAULT_ARCHIVE_VERSION, "images": num_images}
    params["seed"] = seed
    return DatasetIdentity(name, _sha256_text(json.dumps(params, sort_keys=True)), "default-params")


def archive_identity(archive: Path, name: str, cache: Path | None = None) -> DatasetIdentity:
    """sha256 of a local archive, cached in ``cache`` by (absolute path, size, mtime_ns) so the
    file is read once, not on every Snakemake invocation. A missing file raises DatasetError."""
    archive = Path(archive)
    if not archive.is_file():
        what = "is not a file" if archive.exists() else "not found"
        raise DatasetError(f"dataset archive {what}: {archive} (config dataset.archive)")
    st = archive.stat()
    entry = {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
    known: dict[str, Any] = {}
    if cache is not None and cache.exists():
        try:
            known = json.loads(cache.read_text())
        except (OSError, json.JSONDecodeError):
            known = {}  # a damaged cache only costs one more hash
    path_key = str(archive.resolve())
    hit = known.get(path_key)
    if hit and {k: hit.get(k) for k in entry} == entry:
        return DatasetIdentity(name, hit["sha256"], "archive-sha256")
    digest = sha256_file(archive)
    if cache is not None:
        known[path_key] = {**entry, "sha256": digest}
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")
        tmp.replace(cache)
    return DatasetIdentity(name, digest, "archive-sha256")


def gcs_identity(url: str, name: str) -> DatasetIdentity:
    """The object's md5 (its content hash as GCS reports it, no download), else its crc32c and
    generation (composite objects have no md5). A missing object raises DatasetError. Where the
    metadata cannot be read at all (no credentials, e.g. a dry run), the key falls back to a hash
    of the URL and ``note`` says so: results are then keyed by the name only."""
    bucket_name, _, blob_name = url.removeprefix("gs://").partition("/")
    if not bucket_name or not blob_name:
        raise DatasetError(f"dataset archive {url!r} is not a gs://bucket/object URL")
    try:
        from google.cloud import storage

        blob = storage.Client().bucket(bucket_name).get_blob(blob_name)
    except Exception as exc:  # no credentials, no network, no library: documented fallback
        if type(exc).__name__ == "NotFound":  # the bucket itself does not exist
            raise DatasetError(
                f"dataset archive not found: {url} (no bucket {bucket_name!r})"
            ) from None
        return DatasetIdentity(
            name,
            _sha256_text(url),
            "gcs-name",
            f"object metadata of {url} not readable ({type(exc).__name__}: {exc}); "
            "results are keyed by the URL only",
        )
    if blob is None:
        raise DatasetError(
            f"dataset archive not found: {url} (no such object in bucket {bucket_name!r})"
        )
    if blob.md5_hash:
        digest = base64.b64decode(blob.md5_hash).hex()
        return DatasetIdentity(name, digest, "gcs-md5")
    return DatasetIdentity(name, _sha256_text(f"{blob.crc32c} {blob.generation}"), "gcs-crc32c")


def dataset_name(dataset: dict[str, Any]) -> str:
    """The configured name, else the archive's file name without its suffix, else the embedded
    default's ``default-<images>``."""
    if dataset.get("name"):
        return str(dataset["name"])
    if dataset.get("archive"):
        stem = Path(dataset["archive"]).name
        for suffix in (".tar.gz", ".tgz", ".tar"):
            if stem.endswith(suffix):
                return stem[: -len(suffix)]
    return f"default-{dataset['default_images']}"


def identity(dataset: dict[str, Any], name: str, cache: Path | None = None) -> DatasetIdentity:
    """Identity of the configured dataset (config ``dataset`` block)."""
    archive = dataset.get("archive")
    if not archive:
        return default_identity(name, int(dataset["default_images"]))
    if str(archive).startswith("gs://"):
        return gcs_identity(str(archive), name)
    return archive_identity(Path(archive), name, cache)


# ---------------------------------------------------------------------------------------------
# Staging
# ---------------------------------------------------------------------------------------------


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class StagedImage:
    path: str
    bytes: int
    width: int
    height: int
    mode: str
    format: str


# Images are used as 8-bit RGB, the one input every library's own decoder turns into the same
# array. Any other mode Pillow reads from a .jpg/.png is converted once at staging, the way users'
# loaders do (``Image.open(f).convert("RGB")``, torchvision's default loader): alpha dropped (not
# composited), palette expanded, gray replicated, CMYK by Pillow's formula; 16-bit values are
# scaled to 8 bits (value >> 8: Pillow's convert clips 16-bit gray at 255 instead, while it reads
# 16-bit RGB PNGs and OpenCV reads every 16-bit PNG by the high byte). The converted image is
# written as a PNG (lossless), so every library decodes exactly those pixels. Keys: the mode
# counted in the manifest's ``converted`` (``RGB;16``/``RGBA;16``: 16-bit PNGs, which Pillow
# reports as RGB/RGBA).
ACCEPTED_MODES = ("RGB",)
CONVERTED_MODES = (
    "RGBA",
    "LA",
    "L",
    "1",
    "P",
    "PA",
    "CMYK",
    "I;16",
    "I;16B",
    "I;16L",
    "I",
    "RGB;16",
    "RGBA;16",
)
SIXTEEN_BIT_GRAY = ("I;16", "I;16B", "I;16L", "I")

# Where every member of an archive goes: used, converted, skipped (counted in the manifest) or an
# error.
SKIP_NOT_IMAGE = "not an image file (suffix)"
SKIP_EMPTY = "empty file (0 bytes)"
SKIP_LINK = "link or special file (never followed)"
SKIP_DUPLICATE = "duplicate member name (the first copy is used)"
SKIP_UNDECODABLE = "not a decodable image"
SKIP_MODE = "mode not convertible to 8-bit RGB"
# Undecodable members named in the manifest (``undecodable.first``) and in messages.
NAMED_UNDECODABLE = 5


def _safe_member_path(member: tarfile.TarInfo, archive: Path) -> PurePosixPath:
    rel = PurePosixPath(member.name)
    if rel.is_absolute() or ".." in rel.parts:
        raise DatasetError(
            f"{archive}: member {member.name!r} has an unsafe path (absolute or '..'); "
            "nothing was extracted"
        )
    # "./a.jpg" and "a.jpg" are one file once extracted.
    return PurePosixPath(*[part for part in rel.parts if part not in ("", ".")])


class UndecodableImage(Exception):
    """A member with an image suffix that Pillow cannot decode in full (skipped and named)."""


def _source_mode(img: Any, path: Path) -> str:
    """Pillow's mode, with ``;16`` for 16-bit RGB/RGBA PNGs (Pillow reports those as RGB/RGBA,
    read by the high byte): the PNG header's bit depth is byte 24 of the file."""
    mode = str(img.mode)
    if img.format == "PNG" and mode in ("RGB", "RGBA"):
        with Path(path).open("rb") as fh:
            head = fh.read(25)
        if len(head) == 25 and head[24] == 16:
            mode += ";16"
    return mode


def _inspect_image(path: Path) -> StagedImage:
    """Decode ``path`` in full (truncated or corrupt data fails here, not in a benchmark): its
    size, format and source mode; UndecodableImage with Pillow's reason otherwise."""
    import warnings

    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. Pillow's DecompressionBombWarning, palette notes
            with Image.open(path) as img:
                fmt = img.format or "unknown"
                img.load()
                width, height = img.size
                mode = _source_mode(img, path)
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as exc:
        # Pillow names the file it read: the staging folder's copy, not the member.
        reason = str(exc).replace(f"'{path}'", "").replace(str(path), "").strip()
        raise UndecodableImage(f"{type(exc).__name__}: {reason}".rstrip(": ")) from exc
    return StagedImage(
        path="", bytes=path.stat().st_size, width=width, height=height, mode=mode, format=fmt
    )


def to_rgb8(img: Any) -> Any:
    """``img`` as 8-bit RGB, the way users' loaders read it: ``img.convert("RGB")`` (alpha
    dropped, not composited; palette expanded; gray replicated; CMYK by Pillow's formula), except
    16-bit gray (``I;16*``, ``I``), which is scaled to 8 bits (value >> 8, clipped to 0..65535
    first) where ``convert`` would clip at 255. 16-bit RGB PNGs already arrive as 8-bit RGB
    (Pillow keeps the high byte)."""
    import warnings

    from PIL import Image

    if img.mode in SIXTEEN_BIT_GRAY:
        values = np.asarray(img).astype(np.int64)
        gray = (np.clip(values, 0, 65535) >> 8).astype(np.uint8)
        return Image.fromarray(gray).convert("RGB")  # uint8, 2-D: mode L
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # palette transparency notes: alpha is dropped anyway
        return img.convert("RGB")


def convert_to_rgb_png(source: Path, target: Path) -> None:
    """Write ``source`` (any mode Pillow reads) to ``target`` as an 8-bit RGB PNG (``to_rgb8``);
    ``target`` may be ``source``."""
    from PIL import Image

    with Image.open(source) as img:
        img.load()
        rgb = to_rgb8(img)
    tmp = target.with_name(f".{target.name}.converting")
    rgb.save(tmp, format="PNG")
    tmp.replace(target)


def _converted_name(rel: PurePosixPath, taken: set[str]) -> PurePosixPath:
    """Where a converted image goes: a PNG keeps its name; another file becomes ``<stem>.png``,
    or ``<name>.png`` (``scan.jpg.png``) where that is taken, then ``<name>-2.png``, ..."""
    if rel.suffix.lower() == ".png":
        return rel
    candidates = [rel.with_suffix(".png"), rel.with_name(f"{rel.name}.png")]
    candidates += [rel.with_name(f"{rel.name}-{i}.png") for i in range(2, len(taken) + 3)]
    return next(c for c in candidates if c.as_posix() not in taken)


def _unwrap(work: Path, staged: list[dict[str, Any]]) -> Path:
    """The folder that becomes ``images/``: an archive holding every image under a top folder
    named ``images`` (as the default archive does) is staged as ``images/<file>``, not
    ``images/images/<file>``; ``staged`` paths are made relative to it. Other layouts are kept."""
    parts = [PurePosixPath(f["path"]).parts for f in staged]
    if any(len(p) < 2 or p[0] != "images" for p in parts):
        return work
    for f, p in zip(staged, parts, strict=True):
        f["path"] = PurePosixPath(*p[1:]).as_posix()
    return work / "images"


def _members(tar: tarfile.TarFile, archive: Path) -> Any:
    """The archive's members; a truncated or corrupt archive is a DatasetError, not a raw
    tarfile/zlib traceback."""
    try:
        yield from tar
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise DatasetError(
            f"{archive} is truncated or corrupt after {len(tar.members)} members "
            f"({type(exc).__name__}: {exc}); download or build it again"
        ) from exc


def _check_complete(tar: tarfile.TarFile, archive: Path) -> None:
    """tarfile ends its iteration quietly where a header is cut off or missing; a complete tar
    has a zero block (the end-of-archive marker) after its last member."""
    try:
        tar.fileobj.seek(tar.offset)  # type: ignore[union-attr]
        tail = tar.fileobj.read(tarfile.BLOCKSIZE)  # type: ignore[union-attr]
    except (OSError, EOFError, zlib.error) as exc:
        tail = str(exc).encode() or b"?"
    if len(tail) < tarfile.BLOCKSIZE or tail.strip(b"\0"):
        raise DatasetError(
            f"{archive} is truncated or corrupt: it ends after {len(tar.members)} members without "
            "the end-of-archive marker; download or build it again"
        )


def _copy_member(
    tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path, archive: Path
) -> None:
    try:
        src = tar.extractfile(member)
        if src is None:
            raise DatasetError(f"{archive}: member {member.name!r} could not be read")
        with src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise DatasetError(
            f"{archive} is truncated or corrupt: member {member.name!r} ends early "
            f"({type(exc).__name__}: {exc}); download or build it again"
        ) from exc


def stage_archive(
    archive: Path,
    out_dir: Path,
    name: str,
    source: str | None = None,
    min_side: int = 224,
    key: str | None = None,
    asked: Mapping[str, int] | None = None,
    allow_fewer: bool = False,
    add_hint: str = "add images to the archive",
) -> dict[str, Any]:
    """Extract ``archive`` into ``out_dir``/images, validate every member, write the manifest.

    Every member is used (8-bit RGB as it is; other modes converted to an 8-bit RGB PNG, counted
    per source mode), skipped (listed with its reason and counted in the manifest; undecodable
    images also named) or an error (DatasetError naming the archive and member; docs/dataset.md
    has the table). Members are copied by name into a temporary folder inside ``out_dir`` (never
    ``tar.extract``, so no link or path can write elsewhere), which is renamed into place at the
    end; the manifest is written last.

    ``asked``: the images the configured jobs read, by config key (``Sweep.required_images``).
    Fewer usable images than the most of them is a DatasetError naming the counts and the keys,
    unless ``allow_fewer`` (config ``dataset.allow_fewer``): then the manifest records
    ``allow_fewer`` and ``fewer_than_configured`` and every engine uses all usable images.
    """
    archive = Path(archive)
    out_dir = Path(out_dir)
    if not archive.exists():
        raise DatasetError(f"dataset archive not found: {archive}")
    if archive.stat().st_size == 0:
        raise DatasetError(f"dataset archive is empty (0 bytes): {archive}")
    try:
        tar = tarfile.open(archive, "r:*")  # noqa: SIM115 - closed by the `with tar` below
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise DatasetError(f"{archive} is not a readable .tar/.tar.gz archive: {exc}") from exc

    out_dir.mkdir(parents=True, exist_ok=True)
    images_dir = out_dir / "images"
    manifest_path = out_dir / "manifest.json"
    manifest_path.unlink(missing_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".staging-", dir=out_dir))
    try:
        staged: list[dict[str, Any]] = []
        skipped: list[dict[str, str]] = []
        seen: set[str] = set()
        to_rename: list[tuple[dict[str, Any], PurePosixPath]] = []

        def skip(member: tarfile.TarInfo, reason: str, detail: str = "") -> None:
            skipped.append({"member": member.name, "reason": reason, "detail": detail})

        with tar:
            for member in _members(tar, archive):
                if member.isdir():
                    continue
                rel = _safe_member_path(member, archive)
                if not member.isfile():
                    kind = (
                        "symlink"
                        if member.issym()
                        else "hard link"
                        if member.islnk()
                        else "special"
                    )
                    skip(member, SKIP_LINK, kind)
                    continue
                if rel.suffix.lower() not in IMAGE_SUFFIXES:
                    skip(member, SKIP_NOT_IMAGE, rel.suffix or "no suffix")
                    continue
                if rel.as_posix() in seen:
                    skip(member, SKIP_DUPLICATE)
                    continue
                seen.add(rel.as_posix())
                if member.size == 0:
                    skip(member, SKIP_EMPTY)
                    continue
                target = work.joinpath(*rel.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                _copy_member(tar, member, target, archive)
                try:
                    info = _inspect_image(target)
                except UndecodableImage as exc:
                    target.unlink()
                    skip(member, SKIP_UNDECODABLE, str(exc))
                    continue
                if info.mode not in ACCEPTED_MODES + CONVERTED_MODES:
                    target.unlink()
                    skip(member, SKIP_MODE, f"{info.format} mode {info.mode}")
                    continue
                if min(info.width, info.height) < min_side:
                    raise DatasetError(
                        f"{archive}: member {member.name!r} is {info.width}x{info.height}; "
                        f"every image needs both sides >= {min_side} px for the 224 px crops"
                    )
                entry = {**info.__dict__, "path": rel.as_posix()}
                if info.mode not in ACCEPTED_MODES:
                    # In place for now (PNG bytes under the member's name): its final name is
                    # chosen once every member's name is known.
                    convert_to_rgb_png(target, target)
                    from_ = {"member": member.name, "mode": info.mode, "format": info.format}
                    entry.update(
                        bytes=target.stat().st_size, mode="RGB", format="PNG", converted_from=from_
                    )
                    to_rename.append((entry, rel))
                staged.append(entry)
            _check_complete(tar, archive)
        taken = {f["path"] for f in staged}
        for entry, rel in to_rename:
            new = _converted_name(rel, taken)
            if new != rel:
                work.joinpath(*rel.parts).rename(work.joinpath(*new.parts))
                taken.add(new.as_posix())
                entry["path"] = new.as_posix()
        counts = _summary(staged, skipped)
        if not staged:
            raise DatasetError(
                f"dataset archive contains no usable images: {archive}" + _skipped_note(counts)
            )
        fewer = fewer_than_configured(len(staged), asked)
        if fewer and not allow_fewer:
            raise DatasetError(
                shortfall_message(source or str(archive), counts, fewer, add_hint=add_hint)
            )
        staged.sort(key=lambda f: f["path"])
        root = _unwrap(work, staged)
        if images_dir.exists():
            shutil.rmtree(images_dir)
        root.rename(images_dir)
        if root != work:
            shutil.rmtree(work)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise

    widths = [f["width"] for f in staged]
    heights = [f["height"] for f in staged]
    manifest = {
        "name": name,
        "key": key or name,
        "source": source or str(archive),
        "archive_sha256": sha256_file(archive),
        "archive_bytes": archive.stat().st_size,
        "images_dir": "images",
        "file_count": len(staged),
        "total_bytes": sum(f["bytes"] for f in staged),
        "width": {"min": min(widths), "max": max(widths), "mean": float(np.mean(widths))},
        "height": {"min": min(heights), "max": max(heights), "mean": float(np.mean(heights))},
        **counts,
        "skipped": skipped,
        **({"allow_fewer": True} if allow_fewer else {}),
        **({"fewer_than_configured": fewer} if fewer else {}),
        "files": staged,
    }
    tmp = manifest_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest, indent=1) + "\n")
    tmp.replace(manifest_path)
    return manifest


def _count(skipped: list[dict[str, str]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for entry in skipped:
        counts[entry["reason"]] = counts.get(entry["reason"], 0) + 1
    return counts


def _summary(staged: list[dict[str, Any]], skipped: list[dict[str, str]]) -> dict[str, Any]:
    """The manifest's counts: skipped members by reason, converted images by source mode, and
    the undecodable members (count and the first few names)."""
    converted: dict[str, int] = {}
    for entry in staged:
        if "converted_from" in entry:
            mode = entry["converted_from"]["mode"]
            converted[mode] = converted.get(mode, 0) + 1
    bad = [s["member"] for s in skipped if s["reason"] == SKIP_UNDECODABLE]
    return {
        "skipped_count": len(skipped),
        "skipped_by_reason": _count(skipped),
        "converted_count": sum(converted.values()),
        "converted": converted,
        "undecodable": {"count": len(bad), "first": bad[:NAMED_UNDECODABLE]},
    }


def _skipped_note(counts: Mapping[str, Any]) -> str:
    """`` (2 skipped: 1 not a decodable image, 1 ...; undecodable: a.jpg, b.jpg, ...)``, or ``""``
    when nothing was skipped: from a manifest or ``_summary``."""
    total = int(counts.get("skipped_count") or 0)
    if not total:
        return ""
    reasons = ", ".join(f"{n} {reason}" for reason, n in counts["skipped_by_reason"].items())
    bad = counts.get("undecodable") or {}
    names = ""
    if bad.get("count"):
        more = ", ..." if bad["count"] > len(bad["first"]) else ""
        names = "; undecodable: " + ", ".join(bad["first"]) + more
    return f" ({total} skipped: {reasons}{names})"


def fewer_than_configured(usable: int, asked: Mapping[str, int] | None) -> dict[str, Any] | None:
    """``{"configured": the most images a job reads, "usable": usable, "keys": {key: images} of
    every config key asking for more than usable}``, or None where the dataset has enough."""
    configured = max((asked or {}).values(), default=0)
    if usable >= configured:
        return None
    keys = {key: int(n) for key, n in (asked or {}).items() if n > usable}
    return {"configured": int(configured), "usable": int(usable), "keys": keys}


def shortfall_message(
    source: str,
    counts: Mapping[str, Any],
    fewer: Mapping[str, Any],
    add_hint: str = "add images to the archive",
) -> str:
    """One line: the dataset, its usable count (and what was skipped), the count the
    configuration asks for and the keys that ask it, and the three ways out."""
    usable = int(fewer["usable"])
    noun = "image" if usable == 1 else "images"
    keys = fewer.get("keys") or {}
    asked = ", ".join(f"{key}={n}" for key, n in keys.items())
    lower = " or ".join(keys) or "num_images"
    return (
        f"dataset {source} has {usable} usable {noun}{_skipped_note(counts)}; the configuration "
        f"asks for {fewer['configured']} ({asked}): {add_hint}, lower {lower} to at most "
        f"{usable}, or set dataset.allow_fewer: true to run every job on the {usable}"
    )


def check_staged(
    manifest: Mapping[str, Any],
    asked: Mapping[str, int],
    allow_fewer: bool,
    add_hint: str = "add images to the archive",
) -> tuple[str | None, str | None]:
    """An already staged dataset (its manifest) against what the configuration asks now:
    ``(error, note)``: the shortfall message where it has too few usable images and
    ``allow_fewer`` is off, else a note where it has too few and allow_fewer is on."""
    fewer = fewer_than_configured(int(manifest.get("file_count") or 0), asked)
    if not fewer:
        return None, None
    source = str(manifest.get("source") or manifest.get("name") or "?")
    if not allow_fewer:
        return shortfall_message(source, manifest, fewer, add_hint=add_hint), None
    return None, (
        f"dataset {source} has {fewer['usable']} usable images and the configuration asks for "
        f"{fewer['configured']}: every job uses the {fewer['usable']} (dataset.allow_fewer)"
    )


def check_staged_file(
    manifest_path: Path,
    asked: Mapping[str, int],
    allow_fewer: bool,
    add_hint: str = "add images to the archive",
) -> tuple[str | None, str | None]:
    """``check_staged`` of the manifest at ``manifest_path``; ``(None, None)`` where there is none
    yet (or it is unreadable): rule stage_dataset stages and checks it."""
    try:
        manifest = json.loads(Path(manifest_path).read_text())
    except (OSError, ValueError):
        return None, None
    return check_staged(manifest, asked, allow_fewer, add_hint=add_hint)
