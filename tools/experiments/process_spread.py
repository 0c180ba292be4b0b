"""How much does the same pipeline loop differ between fresh processes on this machine?

The spread where no effect is expected: one whole-pipeline row's Compose (from a finished run's
breakdown result files, as ``tools/checks/compose_vs_rows.py`` rebuilds it) timed by the same
plain loop in ``--processes`` fresh interpreters of the library's env, one after another, under
glibc as shipped, one thread. Per pipeline it prints every process's median ms per image, their
range and max / min: what a single process's number can be off by on this machine, before any
harness or allocator setting is involved.

    uv run python tools/experiments/process_spread.py --results RUN/results \
        --manifest RUN/results/data/default-300-*/manifest.json \
        --pipelines albumentationsx:train_heavy,kornia:train_light --processes 8 --out spread.tsv
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools" / "checks"))

from compose_vs_rows import fresh_loop, loop_request, result_files  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--results", nargs="+", type=Path, required=True)
    p.add_argument("--manifest", type=Path, required=True)
    p.add_argument("--pipelines", required=True, help="library:pipeline,...")
    p.add_argument("--venvs", type=Path, default=ROOT / ".venvs")
    p.add_argument("--processes", type=int, default=8)
    p.add_argument("--values", type=int, default=3)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    from augbench import result_format
    from augbench.measuring.engines.breakdown_passes import round_seeds

    wanted = {tuple(item.split(":", 1)) for item in args.pipelines.split(",") if item}
    lines = [
        "machine\tlibrary\tpipeline\timages\tprocesses\tprocess_medians_ms\tmin\tmax\tmax_over_min"
    ]
    for path in result_files(args.results):
        payload = result_format.read(path)  # validated: one line naming the file and field
        meta = payload["metadata"]
        library = meta.get("library", "")
        definitions = {d["name"]: d for d in meta["benchmark_params"].get("pipelines", [])}
        for key, row in payload["results"].items():
            if (library, key) not in wanted or row.get("status") != "ok" or "step" in row:
                continue
            request, probe = loop_request(row, library, definitions[key], args.manifest)
            python = args.venvs / library / "bin" / "python"
            # The same draws in every interpreter: what differs is the process, not the work.
            seeds = [round_seeds(0, args.values)]
            medians = []
            for _ in range(args.processes):  # one at a time, so each is timed alone
                (loop,) = fresh_loop(python, probe, request, seeds)
                medians.append(1000.0 * statistics.median(loop["seconds_per_image"]))
            low, high = min(medians), max(medians)
            lines.append(
                f"{meta.get('machine', '')}\t{library}\t{key}\t{len(request['files'])}\t"
                f"{len(medians)}\t{', '.join(f'{m:.3f}' for m in medians)}\t{low:.3f}\t"
                f"{high:.3f}\t{high / low:.2f}"
            )
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.out is not None:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
