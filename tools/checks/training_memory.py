#!/usr/bin/env python3
"""Check the training jobs' memory as planned for the machine that ran them
(augbench.planning.memory, regimes.training.training_memory with ``Sweep.host_gpu`` from this
machine's NVIDIA driver, as the workflow plans a local run) against their Snakemake benchmarks
(``max_pss``: DataLoader workers share their parent's pages, counted once in a PSS sum).

    uv run python tools/checks/training_memory.py --run RUN [--configfile FILE] \
        [--config key=value ...] --output docs/results/<machine>/<run>/training-memory.tsv

One row per training job of RUN: its rows' statuses, the predicted ``mem_mb``, the measured
``max_pss`` and their ratio (the target: predicted >= measured and <= 2x it). RUN must be a
finished workflow run on this machine, with the configuration given as it was run.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from augbench import cuda_env  # noqa: E402
from augbench.planning import memory, regimes  # noqa: E402
from augbench.planning.config import deep_merge, resolve  # noqa: E402
from augbench.planning.sweep import Sweep  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", type=Path, required=True)
    p.add_argument("--configfile", type=Path, default=None)
    p.add_argument("--config", nargs="*", default=[])
    p.add_argument("--output", type=Path, required=True)
    args = p.parse_args()
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    if args.configfile:
        config = deep_merge(config, yaml.safe_load(args.configfile.read_text()))
    for item in args.config:  # key=value, the value in YAML as Snakemake's --config reads it
        key, _, value = item.partition("=")
        config = deep_merge(config, {key: yaml.safe_load(value)})
    config = resolve(config, ROOT)
    kind = regimes.KINDS["training"]
    host_gpu = cuda_env.has_driver()
    plans: dict[tuple[str, str], Sweep] = {}
    rows = []
    for bench in sorted((args.run / "benchmarks").glob("*/*/training/*/*.tsv")):
        machine, dataset, _, library, name = bench.parts[-5:]
        result = f"results/raw/{machine}/{dataset}/training/{library}/{name[:-4]}.json"
        found = kind.wildcards_of(result)
        if found is None:
            continue
        if (machine, dataset) not in plans:  # planned as the workflow plans a local run
            plans[machine, dataset] = Sweep({**config, "machine": machine}, dataset)
            plans[machine, dataset].host_gpu = host_gpu
        plan = plans[machine, dataset]
        wildcards = {**found, "library": regimes.split_allocator(found["library"])[0]}
        predicted = memory.predict(kind.memory(plan, kind, wildcards)).mem_mb
        with bench.open(newline="") as fh:
            measured = float(next(csv.DictReader(fh, delimiter="\t"))["max_pss"])
        # A job whose rows are not ok (e.g. unsupported at once) holds little: say so.
        written = args.run / result
        statuses = (
            sorted(
                {r.get("status", "") for r in json.loads(written.read_text())["results"].values()}
            )
            if written.is_file()
            else ["no result file"]
        )
        rows.append({
            "library": found["library"], "job": name[:-4], "rows": "/".join(statuses),
            "host_gpu": plan.host_gpu,
            "predicted_mem_mb": predicted, "measured_max_pss_mb": round(measured),
            "mem_over_pss": round(predicted / measured, 2),
        })  # fmt: skip
    if not rows:
        sys.exit(f"no training benchmark under {args.run}/benchmarks")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with args.output.open("w", newline="") as fh:
        out = csv.DictWriter(fh, fieldnames=list(rows[0]), delimiter="\t")
        out.writeheader()
        out.writerows(rows)
    ratios = [r["mem_over_pss"] for r in rows if r["rows"] == "ok"]
    print(
        f"{len(rows)} training jobs, {len(ratios)} with ok rows: mem_mb / max_pss "
        f"{min(ratios, default=0):.2f}-{max(ratios, default=0):.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
