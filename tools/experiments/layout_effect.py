"""How much of a tensor library's micro throughput is its input's memory layout?

    uv run python tools/experiments/layout_effect.py --libraries torchvision,kornia \
        --manifest results/data/default-300/manifest.json --num-images 100 \
        --json-out layout_effect.json --markdown-out layout_effect.md

Per library, one process in the library's env (``.venvs/<library>``) under the micro regime's
single-thread policy decodes the images with the library's own decoder (augbench.measuring.media:
the same cache the micro regime uses) and keeps two copies of the inputs: ``native`` (exactly what
the decoder returns: channels-last memory for torchvision and Kornia) and ``contiguous`` (a
row-major copy: the harness convention before inputs were native). Per transform it times the micro
regime's scope, ``materialize(transform(image), image)`` over all images, alternating native and
contiguous passes (``--passes`` each, after one warm-up pass each), so machine noise (a shared VM)
lands on both sides; ``--clock cpu`` times the thread's CPU time instead of wall time, which
preemption on a busy machine does not inflate. Reports the median img/s of each side, and
native ÷ contiguous per pass pair and its median (below 1: the native layout is slower), with the
output's memory format and whether materialization copied.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

DEFAULT_TRANSFORMS = (
    "Resize,RandomCrop224,RandomResizedCrop,HorizontalFlip,Rotate,Affine,GaussianBlur,"
    "ColorJitter,Grayscale,Equalize"
)  # the default preset's ten


def inner(args: argparse.Namespace) -> int:
    """Runs in the library env: measure and print one JSON report line."""
    from augbench.policy import MICRO_THREADS

    MICRO_THREADS.apply_environment()
    from augbench.measuring import media
    from augbench.workload import adapters, catalog, layout

    adapter = adapters.get(args.library)
    adapter.import_library()
    MICRO_THREADS.apply_runtime()
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "media.pkl"
        media.build_cache(adapter, media.select_files(args.manifest, args.num_images), cache)
        sides = {lay: media.load_cache(adapter, cache, lay) for lay in ("native", "contiguous")}
    materialize = adapter.materialize
    # cpu: this thread's CPU time, which a loaded shared machine does not inflate by preemption.
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    report = []
    for name in args.transforms.split(","):
        transform = adapter.build(name, catalog.get(name).params)

        def one_pass(images: list, transform=transform) -> float:
            start = clock()
            for image in images:
                materialize(transform(image), image)
            return len(images) / (clock() - start)

        entry: dict = {"library": args.library, "transform": name}
        for lay, images in sides.items():
            out = transform(images[0])
            done = materialize(out, images[0])
            entry[f"{lay}_input"] = layout.describe(images[0])["memory_format"]
            entry[f"{lay}_output"] = layout.describe(out)["memory_format"]
            entry[f"{lay}_copied"] = done is not out
            one_pass(images)  # warm-up
        rates: dict[str, list[float]] = {"native": [], "contiguous": []}
        for _ in range(args.passes):
            for lay, images in sides.items():
                rates[lay].append(one_pass(images))
        ratios = [n / c for n, c in zip(rates["native"], rates["contiguous"], strict=True)]
        entry.update(
            native_img_s=statistics.median(rates["native"]),
            contiguous_img_s=statistics.median(rates["contiguous"]),
            ratio_per_pass=ratios,
            ratio_median=statistics.median(ratios),
        )
        report.append(entry)
        print(
            f"{args.library:12s} {name:18s} native {entry['native_img_s']:9.1f}  "
            f"contiguous {entry['contiguous_img_s']:9.1f}  ratio {entry['ratio_median']:.2f}",
            file=sys.stderr,
            flush=True,
        )
    print(json.dumps(report))
    return 0


def markdown(report: list[dict]) -> str:
    from augbench.analysis.lazy_outputs import yes_no

    lines = [
        "| library | transform | native img/s | contiguous img/s | native ÷ contiguous "
        "(min–max of passes) | output: native / contiguous | copied: native / contiguous |",
        "|---|---|---:|---:|---|---|---|",
    ]
    for e in report:
        lo, hi = min(e["ratio_per_pass"]), max(e["ratio_per_pass"])
        lines.append(
            f"| {e['library']} | {e['transform']} | {e['native_img_s']:.0f} "
            f"| {e['contiguous_img_s']:.0f} | **{e['ratio_median']:.2f}** ({lo:.2f}–{hi:.2f}) "
            f"| {e['native_output']} / {e['contiguous_output']} "
            f"| {yes_no(e['native_copied'])} / {yes_no(e['contiguous_copied'])} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--libraries", default="torchvision,kornia")
    p.add_argument("--library", help=argparse.SUPPRESS)  # inner mode
    p.add_argument("--transforms", default=DEFAULT_TRANSFORMS)
    p.add_argument("--manifest", type=Path, required=True)
    p.add_argument("--num-images", type=int, default=100)
    p.add_argument("--passes", type=int, default=7, help="timed passes per side")
    p.add_argument(
        "--clock", choices=["wall", "cpu"], default="wall",
        help="wall: perf_counter (as the micro regime); cpu: the thread's CPU time (robust to a "
        "busy shared machine)",
    )  # fmt: skip
    p.add_argument("--json-out", type=Path, default=None)
    p.add_argument("--markdown-out", type=Path, default=None)
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.inner:
        return inner(args)

    from augbench.policy import MICRO_THREADS

    env = {**os.environ, **MICRO_THREADS.environment(), "PYTHONPATH": str(ROOT)}
    report: list[dict] = []
    for library in args.libraries.split(","):
        python = str(ROOT / ".venvs" / library / "bin" / "python")
        cmd = [python, __file__, "--inner", "--library", library, "--manifest",
               str(args.manifest), "--num-images", str(args.num_images), "--transforms",
               args.transforms, "--passes", str(args.passes), "--clock", args.clock]  # fmt: skip
        out = subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
        report.extend(json.loads(out.strip().splitlines()[-1]))
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=1))
    table = markdown(report)
    if args.markdown_out:
        args.markdown_out.write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
