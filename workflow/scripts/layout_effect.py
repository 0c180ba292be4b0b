"""How much of a tensor library's micro throughput is its input's memory layout?

    uv run python workflow/scripts/layout_effect.py --libraries torchvision,kornia \
        --manifest results/data/default-300/manifest.json --num-images 100 \
        --markdown-out layout_effect.md

For each library and transform, alternates (``--rounds`` times) the workflow's own measuring
process (augbench/engines/micro_worker.py, pyperf, one process) on the same cached images with
``--layout native`` (exactly what the library's decoder returns: channels-last memory for
torchvision and Kornia) and ``--layout contiguous`` (a row-major copy: the harness convention
before inputs were native). Prints and writes native and contiguous img/s and their ratio
(native / contiguous: below 1 means the native layout is slower), with the output's memory format
and whether materialization copied. Alternating in one run keeps machine noise off one side.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
sys.path.insert(0, str(ROOT))

from harness_overhead import build_cache, workflow_row  # noqa: E402
from tqdm import tqdm  # noqa: E402

DEFAULT_TRANSFORMS = (
    "Resize,RandomCrop224,RandomResizedCrop,HorizontalFlip,Rotate,Affine,GaussianBlur,"
    "ColorJitter,Grayscale,Equalize"
)  # the default preset's ten


def measure(args: argparse.Namespace, library: str, cache: Path, name: str) -> dict:
    python = str(ROOT / ".venvs" / library / "bin" / "python")
    rates: dict[str, list[float]] = {"native": [], "contiguous": []}
    rows: dict[str, dict] = {}
    for _ in range(args.rounds):
        for layout in ("native", "contiguous"):
            row = workflow_row(python, library, name, cache, args.values, layout)
            rates[layout].append(float(row["median_throughput"]))
            rows[layout] = row
    ratios = [n / c for n, c in zip(rates["native"], rates["contiguous"], strict=True)]
    native = rows["native"]
    return {
        "library": library,
        "transform": name,
        "native_img_s": statistics.median(rates["native"]),
        "contiguous_img_s": statistics.median(rates["contiguous"]),
        "ratio_per_round": ratios,
        "ratio_median": statistics.median(ratios),
        "native_input": native.get("input_layout", {}).get("memory_format"),
        "native_output": native.get("output_layout", {}).get("memory_format"),
        "native_copied": native.get("materialize_copies"),
        "contiguous_output": rows["contiguous"].get("output_layout", {}).get("memory_format"),
        "contiguous_copied": rows["contiguous"].get("materialize_copies"),
    }


def markdown(report: list[dict]) -> str:
    lines = [
        "| library | transform | native img/s | contiguous img/s | native ÷ contiguous (rounds) "
        "| output (native / contiguous) | copied (native / contiguous) |",
        "|---|---|---:|---:|---|---|---|",
    ]
    for e in report:
        rounds = ", ".join(f"{r:.2f}" for r in e["ratio_per_round"])
        lines.append(
            f"| {e['library']} | {e['transform']} | {e['native_img_s']:.0f} "
            f"| {e['contiguous_img_s']:.0f} | **{e['ratio_median']:.2f}** ({rounds}) "
            f"| {e['native_output']} / {e['contiguous_output']} "
            f"| {_yes(e['native_copied'])} / {_yes(e['contiguous_copied'])} |"
        )
    return "\n".join(lines) + "\n"


def _yes(value: object) -> str:
    return "yes" if value else "no"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--libraries", default="torchvision,kornia")
    p.add_argument("--transforms", default=DEFAULT_TRANSFORMS)
    p.add_argument("--manifest", type=Path, required=True)
    p.add_argument("--num-images", type=int, default=100)
    p.add_argument("--values", type=int, default=3, help="timed passes per side per round")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--json-out", type=Path, default=None)
    p.add_argument("--markdown-out", type=Path, default=None)
    args = p.parse_args()

    report = []
    with tempfile.TemporaryDirectory() as tmp:
        for library in args.libraries.split(","):
            cache = Path(tmp) / f"{library}.pkl"
            python = str(ROOT / ".venvs" / library / "bin" / "python")
            build_cache(python, library, args.manifest, args.num_images, cache)
            names = args.transforms.split(",")
            for name in tqdm(names, desc=f"layout effect | {library}", unit="transform"):
                entry = measure(args, library, cache, name)
                report.append(entry)
                tqdm.write(
                    f"{library:12s} {name:18s} native {entry['native_img_s']:9.1f}  "
                    f"contiguous {entry['contiguous_img_s']:9.1f}  "
                    f"ratio {entry['ratio_median']:.2f}"
                )
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=1))
    table = markdown(report)
    if args.markdown_out:
        args.markdown_out.write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
