"""What decides a pipeline's speed in one fresh process?

Runs the same loop (a shipped pipeline built as the workflow builds it, 8 staged images, the same
random draws) in many fresh interpreters of the library's env, one thread (the micro policy), and
records each interpreter's ms per image (the median of its values) and minor page faults per
image. Three arms, alternating
interpreter by interpreter so that they share the machine's minutes:

- ``glibc``: glibc as shipped, as a user's process runs it;
- ``glibc-fixed-layout``: the same, with the address-space layout fixed (``setarch -R``) and one
  hash seed (``PYTHONHASHSEED=0``): if the interpreters then agree, what split them under
  ``glibc`` was where the kernel placed the process's memory, not the machine;
- ``glibc-steady``: the project's steady glibc setting (augbench.policy.ALLOCATOR_ENV).

It prints and writes (``--out``) one line per interpreter, then prints one per arm: the median
over the interpreters with its interval (a bootstrap over them), the fastest and slowest
interpreter, their ratio, the range of faults per image, and the line of ms on faults (its value
at no faults, microseconds per fault, the correlation). ``--summarize FILES --out F``
writes that summary for files this tool wrote.

    uv run python tools/checks/process_speeds.py --library torchvision \
        --pipeline config/pipelines/train_medium.yaml \
        --manifest results/data/default-300-<hash>/manifest.json --interpreters 16 \
        --out docs/results/<machine>/<date>-process-speeds/process_speeds.tsv
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools" / "checks"))

import yaml  # noqa: E402
from compose_vs_rows import LIBRARY_PROBE, fresh_interpreter, staged_files  # noqa: E402

from augbench.intervals import process_median_interval  # noqa: E402
from augbench.measuring import allocator  # noqa: E402
from augbench.workload import pipelines  # noqa: E402

ARMS = ("glibc", "glibc-fixed-layout", "glibc-steady")


def arm_launch(arm: str, prefix: Path) -> tuple[dict[str, str], list[str]]:
    """The environment and the command prefix an interpreter of ``arm`` starts with."""
    setting = "glibc-steady" if arm == "glibc-steady" else allocator.DEFAULT_SETTING
    env = allocator.launch_environment(setting, prefix, os.environ)
    if arm != "glibc-fixed-layout":
        return env, []
    setarch = shutil.which("setarch")
    if setarch is None:
        raise SystemExit("glibc-fixed-layout needs setarch (util-linux); leave it out with --arms")
    return {**env, "PYTHONHASHSEED": "0"}, [setarch, platform.machine(), "-R"]


SUMMARY_HEAD = (
    "machine\tlibrary\tpipeline\tarm\tinterpreters\tmedian_ms\tmedian_ci\tfastest_ms\t"
    "slowest_ms\tslowest_over_fastest\tfaults_per_image_range\tms_at_no_faults\tus_per_fault\t"
    "fit_r"
)


def fault_fit(ms: list[float], faults: list[float]) -> str:
    """The least-squares line of the interpreters' ms per image on their faults per image: its
    value at no faults, its slope in microseconds per fault, and the correlation; empty where
    the faults do not vary (fewer than 3 distinct counts)."""
    if len(set(faults)) < 3:
        return "\t\t"
    slope, intercept = statistics.linear_regression(faults, ms)
    r = statistics.correlation(faults, ms)
    return f"{intercept:.3f}\t{1000.0 * slope:.2f}\t{r:.3f}"


def summary_lines(lines: list[str]) -> list[str]:
    """Per (machine, library, pipeline, arm) of the per-interpreter lines: the median over the
    interpreters with its interval (a bootstrap over them), the fastest and slowest interpreter
    and their ratio, the range of faults per image, and how the speed follows the faults
    (``fault_fit``)."""
    groups: dict[tuple[str, ...], list[tuple[float, float]]] = {}
    for line in lines:
        machine, library, pipeline, arm, _, ms, faults = line.split("\t")
        groups.setdefault((machine, library, pipeline, arm), []).append((float(ms), float(faults)))
    out = [SUMMARY_HEAD]
    for key, items in groups.items():
        ms = [m for m, _ in items]
        faults = [f for _, f in items]
        interval = process_median_interval([[m] for m in ms])
        out.append(
            "\t".join(key) + f"\t{len(items)}\t{interval.estimate:.3f}\t"
            f"[{interval.low:.3f}, {interval.high:.3f}]\t{min(ms):.3f}\t{max(ms):.3f}\t"
            f"{max(ms) / min(ms):.2f}\t{min(faults):.0f}-{max(faults):.0f}\t"
            + fault_fit(ms, faults)
        )
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--library")
    p.add_argument("--pipeline", type=Path, help="a pipeline's YAML file")
    p.add_argument("--manifest", type=Path)
    p.add_argument("--venvs", type=Path, default=ROOT / ".venvs")
    p.add_argument("--images", type=int, default=8)
    p.add_argument("--interpreters", type=int, default=16, help="per arm")
    p.add_argument("--values", type=int, default=3, help="timed values per interpreter")
    p.add_argument("--passes", type=int, default=4, help="passes over the images per value")
    p.add_argument("--arms", default=",".join(ARMS))
    p.add_argument("--machine", default=os.environ.get("AUGBENCH_MACHINE", platform.node()))
    p.add_argument("--out", type=Path, default=None)
    p.add_argument(
        "--summarize",
        nargs="+",
        type=Path,
        default=None,
        help="only summarize these per-interpreter files (this tool's --out) into --out",
    )
    args = p.parse_args()
    if args.summarize:
        lines = [
            line
            for path in args.summarize
            for line in path.read_text().splitlines()[1:]
            if line.strip()
        ]
        text = "\n".join(summary_lines(lines)) + "\n"
        print(text, end="")
        if args.out is not None:
            args.out.write_text(text)
        return 0
    from tqdm import tqdm

    from augbench.measuring.engines.breakdown_passes import round_seeds

    if not (args.library and args.pipeline and args.manifest):
        p.error("--library, --pipeline and --manifest are needed (or --summarize FILES)")

    arms = [a for a in args.arms.split(",") if a]
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        raise SystemExit(f"unknown arm(s) {unknown}; choose from {', '.join(ARMS)}")
    pipeline = pipelines.parse(yaml.safe_load(args.pipeline.read_text()), source=str(args.pipeline))
    python = args.venvs / args.library / "bin" / "python"
    request = {
        "files": staged_files(args.manifest, args.images),
        "passes": args.passes,
        "mask": False,
        "library": args.library,
        "pipeline": pipeline.to_dict(),
        "definition": None,
    }
    warmup_seed, value_seeds = round_seeds(0, args.values)  # the same draws in every interpreter
    request = {**request, "warmup_seed": warmup_seed, "seeds": list(value_seeds)}
    launches = {arm: arm_launch(arm, python.parent.parent) for arm in arms}
    head = "machine\tlibrary\tpipeline\tarm\tinterpreter\tms_per_image\tminor_faults_per_image"
    lines = [head]
    measured: dict[str, list[tuple[list[float], float]]] = {arm: [] for arm in arms}
    bar = tqdm(total=args.interpreters * len(arms), desc="fresh interpreters", unit="process")
    for i in range(args.interpreters):
        for arm in arms[i % len(arms) :] + arms[: i % len(arms)]:  # each arm first equally often
            env, prefix = launches[arm]
            out = fresh_interpreter(python, LIBRARY_PROBE, request, env, prefix)
            ms = [1000.0 * v for v in out["seconds_per_image"]]
            faults = statistics.median(out["minor_faults_per_image"])
            measured[arm].append((ms, faults))
            lines.append(
                f"{args.machine}\t{args.library}\t{pipeline.name}\t{arm}\t{i + 1}\t"
                f"{statistics.median(ms):.4f}\t{faults:.0f}"
            )
            bar.update()
    bar.close()
    print("\n".join(lines))
    summary = summary_lines(lines[1:])
    print("\n".join(summary))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
