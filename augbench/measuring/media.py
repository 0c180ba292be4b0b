"""Dataset manifest access and the decoded-media cache shared by a job's measuring processes."""

from __future__ import annotations

import json
import pickle
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from augbench.workload import layout
from augbench.workload.adapters.base import Adapter


def read_manifest(manifest_path: Path) -> dict[str, Any]:
    return json.loads(Path(manifest_path).read_text())


def allows_fewer(manifest_path: Path, manifest: dict[str, Any] | None = None) -> bool:
    """Whether the dataset was staged with ``dataset.allow_fewer`` (its manifest says so): jobs
    then use every usable image where they ask for more. A derived dataset of the resolution
    sweep (``base_key``) follows its base dataset, read beside it where its manifest does not
    say."""
    manifest = read_manifest(manifest_path) if manifest is None else manifest
    if "allow_fewer" in manifest:
        return bool(manifest["allow_fewer"])
    base_key = manifest.get("base_key")
    if base_key:
        base = Path(manifest_path).parent.parent / str(base_key) / "manifest.json"
        if base.is_file():
            return bool(read_manifest(base).get("allow_fewer"))
    return False


def select_files(manifest_path: Path, num_images: int) -> list[Path]:
    """The first ``num_images`` files of the staged dataset, in the manifest's sorted order; all
    of them where the dataset has fewer and was staged with ``dataset.allow_fewer`` (the job's
    dataset record says so: ``dataset_metadata``)."""
    manifest = read_manifest(manifest_path)
    root = Path(manifest_path).parent / manifest["images_dir"]
    files = [root / entry["path"] for entry in manifest["files"]]
    if not files:
        raise ValueError(f"dataset manifest {manifest_path} lists no images")
    if num_images > len(files) and not allows_fewer(manifest_path, manifest):
        raise ValueError(
            f"num_images={num_images} but the staged dataset has only {len(files)} images "
            f"({manifest_path}); lower num_images, use a larger archive or set "
            "dataset.allow_fewer: true"
        )
    return files[:num_images]


def images_within_pixel_budget(manifest_path: Path, wanted: int, max_megapixels: float) -> int:
    """``wanted``, or fewer where the first ``wanted`` images of the manifest exceed
    ``max_megapixels`` (:func:`images_within_budget`, the rule the plan uses too)."""
    files = read_manifest(manifest_path)["files"]
    pixels = [int(f["width"]) * int(f["height"]) for f in files[:wanted]]
    held = images_within_budget(pixels, wanted, max_megapixels)
    return held if held < len(pixels) else wanted


def dataset_metadata(manifest_path: Path, num_images: int) -> dict[str, Any]:
    manifest = read_manifest(manifest_path)
    selected = manifest["files"][:num_images]
    converted: dict[str, int] = {}
    for entry in selected:
        if entry.get("converted_from"):
            mode = entry["converted_from"]["mode"]
            converted[mode] = converted.get(mode, 0) + 1
    fewer = None
    if num_images > len(selected) and allows_fewer(manifest_path, manifest):
        # The job asked for more images than the dataset has (dataset.allow_fewer): it used all.
        fewer = {"configured": num_images, "usable": len(selected), "setting": "allow_fewer"}
    return {
        "name": manifest["name"],
        # name + short content hash (results/raw/<machine>/<key>/...); absent in old manifests
        "key": manifest.get("key", manifest["name"]),
        "source": manifest["source"],
        "archive_sha256": manifest["archive_sha256"],
        "file_count": manifest["file_count"],
        "total_bytes": manifest["total_bytes"],
        "num_images_used": len(selected),
        # Fewer usable images than the job asked for (dataset.allow_fewer), else None.
        "fewer_than_configured": fewer,
        # Images of those used that staging converted to 8-bit RGB, by source mode.
        "converted": converted,
        "mean_width": float(np.mean([f["width"] for f in selected])) if selected else None,
        "mean_height": float(np.mean([f["height"] for f in selected])) if selected else None,
        # Pixels per image as measured (mean of width x height, not the product of the means).
        "mean_megapixels": (
            float(np.mean([f["width"] * f["height"] for f in selected])) / 1e6 if selected else None
        ),
        # Resolution sweep (augbench.planning.resize): the shorter side and how the images were
        # resized.
        "resolution": manifest.get("resolution"),
        "resize": manifest.get("resize"),
        "base_key": manifest.get("base_key"),
    }


def stack_channels(rgb: np.ndarray, channels: int) -> np.ndarray:
    """The RGB image repeated along the channel axis (the 9-channel scenario stacks it 3 times)."""
    if channels % rgb.shape[2]:
        raise ValueError(f"cannot stack a {rgb.shape[2]}-channel image to {channels} channels")
    return np.ascontiguousarray(np.concatenate([rgb] * (channels // rgb.shape[2]), axis=2))


# What must match between a fresh decode and the cached image (view-ness may differ).
LAYOUT_KEYS = ("type", "dtype", "shape", "strides", "memory_format")


def build_cache(
    adapter: Adapter, files: list[Path], cache_path: Path, channels: int = 3
) -> dict[str, Any]:
    """Decode ``files`` once with the library's own decoder and pickle them as HWC arrays
    (stacked to ``channels`` after decoding; stacking is not timed).

    The cache is library-neutral pixels; ``load_cache`` turns them back into exactly what the
    decoder returns (``Adapter.from_array``: same type, dtype, shape and strides). The returned
    info records the decoder's layout and whether the round trip reproduced it."""
    native: dict[str, Any] = {}
    arrays: list[np.ndarray] = []
    start = time.perf_counter()
    for path in files:
        image = adapter.decode(path)
        native = native or layout.describe(image)
        arrays.append(np.ascontiguousarray(adapter.to_array(image)))
    decode_s = time.perf_counter() - start
    restored = layout.describe(adapter.from_array(arrays[0])) if arrays else {}
    if channels != 3:
        arrays = [stack_channels(a, channels) for a in arrays]
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    with cache_path.open("wb") as fh:
        pickle.dump(arrays, fh, protocol=pickle.HIGHEST_PROTOCOL)
    return {
        "decoder": adapter.decoder,
        "decode_seconds": decode_s,
        "decoded_images": len(arrays),
        "decoded_megapixels": sum(a.shape[0] * a.shape[1] for a in arrays) / 1e6,
        "channels": channels,
        "decoder_layout": native,
        "native_layout_reproduced": all(restored.get(k) == native.get(k) for k in LAYOUT_KEYS),
    }


def load_cache(adapter: Adapter, cache_path: Path, input_layout: str = "native") -> list[Any]:
    """The cached images in the library's native form and layout (``native``: exactly as its
    decoder returns them), or row-major (``contiguous``, the micro regime's layout variant)."""
    with Path(cache_path).open("rb") as fh:
        arrays: list[np.ndarray] = pickle.load(fh)
    return [adapter.with_layout(adapter.from_array(a), input_layout) for a in arrays]


def images_within_budget(pixels: Sequence[int], wanted: int, max_megapixels: float | None) -> int:
    """How many of the first ``wanted`` images a job holds so that their pixels stay within
    ``max_megapixels`` (at least one image; all of them without a budget). The micro engine
    and the plan both call this, on the staged manifest and on the plan-time sizes."""
    count = min(wanted, len(pixels)) if pixels else wanted
    if not pixels or max_megapixels is None or max_megapixels <= 0:
        return count
    budget = max_megapixels * 1e6
    total, held = 0.0, 0
    for px in pixels[:count]:
        if held and total + px > budget:
            break
        total += px
        held += 1
    return max(held, 1)
