"""Do the workflow's AlbumentationsX whole-pipeline rows say what a user's own loop sees?

For every ok whole-pipeline row of AlbumentationsX's breakdown result files (``--results``: the
files, or a results directory searched for ``pipelines/raw/*/*/micro/albumentationsx/*.json``),
this rebuilds the row's ``A.Compose`` from its recorded ``compose_definition`` (``A.from_dict``:
what ``A.save`` writes), decodes the row's images from the staged dataset with OpenCV as a user
would (with a mask where the row's pipeline has one: the image's first channel above 127),
and times a plain loop ``compose(image=image)["image"]`` in a fresh process of the
AlbumentationsX env, one thread (the micro policy), none of the harness's code in the loop. It
prints, per row, the row's ms per image, the independent loop's, and their ratio; the check is
that they agree within ``--tolerance`` (10 %). Exit status 1 where a row does not.

    uv run python tools/checks/compose_vs_rows.py --results results \
        --manifest results/data/default-300-<hash>/manifest.json [--values 7] [--out FILE.tsv]

The loop runs after the workflow, not interleaved with it: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import json, statistics, sys, time
sys.path.insert(0, ROOT)
from augbench.policy import MICRO_THREADS, apply_telemetry_off
MICRO_THREADS.apply_environment()
apply_telemetry_off()
import cv2
import albumentations as A
MICRO_THREADS.apply_runtime()
request = json.loads(sys.stdin.read())
samples = []
for path in request["files"]:
    bgr = cv2.imread(path, cv2.IMREAD_COLOR)
    image = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    sample = {"image": image}
    if request["mask"]:  # a label map of the image's size, as the row's pipeline carries
        sample["mask"] = (image[..., :1] > 127).astype("uint8")
    samples.append(sample)
compose = A.from_dict(request["definition"])
compose.set_random_seed(0)
for sample in samples:  # warm-up
    compose(**sample)["image"]
passes, values = request["passes"], []
for _ in range(request["values"]):
    start = time.perf_counter()
    for _ in range(passes):
        for sample in samples:
            out = compose(**sample)["image"]
    values.append((time.perf_counter() - start) / (passes * len(samples)))
print(json.dumps({"ms_per_image": 1000 * statistics.median(values), "values": len(values)}))
"""


def result_files(given: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in given:
        if path.is_dir():
            files += sorted(path.glob("**/pipelines/raw/*/*/micro/albumentationsx/*.json"))
            files += sorted(path.glob("pipelines/raw/*/*/micro/albumentationsx/*.json"))
        else:
            files.append(path)
    return sorted(set(files))


def staged_files(manifest: Path, count: int) -> list[str]:
    data = json.loads(manifest.read_text())
    root = manifest.parent / data["images_dir"]
    return [str(root / entry["path"]) for entry in data["files"][:count]]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--results", nargs="+", type=Path, required=True)
    p.add_argument("--manifest", type=Path, required=True)
    p.add_argument("--python", type=Path, default=ROOT / ".venvs/albumentationsx/bin/python")
    p.add_argument("--values", type=int, default=7)
    p.add_argument("--tolerance", type=float, default=0.10)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    lines = ["machine\tpipeline\timages\trow_ms_per_image\tbare_loop_ms_per_image\tratio\twithin"]
    failed = False
    for path in result_files(args.results):
        payload = json.loads(path.read_text())
        machine = payload["metadata"].get("machine", "")
        for key, row in payload["results"].items():
            definition = row.get("compose_definition")
            if row.get("status") != "ok" or "step" in row or not isinstance(definition, dict):
                continue
            request = {
                "files": staged_files(args.manifest, int(row["num_images"])),
                "definition": definition,
                "passes": int(row.get("passes_per_value") or 1),
                "mask": "mask" in (row.get("pipeline_targets") or []),
                "values": args.values,
            }
            probe = subprocess.run(
                [str(args.python), "-c", f"ROOT = {str(ROOT)!r}\n{PROBE}"],
                input=json.dumps(request),
                capture_output=True,
                text=True,
                check=True,
            )
            bare = json.loads(probe.stdout.strip().splitlines()[-1])["ms_per_image"]
            row_ms = 1000.0 / float(row["median_throughput"])
            ratio = row_ms / bare
            within = abs(ratio - 1.0) <= args.tolerance
            failed |= not within
            lines.append(
                f"{machine}\t{key}\t{len(request['files'])}\t{row_ms:.4f}\t{bare:.4f}\t"
                f"{ratio:.3f}\t{'yes' if within else 'NO'}"
            )
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
