"""Do the workflow's whole-pipeline rows say what a user's own loop sees?

For every ok whole-pipeline row of the pipeline breakdown's result files (``--results``: the
files, or a results directory searched for ``pipelines/raw/*/*/micro/<library>/*.json``), this
times a plain loop over the same composition in fresh interpreters of the row's library env,
under glibc as shipped (the caller's allocator settings removed), one thread (the micro policy),
none of the harness's code in the loop:

- AlbumentationsX: the row's recorded ``compose_definition`` rebuilt with ``A.from_dict`` (what
  ``A.save`` writes), images decoded with OpenCV as a user would, ``out = compose(image=image)
  ["image"]`` (with a mask where the row's pipeline has one: the image's first channel above
  127);
- the other libraries: the row's pipeline definition (its file's ``benchmark_params``) built as
  the row built it (augbench.pipelines, the library's own composition object), images decoded by
  the library's decoder, ``out = call(compose, image)``: only the construction is shared.

Each fresh interpreter: one untimed pass, then ``--values`` timed values of the row's passes over
the row's images; ``--processes`` interpreters per row. It prints, per row, the row's ms per
image with its interval, the fresh loop's (median over every value, interval by a bootstrap over
the interpreters), and their ratio with its interval; the check is that the ratio is within
``--tolerance`` (10 %) of 1. Exit status 1 where a row is not.

    uv run python tools/checks/compose_vs_rows.py --results results \
        --manifest results/data/default-300-<hash>/manifest.json [--processes 3] [--out FILE.tsv]

The loops run after the workflow, not interleaved with it: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from augbench import allocator  # noqa: E402
from augbench.intervals import (  # noqa: E402
    Interval,
    process_median_interval,
    ratio_interval,
)

ALBUMENTATIONS_PROBE = r"""
import json, sys, time
sys.path.insert(0, ROOT)
from augbench.policy import MICRO_THREADS
from augbench.telemetry import apply_off as apply_telemetry_off
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
    out = compose(**sample)["image"]
passes, values = request["passes"], []
for _ in range(request["values"]):
    start = time.perf_counter()
    for _ in range(passes):
        for sample in samples:
            out = compose(**sample)["image"]
    values.append((time.perf_counter() - start) / (passes * len(samples)))
print(json.dumps({"seconds_per_image": values}))
"""

LIBRARY_PROBE = r"""
import json, sys, time
sys.path.insert(0, ROOT)
from augbench.policy import MICRO_THREADS
from augbench.telemetry import apply_off as apply_telemetry_off
MICRO_THREADS.apply_environment()
apply_telemetry_off()
from augbench import adapters, pipeline_builders, pipelines
request = json.loads(sys.stdin.read())
adapter = adapters.get(request["library"])
adapter.import_library()
MICRO_THREADS.apply_runtime()
from augbench.engines.pipeline_breakdown import with_input_conversion
pipeline = pipelines.Pipeline.from_dict(request["pipeline"])
units = pipeline_builders.build_units(adapter, pipeline)
whole = pipeline_builders.build_whole(adapter, pipeline, units)
units, whole = with_input_conversion(adapter, pipeline, units, whole)
samples = [
    pipelines.prepare(adapter, pipeline, adapter.decode_8bit(path)) for path in request["files"]
]
compose, call = whole.obj, whole.call
for sample in samples:  # warm-up
    out = call(compose, sample)
passes, values = request["passes"], []
for _ in range(request["values"]):
    start = time.perf_counter()
    for _ in range(passes):
        for sample in samples:
            out = call(compose, sample)
    values.append((time.perf_counter() - start) / (passes * len(samples)))
print(json.dumps({"seconds_per_image": values}))
"""


def result_files(given: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in given:
        if path.is_dir():
            files += sorted(path.glob("**/pipelines/raw/*/*/micro/*/breakdown*.json"))
            files += sorted(path.glob("pipelines/raw/*/*/micro/*/breakdown*.json"))
        else:
            files.append(path)
    return sorted(set(files))


def staged_files(manifest: Path, count: int) -> list[str]:
    data = json.loads(manifest.read_text())
    root = manifest.parent / data["images_dir"]
    return [str(root / entry["path"]) for entry in data["files"][:count]]


def loop_request(
    row: dict, library: str, definition: dict, manifest: Path, values: int
) -> tuple[dict, str]:
    """What a fresh interpreter needs to loop over a whole-pipeline row's composition (its
    images, passes, mask and definitions), and the probe that runs it: AlbumentationsX rebuilds
    the row's recorded Compose, the other libraries build the row's pipeline definition."""
    request = {
        "files": staged_files(manifest, int(row["num_images"])),
        "passes": int(row.get("passes_per_value") or 1),
        "mask": "mask" in (row.get("pipeline_targets") or []),
        "values": values,
        "library": library,
        "pipeline": definition,
        "definition": row.get("compose_definition"),
    }
    own = library == "albumentationsx" and isinstance(request["definition"], dict)
    return request, ALBUMENTATIONS_PROBE if own else LIBRARY_PROBE


def fresh_loop(python: Path, probe: str, request: dict, processes: int) -> list[list[float]]:
    """Seconds per image of each value, by fresh interpreter, under glibc as shipped."""
    env = allocator.launch_environment(allocator.DEFAULT_SETTING, python.parent.parent, os.environ)
    groups = []
    for _ in range(processes):
        run = subprocess.run(
            [str(python), "-c", f"ROOT = {str(ROOT)!r}\n{probe}"],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        groups.append(json.loads(run.stdout.strip().splitlines()[-1])["seconds_per_image"])
    return groups


def row_interval_ms(row: dict) -> Interval:
    """The row's median ms per image with its interval (from its throughput interval)."""
    low, high = row.get("ci_low"), row.get("ci_high")
    return Interval(
        1000.0 / float(row["median_throughput"]),
        1000.0 / float(high) if high else None,
        1000.0 / float(low) if low else None,
        row.get("ci_level"),
        str(row.get("ci_method") or ""),
        int(row.get("num_successful_runs") or 0),
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--results", nargs="+", type=Path, required=True)
    p.add_argument("--manifest", type=Path, required=True)
    p.add_argument("--venvs", type=Path, default=ROOT / ".venvs")
    p.add_argument("--processes", type=int, default=3)
    p.add_argument("--values", type=int, default=3)
    p.add_argument("--tolerance", type=float, default=0.10)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    head = (
        "malloc_env\tmachine\tlibrary\tpipeline\timages\trow_ms_per_image\trow_ci\t"
        "fresh_loop_ms_per_image\tfresh_ci\tratio\tratio_ci\twithin"
    )
    lines = [head]
    failed = False
    for path in result_files(args.results):
        payload = json.loads(path.read_text())
        meta = payload["metadata"]
        library = meta.get("library", "")
        machine = meta.get("machine", "")
        setting = meta.get("allocator_setting") or allocator.DEFAULT_SETTING
        if setting != allocator.DEFAULT_SETTING:
            continue  # the check is of the rows glibc as shipped publishes
        definitions = {p["name"]: p for p in meta["benchmark_params"].get("pipelines", [])}
        python = args.venvs / library / "bin" / "python"
        for key, row in payload["results"].items():
            if row.get("status") != "ok" or "step" in row or key not in definitions:
                continue
            request, probe = loop_request(
                row, library, definitions[key], args.manifest, args.values
            )
            groups = fresh_loop(python, probe, request, args.processes)
            fresh = process_median_interval([[1000.0 * v for v in g] for g in groups])
            mine = row_interval_ms(row)
            ratio = ratio_interval(mine, fresh)
            within = abs(ratio.estimate - 1.0) <= args.tolerance
            failed |= not within

            def span(i: Interval, fmt: str = ".3f") -> str:
                if i.low is None or i.high is None:
                    return ""
                return f"[{i.low:{fmt}}, {i.high:{fmt}}]"

            lines.append(
                f"glibc as shipped\t{machine}\t{library}\t{key}\t{len(request['files'])}\t"
                f"{mine.estimate:.4f}\t{span(mine, '.4f')}\t{fresh.estimate:.4f}\t"
                f"{span(fresh, '.4f')}\t{ratio.estimate:.3f}\t{span(ratio)}\t"
                f"{'yes' if within else 'NO'}"
            )
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.out is not None:
        args.out.write_text(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
