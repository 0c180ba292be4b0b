"""Does the micro harness add overhead to what it times? Workflow vs a bare loop, side by side.

    uv run python tools/experiments/harness_overhead.py --library albumentationsx \
        --transforms HorizontalFlip,GaussianBlur,Affine \
        --manifest results/data/default-300/manifest.json

Alternates (``--rounds`` times) between
  (a) the workflow's own measuring process, run as a micro job runs it
      (augbench/measuring/engines/micro_worker.py: one pyperf worker timing every listed transform
      in turn, cached media), and
  (b) a bare loop written out here: the same library call on the same decoded images, timed with
      time.perf_counter, in a fresh process per transform with the same single-thread
      environment,
and prints the median throughput of each and their ratio. Alternating in one run keeps machine
noise (a shared 2-core VM here) from landing on one side only. Run with the driver's Python; the
library's interpreter comes from --python (default: .venvs/<library>/bin/python).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from augbench.policy import MICRO_THREADS, SlowTransformPolicy  # noqa: E402

BARE_LOOP = r"""
import json, pickle, sys, time
from augbench.workload import adapters, catalog
from augbench.policy import MICRO_THREADS
library, name, cache, passes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
adapter = adapters.get(library)
adapter.import_library()
MICRO_THREADS.apply_runtime()
with open(cache, "rb") as fh:
    images = [adapter.from_array(a) for a in pickle.load(fh)]
spec = catalog.get(name)
transform = adapter.build(name, spec.params)
materialize = adapter.materialize
for image in images:  # one warm-up pass, as pyperf's warmup does
    materialize(transform(image), image)
rates = []
for _ in range(passes):
    start = time.perf_counter()
    for image in images:
        materialize(transform(image), image)
    rates.append(len(images) / (time.perf_counter() - start))
print(json.dumps(rates))
"""


def workflow_rates(
    python: str, library: str, names: list[str], cache: Path, values: int, layout: str = "native"
) -> dict[str, float]:
    """Median img/s per transform from one of the workflow's own measuring processes, run as a
    micro job runs it: one pyperf worker timing every transform in turn (micro_worker.py)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        cmd = [
            python, str(ROOT / "augbench/measuring/engines/micro_worker.py"),
            "--worker", "--loops", "1", "--warmups", "1", "--values", str(values), "--quiet",
            "--library", library, "--transforms", ",".join(names), "--cache", str(cache),
            "--out-dir", str(out), "--progress", str(out / "progress"), "--layout", layout,
            "--policy", json.dumps(SlowTransformPolicy(enabled=False).to_dict()),
        ]  # fmt: skip
        subprocess.run(cmd, check=True, env=_env(), capture_output=True)
        rates = {}
        for name in names:
            run_file = out / f"{name}.pyperf.json"
            if not run_file.exists():
                info = json.loads((out / f"{name}.info.json").read_text())
                raise RuntimeError(f"{library}:{name} did not measure: {info}")
            # pyperf's JSON: values are seconds per image (divided by loops x inner loops).
            bench = json.loads(run_file.read_text())["benchmarks"][0]
            per_image = [v for run in bench["runs"] for v in run.get("values", [])]
            rates[name] = statistics.median(1.0 / v for v in per_image)
    return rates


def run_bare_loop(python: str, library: str, name: str, cache: Path, passes: int) -> float:
    cmd = [python, "-c", BARE_LOOP, library, name, str(cache), str(passes)]
    out = subprocess.run(cmd, check=True, env=_env(), capture_output=True, text=True).stdout
    return statistics.median(json.loads(out.strip().splitlines()[-1]))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(MICRO_THREADS.environment())
    env["PYTHONPATH"] = str(ROOT)
    return env


def build_cache(python: str, library: str, manifest: Path, n: int, cache: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from augbench.workload import adapters; "
        "from augbench.measuring import media;"
        "a = adapters.get(sys.argv[1]);"
        "media.build_cache(a, media.select_files(Path(sys.argv[2]), int(sys.argv[3])),"
        " Path(sys.argv[4]))"
    )
    cmd = [python, "-c", code, library, str(manifest), str(n), str(cache)]
    subprocess.run(cmd, check=True, env=_env())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--library", required=True)
    p.add_argument("--transforms", required=True)
    p.add_argument("--manifest", type=Path, required=True)
    p.add_argument("--num-images", type=int, default=100)
    p.add_argument("--values", type=int, default=5, help="timed passes per side per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--python", default=None)
    p.add_argument("--json-out", type=Path, default=None)
    args = p.parse_args()
    python = args.python or str(ROOT / ".venvs" / args.library / "bin" / "python")

    report = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "media.pkl"
        build_cache(python, args.library, args.manifest, args.num_images, cache)
        names = args.transforms.split(",")
        workflow: dict[str, list[float]] = {name: [] for name in names}
        bare: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(args.rounds):
            rates = workflow_rates(python, args.library, names, cache, args.values)
            for name, rate in rates.items():
                workflow[name].append(rate)
            for name in names:
                bare[name].append(run_bare_loop(python, args.library, name, cache, args.values))
        for name in names:
            ratios = [w / b for w, b in zip(workflow[name], bare[name], strict=True)]
            entry = {
                "library": args.library,
                "transform": name,
                "workflow_img_s": statistics.median(workflow[name]),
                "bare_loop_img_s": statistics.median(bare[name]),
                "ratio_per_round": ratios,
                "ratio_median": statistics.median(ratios),
            }
            report.append(entry)
            print(
                f"{args.library:16s} {name:18s} workflow {entry['workflow_img_s']:9.1f} img/s  "
                f"bare {entry['bare_loop_img_s']:9.1f} img/s  ratio {entry['ratio_median']:.3f}  "
                f"(rounds: {', '.join(f'{r:.3f}' for r in ratios)})",
                flush=True,
            )
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
