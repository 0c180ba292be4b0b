"""How much does the memory allocator's setting move the pipeline rows? Each library's pipeline
breakdown job (the workflow's own engine) run under each allocator setting (glibc as shipped,
glibc-steady, mimalloc from the env's pinned wheel, jemalloc where Debian's package is installed:
augbench.allocator.environment_for), one after the other, alternating the order per round;
prints per library and pipeline the whole pipeline's ms per image, minor page faults per image,
the allocator the job recorded and the ratio to glibc. A setting this machine lacks is named
and left out.

    uv run python tools/experiments/allocator_effect.py \
        --manifest results/data/default-300-<hash>/manifest.json [--rounds 2] [--out FILE.tsv]

The settings are environment variables of the job's process (set before the interpreter
starts, as they must be), exactly what a user sets for a training script.

The workflow itself sweeps the settings over every regime (config ``allocators``, with the
allocator-effect tables and figure); this tool remains for the pipeline breakdowns alone with the
settings alternated round by round, which cancels a drift over the run that a workflow run (each
setting's jobs in the scheduler's order) does not.
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

from augbench import allocator, pipelines  # noqa: E402
from augbench.pipeline_sources import configured  # noqa: E402
from augbench.policy import ALLOCATOR_ENV, PRELOADED_ALLOCATORS  # noqa: E402

LIBRARIES = ("albumentationsx", "torchvision", "kornia", "pillow")


def breakdown(
    library: str, manifest: Path, defs: str, env: dict[str, str], images: int
) -> tuple[dict, str]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
        subprocess.run(
            [str(ROOT / ".venvs" / library / "bin" / "python"), "-m",
             "augbench.engines.pipeline_breakdown", "--library", library, "--manifest",
             str(manifest), "--num-images", str(images), "--machine", "x", "--pipelines", defs,
             "--min-values", "2", "--max-values", "4", "--output", str(out)],
            check=True, capture_output=True, env={**clean, "PYTHONPATH": str(ROOT), **env},
        )  # fmt: skip
        payload = json.loads(out.read_text())
        return payload["results"], allocator.label(payload["metadata"]["allocator"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--manifest", type=Path, required=True)
    p.add_argument("--libraries", nargs="+", default=list(LIBRARIES))
    p.add_argument("--images", type=int, default=12)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    config = {"pipelines": sorted(str(f) for f in (ROOT / "config/pipelines").glob("*.yaml"))}
    defs = pipelines.to_json(configured.from_config(config, ROOT))
    ms: dict[tuple[str, str, str], list[float]] = {}
    faults: dict[tuple[str, str, str], list[float]] = {}
    envs: dict[tuple[str, str], dict[str, str]] = {}
    for library in args.libraries:
        for setting in [*ALLOCATOR_ENV, *PRELOADED_ALLOCATORS]:
            try:
                envs[(library, setting)] = allocator.environment_for(
                    setting, ROOT / ".venvs" / library
                )
            except allocator.Unavailable as exc:
                print(f"{library} {setting}: left out: {exc}", file=sys.stderr)
    recorded: dict[tuple[str, str], str] = {}
    settings = list(dict.fromkeys(setting for _, setting in envs))
    for round_index in range(args.rounds):
        order = settings if round_index % 2 == 0 else settings[::-1]
        for library in args.libraries:
            for setting in order:
                if (library, setting) not in envs:
                    continue
                rows, recorded[(library, setting)] = breakdown(
                    library, args.manifest, defs, envs[(library, setting)], args.images
                )
                for name, row in rows.items():
                    if "step" in row or row.get("status") != "ok":
                        continue
                    key = (library, name, setting)
                    ms.setdefault(key, []).append(1000.0 / row["median_throughput"])
                    faults.setdefault(key, []).append(row["minor_faults_per_image"])
                print(f"round {round_index + 1}: {library} done", file=sys.stderr)
    lines = [
        "library\tpipeline\tsetting\tallocator_recorded\tms_per_image\tminor_faults_per_image"
        "\tvs_glibc"
    ]
    for library, name, setting in sorted(ms):
        value = statistics.median(ms[(library, name, setting)])
        base = statistics.median(ms[(library, name, "glibc")])
        lines.append(
            f"{library}\t{name}\t{setting}\t{recorded[(library, setting)]}\t{value:.3f}\t"
            f"{statistics.median(faults[(library, name, setting)]):.1f}\t{value / base:.3f}"
        )
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
