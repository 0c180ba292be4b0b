"""The dataset archive: building the embedded default, and staging any archive once.

Runs in the driver environment (Pillow + scikit-image's shipped sample photographs).
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
import tempfile
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


def _variant(source: Any, rng: np.random.Generator) -> Any:
    """A random crop of ``source`` at an ImageNet-like aspect, resized and maybe mirrored."""
    from PIL import Image

    out_w, out_h = IMAGENET_LIKE_SIZES[int(rng.integers(len(IMAGENET_LIKE_SIZES)))]
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
            info = tarfile.TarInfo(
                name=f"images/{i:05d}_{DEFAULT_SOURCES[source_idx].split('.')[0]}.jpg"
            )
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    tmp.replace(out_path)
    return {"path": str(out_path), "num_images": num_images, "sha256": sha256_file(out_path)}


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


def _safe_member_path(member: tarfile.TarInfo, archive: Path) -> PurePosixPath:
    rel = PurePosixPath(member.name)
    if rel.is_absolute() or ".." in rel.parts:
        raise DatasetError(f"{archive}: member {member.name!r} has an unsafe path")
    return rel


def _validate_image(path: Path, member_name: str, archive: Path) -> StagedImage:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as img:
            fmt = img.format or "unknown"
            img.load()  # full decode: truncated or corrupt data fails here, not in a benchmark
            rgb = img.convert("RGB")
            width, height = rgb.size
            mode = img.mode
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise DatasetError(
            f"{archive}: member {member_name!r} is not a decodable image ({type(exc).__name__}: "
            f"{exc})"
        ) from exc
    return StagedImage(
        path="", bytes=path.stat().st_size, width=width, height=height, mode=mode, format=fmt
    )


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


def stage_archive(
    archive: Path, out_dir: Path, name: str, source: str | None = None, min_side: int = 224
) -> dict[str, Any]:
    """Extract ``archive`` into ``out_dir``/images, validate every member, write the manifest.

    The images folder and ``manifest.json`` appear only when everything validated: extraction
    happens in a temporary sibling folder that is renamed at the end, and the manifest is written
    last. Any bad input raises DatasetError naming the archive and member.
    """
    archive = Path(archive)
    out_dir = Path(out_dir)
    if not archive.exists():
        raise DatasetError(f"dataset archive not found: {archive}")
    if archive.stat().st_size == 0:
        raise DatasetError(f"dataset archive is empty (0 bytes): {archive}")
    try:
        tar = tarfile.open(archive, "r:*")  # noqa: SIM115 - closed by the `with tar` below
    except (tarfile.TarError, OSError) as exc:
        raise DatasetError(f"{archive} is not a readable .tar/.tar.gz archive: {exc}") from exc

    out_dir.mkdir(parents=True, exist_ok=True)
    images_dir = out_dir / "images"
    manifest_path = out_dir / "manifest.json"
    manifest_path.unlink(missing_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".staging-", dir=out_dir))
    try:
        staged: list[dict[str, Any]] = []
        with tar:
            for member in tar:
                if member.isdir():
                    continue
                rel = _safe_member_path(member, archive)
                if not member.isfile():
                    raise DatasetError(
                        f"{archive}: member {member.name!r} is not a regular file "
                        "(links and devices are not accepted)"
                    )
                if rel.suffix.lower() not in IMAGE_SUFFIXES:
                    raise DatasetError(
                        f"{archive}: member {member.name!r} is not an image "
                        f"(allowed suffixes: {', '.join(IMAGE_SUFFIXES)})"
                    )
                target = work.joinpath(*rel.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                src = tar.extractfile(member)
                if src is None:
                    raise DatasetError(f"{archive}: member {member.name!r} could not be read")
                with src, target.open("wb") as dst:
                    shutil.copyfileobj(src, dst)
                info = _validate_image(target, member.name, archive)
                if min(info.width, info.height) < min_side:
                    raise DatasetError(
                        f"{archive}: member {member.name!r} is {info.width}x{info.height}; "
                        f"every image needs both sides >= {min_side} px for the 224 px crops"
                    )
                staged.append({**info.__dict__, "path": rel.as_posix()})
        if not staged:
            raise DatasetError(f"dataset archive contains no images: {archive}")
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
        "source": source or str(archive),
        "archive_sha256": sha256_file(archive),
        "archive_bytes": archive.stat().st_size,
        "images_dir": "images",
        "file_count": len(staged),
        "total_bytes": sum(f["bytes"] for f in staged),
        "width": {"min": min(widths), "max": max(widths), "mean": float(np.mean(widths))},
        "height": {"min": min(heights), "max": max(heights), "mean": float(np.mean(heights))},
        "files": staged,
    }
    tmp = manifest_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest, indent=1) + "\n")
    tmp.replace(manifest_path)
    return manifest
