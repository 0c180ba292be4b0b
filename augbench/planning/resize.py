"""Derived datasets of the resolution sweep: the staged dataset resized once per resolution.

A derived dataset is an archive like any other (``results/data/archives/<key>.tar``), staged like
any other (``results/data/<key>/``), so a node that lacks its images restages it from that archive
(augbench.planning.provision). Its key is known while the job graph is built: the base dataset's
name plus ``r<R>``, and a hash of the base dataset's digest and the resize parameters
(docs/dataset.md).

Runs in the driver environment (Pillow).
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from augbench.planning.dataset import DatasetIdentity, add_tar_member, stage_archive

# Bump when resize_archive changes what it writes: every derived key changes with it.
RESIZE_VERSION = 1


@dataclass(frozen=True)
class ResizeSpec:
    """How a derived dataset's images are made from the base dataset's.

    ``shorter_side``: the shorter side becomes ``resolution`` px and the longer one keeps the
    aspect ratio (rounded to the nearest pixel), as torchvision's ``Resize(R)``; images smaller
    than that are upscaled (counted in the manifest). Pillow's Lanczos filter, which low-passes
    when it shrinks; re-encoded as baseline JPEG at ``jpeg_quality`` with 4:2:0 chroma subsampling
    (Pillow's default), so the decode scope still decodes JPEG.
    """

    resolution: int
    mode: str = "shorter_side"
    library: str = "pillow"
    filter: str = "lanczos"
    jpeg_quality: int = 95
    version: int = RESIZE_VERSION

    def __post_init__(self) -> None:
        if self.resolution < 1:
            raise ValueError(f"resolution must be >= 1 px, got {self.resolution}")
        if self.mode != "shorter_side":
            raise ValueError(f"unknown resize mode {self.mode!r}; known: shorter_side")
        if self.filter != "lanczos":
            raise ValueError(f"unknown resize filter {self.filter!r}; known: lanczos")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def target_size(self, width: int, height: int) -> tuple[int, int]:
        """(width, height) with the shorter side at ``resolution``, aspect kept."""
        short = min(width, height)
        scale = self.resolution / short
        if width <= height:
            return self.resolution, max(1, round(height * scale))
        return max(1, round(width * scale)), self.resolution


def derived_identity(base: DatasetIdentity, spec: ResizeSpec) -> DatasetIdentity:
    """``<base name>-r<R>-<12 hex>``: the hash covers the base dataset's digest (so a changed
    base archive changes every derived key) and every resize parameter."""
    payload = {"base_kind": base.kind, "base_digest": base.digest, **spec.to_dict()}
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
    return DatasetIdentity(f"{base.name}-r{spec.resolution}", digest, "derived-resize")


def resize_archive(base_manifest: Path, spec: ResizeSpec, out_archive: Path) -> dict[str, Any]:
    """Write a deterministic tar of every image of the staged base dataset, resized by ``spec``.

    Same base images, same spec and same Pillow give the same bytes (sorted members, zeroed
    timestamps and ownership). Returns counts: images, upscaled, downscaled, unchanged.
    """
    from PIL import Image

    base_manifest = Path(base_manifest)
    doc = json.loads(base_manifest.read_text())
    root = base_manifest.parent / doc.get("images_dir", "images")
    counts = {"images": 0, "upscaled": 0, "downscaled": 0, "unchanged": 0}
    out_archive = Path(out_archive)
    out_archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_archive.with_name(f".{out_archive.name}.tmp")
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
        for entry in sorted(doc["files"], key=lambda f: f["path"]):
            with Image.open(root / entry["path"]) as img:
                rgb = img.convert("RGB")
            size = spec.target_size(*rgb.size)
            short = min(rgb.size)
            kind = (
                "upscaled"
                if spec.resolution > short
                else "downscaled"
                if spec.resolution < short
                else "unchanged"
            )
            counts[kind] += 1
            counts["images"] += 1
            out = rgb if size == rgb.size else rgb.resize(size, Image.Resampling.LANCZOS)
            buf = io.BytesIO()
            out.save(buf, format="JPEG", quality=spec.jpeg_quality, optimize=False)
            stem = str(Path(entry["path"]).with_suffix(""))
            add_tar_member(tar, f"images/{stem}.jpg", buf.getvalue())
    tmp.replace(out_archive)
    return counts


def build_derived(
    base_manifest: Path,
    spec: ResizeSpec,
    out_archive: Path,
    out_dir: Path,
    identity: DatasetIdentity,
    base_key: str,
) -> dict[str, Any]:
    """Resize into ``out_archive``, stage it into ``out_dir`` like any archive, and record the
    sweep's parameters in the manifest (``resolution``, ``resize``, ``base_key``, counts)."""
    counts = resize_archive(base_manifest, spec, out_archive)
    base = json.loads(Path(base_manifest).read_text())
    manifest = stage_archive(
        out_archive,
        out_dir,
        name=identity.name,
        source=f"{base.get('source', base_key)} resized ({spec.mode} = {spec.resolution} px)",
        min_side=1,  # small resolutions are the point of the sweep
        key=identity.key,
    )
    manifest.update(
        resolution=spec.resolution,
        resize={**spec.to_dict(), **counts},
        base_key=base_key,
        base_archive_sha256=base.get("archive_sha256", ""),
        min_side=1,
    )
    path = Path(out_dir) / "manifest.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest, indent=1) + "\n")
    tmp.replace(path)
    return manifest


def configured_datasets(
    config: dict[str, Any], cache: Path
) -> tuple[DatasetIdentity, dict[str, tuple[DatasetIdentity, ResizeSpec]]]:
    """The staged dataset's identity (name + short content hash, known while the job graph is
    built: augbench.planning.dataset.identity; raises DatasetError for a missing archive or object)
    and {derived key: (identity, spec)}, one per configured resolution, in config order."""
    from augbench.planning.dataset import dataset_name, identity

    base = identity(config["dataset"], dataset_name(config["dataset"]), cache=cache)
    derived = {}
    for resolution in config.get("resolutions") or []:
        spec = ResizeSpec(int(resolution))
        found = derived_identity(base, spec)
        derived[found.key] = (found, spec)
    return base, derived


def resized_work(data_dir: Path, key: str) -> tuple[int, float] | None:
    """(images, megapixels) of a resize job: the images it wrote, and the megapixels it read
    (its base images) and wrote (the derived ones), from the staged manifests; None where they
    are missing."""
    try:
        derived = json.loads((data_dir / key / "manifest.json").read_text())
        base = json.loads((data_dir / derived["base_key"] / "manifest.json").read_text())
    except (OSError, ValueError, KeyError, TypeError):
        return None
    count = len(derived["files"])
    pixels = sum(f["width"] * f["height"] for f in derived["files"] + base["files"][:count])
    return (count, pixels / 1e6) if count and pixels else None
