"""Dataset manifest access and the decoded-media cache shared by a job's measuring processes."""

from __future__ import annotations

import json
import pickle
import time
from pathlib import Path
from typing import Any

import numpy as np

from augbench.adapters.base import Adapter


def read_manifest(manifest_path: Path) -> dict[str, Any]:
    return json.loads(Path(manifest_path).read_text())


def select_files(manifest_path: Path, num_images: int) -> list[Path]:
    """The first ``num_images`` files of the staged dataset, in the manifest's sorted order."""
    manifest = read_manifest(manifest_path)
    root = Path(manifest_path).parent / manifest["images_dir"]
    files = [root / entry["path"] for entry in manifest["files"]]
    if not files:
        raise ValueError(f"dataset manifest {manifest_path} lists no images")
    if num_images > len(files):
        raise ValueError(
            f"num_images={num_images} but the staged dataset has only {len(files)} images "
            f"({manifest_path}); lower num_images or use a larger archive"
        )
    return files[:num_images]


def dataset_metadata(manifest_path: Path, num_images: int) -> dict[str, Any]:
    manifest = read_manifest(manifest_path)
    selected = manifest["files"][:num_images]
    return {
        "name": manifest["name"],
        # name + short content hash (results/raw/<machine>/<key>/...); absent in old manifests
        "key": manifest.get("key", manifest["name"]),
        "source": manifest["source"],
        "archive_sha256": manifest["archive_sha256"],
        "file_count": manifest["file_count"],
        "total_bytes": manifest["total_bytes"],
        "num_images_used": len(selected),
        "mean_width": float(np.mean([f["width"] for f in selected])) if selected else None,
        "mean_height": float(np.mean([f["height"] for f in selected])) if selected else None,
    }


def stack_channels(rgb: np.ndarray, channels: int) -> np.ndarray:
    """The RGB image repeated along the channel axis (the 9-channel scenario stacks it 3 times)."""
    if channels % rgb.shape[2]:
        raise ValueError(f"cannot stack a {rgb.shape[2]}-channel image to {channels} channels")
    return np.ascontiguousarray(np.concatenate([rgb] * (channels // rgb.shape[2]), axis=2))


def build_cache(
    adapter: Adapter, files: list[Path], cache_path: Path, channels: int = 3
) -> dict[str, Any]:
    """Decode ``files`` once with the library's own decoder and pickle them as HWC arrays
    (stacked to ``channels`` after decoding; stacking is not timed)."""
    start = time.perf_counter()
    arrays = [np.ascontiguousarray(adapter.to_array(adapter.decode(path))) for path in files]
    decode_s = time.perf_counter() - start
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
    }


def load_cache(adapter: Adapter, cache_path: Path) -> list[Any]:
    with Path(cache_path).open("rb") as fh:
        arrays: list[np.ndarray] = pickle.load(fh)
    return [adapter.from_array(a) for a in arrays]
