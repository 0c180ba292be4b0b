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
  the row built it (augbench.workload.pipelines, the library's own composition object), images
  decoded by the library's decoder, ``out = call(compose, image)``: only the construction is shared.

Same work on both sides: fresh interpreter j makes the random draws of the row's round j
(``breakdown_passes.round_seeds``: its warm-up's seed, then one seed per timed value, the row's
values per process), so a pipeline with random erasing or noise costs the same draws in both.
It prints, per row, the row's ms per image with its interval, the fresh loop's (median over every
value, interval by a bootstrap over the interpreters), and their ratio with its interval; the
check is that the ratio is within ``--tolerance`` (10 %) of 1. Exit status 1 where a row is not.

Two ways to run it:

- ``--jobs 0`` (the default): the rows as the workflow wrote them, the loops run afterwards.
  This machine's speed drifts by more than 10 % over minutes, so on a shared machine a row and a
  loop timed minutes apart can differ by the drift alone;
- ``--jobs K``: side by side. K times, for each library: the breakdown job again (the engine, with
  the arguments its result file records, into ``--out-dir``), then ``--processes`` fresh
  interpreters for each of its pipelines. The row's side is every process of the K jobs, the
  loop's every interpreter: both sample the same minutes of the machine.

    uv run python tools/checks/compose_vs_rows.py --results results \
        --manifest results/data/default-300-<hash>/manifest.json [--processes 3] \
        [--jobs 4 --out-dir results/checks/compose_vs_rows] [--out FILE.tsv]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from augbench import result_format  # noqa: E402
from augbench.intervals import (  # noqa: E402
    BOOTSTRAP_RESAMPLES,
    LEVEL,
    Interval,
    process_median_interval,
    ratio_interval,
)
from augbench.measuring import allocator  # noqa: E402
from augbench.result_format import MEDIAN_THROUGHPUT  # noqa: E402

ALBUMENTATIONS_PROBE = r"""
import json, random, resource, sys, time
sys.path.insert(0, ROOT)
from augbench.policy import MICRO_THREADS
from augbench.measuring.telemetry import apply_off as apply_telemetry_off
MICRO_THREADS.apply_environment()
apply_telemetry_off()
import cv2
import numpy as np
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


def reseed(seed):  # the random sources the row's process seeds, for the same draws
    random.seed(seed)
    np.random.seed(seed)
    compose.set_random_seed(seed)


reseed(request["warmup_seed"])
for sample in samples:  # warm-up
    out = compose(**sample)["image"]
passes, values, faults = request["passes"], [], []
for seed in request["seeds"]:
    reseed(seed)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    start = time.perf_counter()
    for _ in range(passes):
        for sample in samples:
            out = compose(**sample)["image"]
    images = passes * len(samples)
    values.append((time.perf_counter() - start) / images)
    faults.append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / images)
print(json.dumps({"seconds_per_image": values, "minor_faults_per_image": faults}))
"""

LIBRARY_PROBE = r"""
import json, resource, sys, time
sys.path.insert(0, ROOT)
from augbench.policy import MICRO_THREADS
from augbench.measuring.telemetry import apply_off as apply_telemetry_off
MICRO_THREADS.apply_environment()
apply_telemetry_off()
from augbench.workload import adapters, pipelines
from augbench.measuring import pipeline_builders
request = json.loads(sys.stdin.read())
adapter = adapters.get(request["library"])
adapter.import_library()
MICRO_THREADS.apply_runtime()
from augbench.measuring.engines.breakdown_passes import reseed
from augbench.measuring.engines.pipeline_breakdown import with_input_conversion
pipeline = pipelines.Pipeline.from_dict(request["pipeline"])
units = pipeline_builders.build_units(adapter, pipeline)
whole = pipeline_builders.build_whole(adapter, pipeline, units)
units, whole = with_input_conversion(adapter, pipeline, units, whole)
samples = [
    pipelines.prepare(adapter, pipeline, adapter.decode_8bit(path)) for path in request["files"]
]
compose, call = whole.obj, whole.call
reseed(units, request["warmup_seed"], whole)
for sample in samples:  # warm-up
    out = call(compose, sample)
passes, values, faults = request["passes"], [], []
for seed in request["seeds"]:
    reseed(units, seed, whole)  # the same draws as the row's process of this round
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    start = time.perf_counter()
    for _ in range(passes):
        for sample in samples:
            out = call(compose, sample)
    images = passes * len(samples)
    values.append((time.perf_counter() - start) / images)
    faults.append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / images)
print(json.dumps({"seconds_per_image": values, "minor_faults_per_image": faults}))
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


def loop_request(row: dict, library: str, definition: dict, manifest: Path) -> tuple[dict, str]:
    """What a fresh interpreter needs to loop over a whole-pipeline row's composition (its
    images, passes, mask and definitions), and the probe that runs it: AlbumentationsX rebuilds
    the row's recorded Compose, the other libraries build the row's pipeline definition."""
    request = {
        "files": staged_files(manifest, int(row["num_images"])),
        "passes": int(row.get("passes_per_value") or 1),
        "mask": "mask" in (row.get("pipeline_targets") or []),
        "library": library,
        "pipeline": definition,
        "definition": row.get("compose_definition"),
    }
    own = library == "albumentationsx" and isinstance(request["definition"], dict)
    return request, ALBUMENTATIONS_PROBE if own else LIBRARY_PROBE


def fresh_interpreter(
    python: Path, probe: str, request: dict, env: dict[str, str], prefix: Sequence[str] = ()
) -> dict[str, list[float]]:
    """One fresh interpreter's loop (``request`` with its seeds) in environment ``env``, run
    under ``prefix`` (a command that starts it, if any): its seconds and minor page faults per
    image, by value."""
    run = subprocess.run(
        [*prefix, str(python), "-c", f"ROOT = {str(ROOT)!r}\n{probe}"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return json.loads(run.stdout.strip().splitlines()[-1])


def fresh_loop(
    python: Path, probe: str, request: dict, seeds: Sequence[tuple[int, list[int]]]
) -> list[dict[str, list[float]]]:
    """Seconds and minor faults per image of each value, by fresh interpreter (one per item of
    ``seeds``: the warm-up's seed and the values' seeds), under glibc as shipped."""
    env = allocator.launch_environment(allocator.DEFAULT_SETTING, python.parent.parent, os.environ)
    return [
        fresh_interpreter(
            python, probe, {**request, "warmup_seed": warmup, "seeds": list(values)}, env
        )
        for warmup, values in seeds
    ]


def fault_matched(
    row: Sequence[tuple[float, float]],
    fresh: Sequence[tuple[float, float]],
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> Interval | None:
    """Row against loop at the same faults: the fresh interpreters' (faults, ms) per image give
    a line (least squares), each row process's ms is divided by the line's ms at that process's
    faults, and the median of those ratios is the estimate; the interval is a bootstrap over
    both sides' processes (the line refitted each time). None where the interpreters' faults
    take fewer than 3 distinct values (no line to match on)."""
    import random
    import statistics

    def estimate(rows: Sequence[tuple[float, float]], loop: Sequence[tuple[float, float]]):
        faults, ms = zip(*loop, strict=True)
        if len(set(faults)) < 3:
            return None
        slope, intercept = statistics.linear_regression(faults, ms)
        ratios = [m / (intercept + slope * f) for f, m in rows if intercept + slope * f > 0]
        return statistics.median(ratios) if ratios else None

    point = estimate(row, fresh)
    if point is None:
        return None
    rng = random.Random(seed)
    draws = []
    for _ in range(resamples):
        value = estimate(rng.choices(row, k=len(row)), rng.choices(fresh, k=len(fresh)))
        if value is not None:
            draws.append(value)
    draws.sort()
    tail = (1.0 - LEVEL) / 2.0
    low = draws[int(tail * (len(draws) - 1))]
    high = draws[int((1.0 - tail) * (len(draws) - 1))]
    return Interval(point, low, high, LEVEL, "bootstrap over both sides' processes", len(row))


def row_interval_ms(row: dict) -> Interval:
    """The row's median ms per image with its interval (from its throughput interval)."""
    low, high = row.get("ci_low"), row.get("ci_high")
    return Interval(
        1000.0 / float(row[MEDIAN_THROUGHPUT]),
        1000.0 / float(high) if high else None,
        1000.0 / float(low) if low else None,
        row.get("ci_level"),
        str(row.get("ci_method") or ""),
        int(row.get("num_successful_runs") or 0),
    )


def row_process_ms(row: dict, values_per_process: int) -> list[list[float]]:
    """A whole-pipeline row's ms per image, by the process that measured them (its values are
    stored in process order, ``values_per_process`` each)."""
    values = [1000.0 / float(t) for t in row["throughputs"]]
    step = max(1, values_per_process)
    return [values[i : i + step] for i in range(0, len(values), step)]


def row_process_faults(row: dict, processes: int) -> list[float]:
    """A whole-pipeline row's minor faults per image, by process (NaN for each where the row does
    not record them per process)."""
    faults = row.get("minor_faults_per_image_by_process")
    if isinstance(faults, list) and len(faults) == processes:
        return [float(f) for f in faults]
    return [float("nan")] * processes


def fault_range(faults: Sequence[float]) -> str:
    known = [f for f in faults if f == f]
    return f"{min(known):.0f}-{max(known):.0f}" if known else ""


def rerun_job(path: Path, meta: dict, out: Path, manifest: Path, venvs: Path) -> dict:
    """The breakdown job of a result file once more, with the arguments it records (library,
    pipelines, images, values, warm-ups, slow-transform policy), under glibc as shipped: its
    result payload (also written to ``out``)."""
    library = meta["library"]
    params = meta["benchmark_params"]
    python = venvs / library / "bin" / "python"
    command = [
        str(python), "-m", "augbench.measuring.engines.pipeline_breakdown",
        "--library", library,
        "--pipelines", json.dumps(params["pipelines"]),
        "--manifest", str(manifest),
        "--num-images", str(params["num_images"]),
        "--machine", str(meta.get("machine") or ""),
        "--min-values", str(params["min_values"]),
        "--max-values", str(params["max_values"]),
        "--warmups", str(params["warmups"]),
        "--policy", json.dumps(params.get("slow_transform_policy") or {}),
        "--output", str(out),
    ]  # fmt: skip
    env = allocator.launch_environment(allocator.DEFAULT_SETTING, python.parent.parent, os.environ)
    env["PYTHONPATH"] = str(ROOT)
    out.parent.mkdir(parents=True, exist_ok=True)
    run = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    if run.returncode != 0 or not out.exists():
        tail = (run.stderr or run.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"the {library} breakdown job of {path} failed: {tail[0]}")
    return json.loads(out.read_text())


def span(interval: Interval, fmt: str = ".3f") -> str:
    if interval.low is None or interval.high is None:
        return ""
    return f"[{interval.low:{fmt}}, {interval.high:{fmt}}]"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--results", nargs="+", type=Path, required=True)
    p.add_argument("--manifest", type=Path, required=True)
    p.add_argument("--venvs", type=Path, default=ROOT / ".venvs")
    p.add_argument("--processes", type=int, default=3, help="fresh interpreters per row and job")
    p.add_argument("--jobs", type=int, default=0, help="side by side: the breakdown job K times")
    p.add_argument("--out-dir", type=Path, default=ROOT / "results/checks/compose_vs_rows")
    p.add_argument("--tolerance", type=float, default=0.10)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    from tqdm import tqdm

    # Imported here: the engine module sets the micro thread policy's variables on import,
    # which the interpreters this starts set for themselves anyway.
    from augbench.measuring.engines.breakdown_passes import round_seeds

    head = (
        "malloc_env\tmachine\tlibrary\tpipeline\timages\tjobs\trow_processes\t"
        "row_ms_per_image\trow_ci\tfresh_interpreters\tfresh_loop_ms_per_image\tfresh_ci\t"
        "ratio\tratio_ci\twithin\trow_faults_per_image\tfresh_faults_per_image\toutput_pages\t"
        "ratio_at_equal_faults\tratio_at_equal_faults_ci\twithin_at_equal_faults"
    )
    lines = [head]
    failed = False
    templates = []
    for path in result_files(args.results):
        payload = result_format.read(path)  # validated: one line naming the file and field
        setting = payload["metadata"].get("allocator_setting") or allocator.DEFAULT_SETTING
        if setting == allocator.DEFAULT_SETTING:  # the rows glibc as shipped publishes
            templates.append((path, payload))
    # Per (library, pipeline): the row's processes and the interpreters' values, pooled.
    rows: dict[tuple[str, str], dict] = {}
    repeats = max(1, args.jobs)
    bar = tqdm(total=repeats * len(templates), desc="compose vs rows", unit="job")
    for repeat in range(repeats):
        for path, template in templates:
            meta = template["metadata"]
            library = meta.get("library", "")
            bar.set_postfix_str(f"{library} {repeat + 1}/{repeats}")
            payload = template
            if args.jobs > 0:
                out = args.out_dir / f"{library}-{repeat + 1}.json"
                payload = rerun_job(path, meta, out, args.manifest, args.venvs)
            per_process = int(payload["metadata"]["benchmark_params"]["values_per_process"])
            seeds = [round_seeds(j, per_process) for j in range(args.processes)]
            definitions = {d["name"]: d for d in meta["benchmark_params"].get("pipelines", [])}
            python = args.venvs / library / "bin" / "python"
            for key, row in payload["results"].items():
                if row.get("status") != "ok" or "step" in row or key not in definitions:
                    continue
                request, probe = loop_request(row, library, definitions[key], args.manifest)
                entry = rows.setdefault(
                    (library, key),
                    {"machine": meta.get("machine", ""), "images": len(request["files"]),
                     "row": [], "fresh": [], "row_faults": [], "fresh_faults": [],
                     "published": row, "output_pages": row.get("output_pages")},
                )  # fmt: skip
                processes = row_process_ms(row, per_process)
                entry["row"] += processes
                entry["row_faults"] += row_process_faults(row, len(processes))
                for loop in fresh_loop(python, probe, request, seeds):
                    entry["fresh"].append([1000.0 * v for v in loop["seconds_per_image"]])
                    entry["fresh_faults"].append(median(loop["minor_faults_per_image"]))
            bar.update()
    bar.close()
    for (library, key), entry in rows.items():
        fresh = process_median_interval(entry["fresh"])
        mine = (
            process_median_interval(entry["row"])
            if args.jobs > 0
            else row_interval_ms(entry["published"])
        )
        ratio = ratio_interval(mine, fresh)
        within = abs(ratio.estimate - 1.0) <= args.tolerance
        # Under glibc as shipped each process faults as its address layout makes it
        # (docs/allocator.md); where some process of either side faulted beyond the output, the
        # row is also compared with the loop at the same faults.
        matched, matched_within = None, ""
        pages = float(entry["output_pages"] or "nan")
        every = [*entry["row_faults"], *entry["fresh_faults"]]
        if any(f > pages for f in every if f == f) and all(f == f for f in every):
            by_row = zip(entry["row_faults"], entry["row"], strict=True)
            by_loop = zip(entry["fresh_faults"], entry["fresh"], strict=True)
            matched = fault_matched(
                [(f, median(g)) for f, g in by_row], [(f, median(g)) for f, g in by_loop]
            )
        if matched is not None:
            matched_within = "yes" if abs(matched.estimate - 1.0) <= args.tolerance else "NO"
        failed |= not within and matched_within != "yes"
        lines.append(
            f"glibc as shipped\t{entry['machine']}\t{library}\t{key}\t{entry['images']}\t"
            f"{args.jobs}\t{len(entry['row'])}\t{mine.estimate:.4f}\t{span(mine, '.4f')}\t"
            f"{len(entry['fresh'])}\t{fresh.estimate:.4f}\t{span(fresh, '.4f')}\t"
            f"{ratio.estimate:.3f}\t{span(ratio)}\t{'yes' if within else 'NO'}\t"
            f"{fault_range(entry['row_faults'])}\t{fault_range(entry['fresh_faults'])}\t"
            f"{entry['output_pages'] or ''}\t"
            + (f"{matched.estimate:.3f}\t{span(matched)}" if matched is not None else "\t")
            + f"\t{matched_within}"
        )
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.out is not None:
        args.out.write_text(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
