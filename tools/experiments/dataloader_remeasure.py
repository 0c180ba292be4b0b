"""Re-measure the cpu_dataloader rows a run flagged, with more paired rounds
(docs/cpu_dataloader.md).

    uv run python tools/experiments/dataloader_remeasure.py RUN_DIR --rounds 10 > remeasured.md

A default run pairs each regime epoch with 2 bare-loop epochs (``baseline_runs``), so one
interrupted epoch moves a row's regime / bare ratio by 10-20 % on a small shared machine. This
script takes the rows of RUN_DIR's tidy table that the summary flags (``baseline_exceptions``:
regime / bare below 0.95, or the cheapest recipe's decode composition below 0.8), re-runs each
flagged (library, scope, workers) setting with the same engine, images and settings as the run
but ``--rounds`` timed epochs and baseline epochs, and prints one markdown row per flagged row:
the run's ratio and its pairs next to the re-measured ratio and its pairs. A flag that holds
with 10 pairs is a finding; one that does not was sampling noise. Runs one job at a time, in the
library's own env (RUN_DIR/.venvs or --envs), with the workflow's thread policy.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from augbench import result_format
from augbench.analysis.dataloader import baseline_exceptions
from augbench.policy import DATALOADER_THREADS

REPO = Path(__file__).resolve().parents[2]


def _result_file(run: Path, machine: str, dataset: str, library: str, setting: str) -> Path:
    folder = run / "results/raw" / machine / dataset / "cpu_dataloader" / library
    (found,) = sorted(folder.glob(f"{setting}-s*.json"))[:1] or [None]
    if found is None:
        raise SystemExit(f"no result file for {library} {setting} under {folder}")
    return found


def remeasure(run: Path, envs: Path, original: Path, rounds: int, out: Path) -> dict:
    """The flagged setting again, with ``rounds`` timed and baseline epochs; its result file."""
    meta = result_format.read(original)["metadata"]
    params = meta["benchmark_params"]
    manifest = run / "results/data" / meta["dataset"]["key"] / "manifest.json"
    cmd = [
        str(envs / meta["library"] / "bin/python"),
        "-m", "augbench.measuring.engines.cpu_dataloader",
        "--library", meta["library"], "--scope", meta["scope"],
        "--workers", str(params["workers"]), "--transforms", ",".join(params["transforms"]),
        "--manifest", str(manifest), "--num-images", str(params["num_images"]),
        "--machine", meta["machine"], "--batch-size", str(params["batch_size"]),
        "--batches-per-run", str(params["batches_per_run"]),
        "--num-runs", str(rounds), "--min-runs", str(rounds), "--baseline-runs", str(rounds),
        "--output", str(out),
    ]  # fmt: skip
    env = {**os.environ, **DATALOADER_THREADS.environment(), "PYTHONPATH": str(REPO)}
    subprocess.run(cmd, check=True, env=env, stderr=subprocess.DEVNULL)
    return result_format.read(out)["results"]


def _pairs(values: object) -> str:
    if not isinstance(values, list) or not values:
        return ""
    return ", ".join(f"{v:.2f}" for v in values)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("run", type=Path, help="a finished run's working directory")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--envs", type=Path, default=None, help="library venvs (default RUN/.venvs)")
    args = p.parse_args()
    envs = args.envs or args.run / ".venvs"
    tidy = pd.read_csv(args.run / "results/tables/all_results.csv", low_memory=False)
    flagged = baseline_exceptions(tidy)
    print(f"{len(flagged)} flagged rows in {args.run}; re-measured with {args.rounds} pairs\n")
    if flagged.empty:
        return 0
    print("| library | scope | workers | recipe | check | run: value (pairs) "
          "| re-measured: value (pairs) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    dataset = tidy["dataset"].dropna().iloc[0]
    with tempfile.TemporaryDirectory() as tmp:
        done: dict[tuple[str, str, int], dict] = {}
        for _, row in flagged.iterrows():
            key = (row["library"], row["scope"], int(row["workers"]))
            setting = f"{key[1]}-w{key[2]}"
            original = _result_file(args.run, row["machine"], dataset, key[0], setting)
            if key not in done:
                out = Path(tmp) / f"{key[0]}-{setting}.json"
                done[key] = remeasure(args.run, envs, original, args.rounds, out)
            before = result_format.read(original)["results"][row["transform"]]
            after = done[key][row["transform"]]
            field = "regime_vs_bare" if row["check"] == "regime_vs_bare" else "decode_composition"
            ratio = field if field == "regime_vs_bare" else "decode_composition_ratio"
            pairs = f"{field}_ratios" if field == "regime_vs_bare" else "decode_composition_ratios"
            print(
                f"| {key[0]} | {key[1]} | {key[2]} | {row['transform']} | {row['check']} "
                f"| {before.get(ratio) or float('nan'):.2f} ({_pairs(before.get(pairs))}) "
                f"| {after.get(ratio) or float('nan'):.2f} ({_pairs(after.get(pairs))}) |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
