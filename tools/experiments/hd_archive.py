"""A dataset archive of 1280x720 JPEGs (the detection/video frame size of docs/allocator.md and
the detection_640 pipeline): the embedded default dataset's photographs, each centre-cropped to 16:9
and resized to exactly 1280x720 (Pillow Lanczos, JPEG quality 90), in a deterministic tar that
the workflow takes as ``dataset.archive``.

    uv run python tools/experiments/hd_archive.py --out /tmp/hd-64.tar [--images 64]
    snakemake --cores 2 --config "dataset={archive: /tmp/hd-64.tar}" ...

The photographs are upscaled (the sources are ~0.3-0.5 MP): the pixels are real photographs,
the detail at 1280x720 is that of an upscaled photo; JPEG decode and every transform see a real
1280x720 frame.
"""

from __future__ import annotations

import argparse
import io
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from augbench.planning.dataset import add_tar_member, build_default_archive, sha256_file  # noqa: E402

SIZE = (1280, 720)


def to_frame(data: bytes) -> bytes:
    """One JPEG as a 1280x720 JPEG: the largest centred 16:9 crop, resized."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as img:
        img = img.convert("RGB")
        width, height = img.size
        crop_w = min(width, height * SIZE[0] // SIZE[1])
        crop_h = crop_w * SIZE[1] // SIZE[0]
        left, top = (width - crop_w) // 2, (height - crop_h) // 2
        frame = img.crop((left, top, left + crop_w, top + crop_h)).resize(
            SIZE, Image.Resampling.LANCZOS
        )
        out = io.BytesIO()
        frame.save(out, format="JPEG", quality=90, optimize=False)
        return out.getvalue()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--images", type=int, default=64)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "default.tar"
        build_default_archive(source, num_images=args.images)
        with (
            tarfile.open(source) as tar,
            tarfile.open(args.out, "w", format=tarfile.PAX_FORMAT) as out,
        ):
            for member in sorted(tar.getmembers(), key=lambda m: m.name):
                fh = tar.extractfile(member)
                if fh is not None:
                    add_tar_member(out, member.name, to_frame(fh.read()))
    print(f"{args.out}: {args.images} JPEGs of {SIZE[0]}x{SIZE[1]}, sha256 {sha256_file(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
