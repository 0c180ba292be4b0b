"""Does the starvation answer predict a real training loop it was not computed from?

Reads a finished run's cpu_dataloader ``decode`` rows (``--supply``: a run directory; its
recipes, worker counts and batch size are the ones checked), then runs the training regime's own
engine through the workflow's launcher (augbench.planning.provision: the library's env, glibc as
shipped), one job per library, worker count and accelerator, under the allocator setting of the
supply rows it reads (``--allocator``), writing result files beside the supply's as a workflow run
would (``--out``). The accelerators:

- ``sleep`` stand-ins placed around each supply row: for every ratio r of ``--ratios``
  (data / model: 0.5 is data-bound, 1 the crossover, 2 model-bound) a stand-in of supply / r
  img/s, i.e. a sleep of batch / (supply / r) seconds per step;
- ``cpu`` stand-ins (``--cpu-ratios``, the same ratios): a step of batch / (supply / r) seconds
  of the training process's own CPU time, a model that trains on this machine's CPU, sharing
  the cores with the loader's workers, at a rate of the check's choosing;
- the real model on this machine's device (``--models``, e.g. ``resnet18:112``: ResNet-18 at a
  112 px input on the CPU), whose rate the training job measures alone.

Then the product's own analysis (augbench.analysis.training.predicted_vs_measured) predicts
every training row from the supply rows (another job) and the model's rate, and the table is
written to ``--table`` with one line per target: measured / predicted within 0.85-1.15 and the
data wait within 5 points, over the data-bound and crossover rows (the test) and the model-bound
rows (the sanity check).

    uv run python tools/checks/training_out_of_sample.py --supply RUN_DIR --out RUN_DIR \
        --ratios 0.5,0.8,1,1.25,2 --models resnet18:112 \
        --table docs/results/<machine>/<date>-training-check/training.csv

A loader's rate differs between processes more than within one, so one supply row and one
training row are one draw each. ``--supply`` may be given several times (runs of the same
supply command, each its own folder) and ``--repeats K`` runs every training job K times (the
K rounds one after the other, each in ``--out``/repeat-k): the product's table pools the runs of
one setting on both sides (augbench.analysis.training: the median of all their values, the
interval over the runs as processes), and the stand-ins are placed around the pooled supply.

Side by side: this machine's speed drifts by more than the targets over minutes, so a supply run
and training jobs timed a quarter of an hour apart differ by the drift as well. With
``--supply-config`` (the ``--config`` items of the supply's ``snakemake`` command, e.g.
``"regimes=[cpu_dataloader]"``), round k first runs that supply command into
``--out``/supply-k, then training round k: supply and training alternate, S1 T1 S2 T2 ...
(``--supply`` is then not given; the stand-ins are placed around round 1's supply).

    uv run python tools/checks/training_out_of_sample.py --out RUN_DIR --repeats 3 \
        --supply-config "regimes=[cpu_dataloader]" "libraries=[albumentationsx,torchvision]" \
        --ratios 0.5,0.8 --table TABLE.csv
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from augbench.analysis import tidy  # noqa: E402
from augbench.analysis import training as tables  # noqa: E402
from augbench.analysis.cells import is_true  # noqa: E402
from augbench.measuring import allocator  # noqa: E402
from augbench.planning import regimes  # noqa: E402
from augbench.policy import (  # noqa: E402
    DATALOADER_THREADS,
    TRAINING_PREDICTION_TOLERANCE,
    TRAINING_WAIT_TOLERANCE,
)
from augbench.workload import catalog, pipelines  # noqa: E402


def supply_rows(runs: list[Path], setting: str) -> pd.DataFrame:
    files = []
    for run in runs:
        found = sorted(run.glob("results/raw/*/*/cpu_dataloader/*/decode-w*.json"))
        found += sorted(run.glob("results/pipelines/raw/*/*/cpu_dataloader/*/decode-w*.json"))
        if not found:
            sys.exit(f"no cpu_dataloader decode result files under {run}/results")
        files += found
    frame = tidy.load(files)
    rows = tables.supply_rows(frame)
    # The allocator setting asked for, and catalog recipes (a pipeline would need its
    # definition passed on).
    settings = ["", setting] if setting == allocator.DEFAULT_SETTING else [setting]
    rows = rows[rows["allocator_setting"].isin(settings)]
    # Catalog recipes, and the shipped pipelines (their definitions are passed on).
    return rows[rows["transform"].isin([*catalog.CANDIDATES, *shipped_pipelines()])]


def shipped_pipelines() -> dict[str, str]:
    """The shipped pipelines' definitions as the engine's ``--pipelines`` JSON, by name."""
    import yaml

    out = {}
    for path in sorted((ROOT / pipelines.SHIPPED_DIR).glob("*.yaml")):
        pipeline = pipelines.parse(yaml.safe_load(path.read_text()), source=str(path))
        out[pipeline.name] = pipelines.to_json([pipeline])
    return out


def recipe_args(recipes: list[str]) -> list[str]:
    """``--transforms`` for the engine, with ``--pipelines`` where a recipe is a pipeline."""
    defined = shipped_pipelines()
    used = [json.loads(defined[r])[0] for r in recipes if r in defined]
    extra = ["--pipelines", json.dumps(used)] if used else []
    return ["--transforms", ",".join(recipes), *extra]


def manifest_of(run: Path, dataset: str) -> Path:
    found = run / "results/data" / dataset / "manifest.json"
    if not found.exists():
        sys.exit(f"no staged dataset manifest at {found}")
    return found


def run_supply(folder: Path, config: list[str], cores: int, keep: bool = False) -> None:
    """One run of the supply command: the workflow's own cpu_dataloader jobs into ``folder``.
    With ``keep`` (``--keep-existing``) a round whose supply rows exist is left as it is: a
    changed preset or engine would otherwise measure it again, after the training rows that
    came after it."""
    if keep and list(folder.glob("results/raw/*/*/cpu_dataloader/*/decode-w*.json")):
        return
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "snakemake", "--cores", str(cores), "-d", str(folder),
           "--config", *config]  # fmt: skip
    with (folder / "supply.log").open("w") as log:
        done = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        sys.exit(f"the supply run failed: see {folder / 'supply.log'}")


def launch(
    library: str,
    manifest: Path,
    output: Path,
    engine_args: list[str],
    envs: Path,
    setting: str,
) -> None:
    """The training engine through the workflow's launcher, as the rule runs it."""
    env = {**os.environ, **DATALOADER_THREADS.environment(), "PYTHONPATH": str(ROOT)}
    cmd = [
        sys.executable, "-m", "augbench.planning.provision", "--library", library,
        "--allocator", setting, "--manager", "uv",
        "--venv", str(envs / library), "--python", sys.executable,
        "--scratch", str(ROOT / ".scratch"), "--lock", str(ROOT / "envs" / f"{library}.txt"),
        "--archive", str(manifest.parent / "missing.tar"), "--manifest", str(manifest),
        "--", "-m", "augbench.measuring.engines.training", "--library", library,
        "--output", str(output), *engine_args,
    ]  # fmt: skip
    output.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"training job failed ({' '.join(cmd[-12:])}):\n{done.stderr[-3000:]}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--supply",
        type=Path,
        action="append",
        default=[],
        help="a finished run's directory (again for each run of the same supply command)",
    )
    p.add_argument(
        "--supply-config",
        nargs="+",
        default=None,
        help="the supply's snakemake --config items: supply and training rounds alternate",
    )
    p.add_argument("--cores", type=int, default=2, help="snakemake --cores of the supply runs")
    p.add_argument("--repeats", type=int, default=1, help="runs of every training job")
    p.add_argument(
        "--epochs-rate",
        action="store_true",
        help="predict from the supply's epochs' rate, not its steady rate (to compare the two)",
    )
    p.add_argument(
        "--keep-existing",
        action="store_true",
        help="run only the training jobs whose result file is missing (an interrupted check)",
    )
    p.add_argument("--out", type=Path, required=True, help="where the training results go")
    p.add_argument("--ratios", default="0.5,0.8,1,1.25,2", help="data / model of the stand-ins")
    p.add_argument(
        "--cpu-ratios", default="", help="data / model of the cpu:<ms> stand-ins (none: none)"
    )
    p.add_argument("--models", default="", help="comma-separated model:input_px, e.g. resnet18:112")
    p.add_argument("--libraries", default="", help="default: every library of the supply")
    p.add_argument(
        "--workers", default="", help="worker counts to train at (default: the supply's)"
    )
    p.add_argument("--recipes", default="", help="recipes or pipelines (default: the supply's)")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--blocks", type=int, default=5)
    p.add_argument("--envs", type=Path, default=ROOT / ".venvs")
    p.add_argument(
        "--allocator",
        default=allocator.DEFAULT_SETTING,
        help="the allocator setting of the supply rows read and of the training jobs run",
    )
    p.add_argument("--table", type=Path, required=True)
    args = p.parse_args()
    if bool(args.supply) == bool(args.supply_config):
        p.error("give --supply (finished runs) or --supply-config (runs made side by side)")
    alternate = bool(args.supply_config)

    def chosen_supply(runs: list[Path]) -> pd.DataFrame:
        rows = supply_rows(runs, args.allocator)
        if args.workers:
            rows = rows[rows["workers"].isin([int(w) for w in args.workers.split(",")])]
        if args.recipes:
            rows = rows[rows["transform"].isin(args.recipes.split(","))]
        return rows[rows["library"].isin(args.libraries.split(","))] if args.libraries else rows

    if alternate:
        args.supply = [args.out / f"supply-{k}" for k in range(1, args.repeats + 1)]
        run_supply(args.supply[0], args.supply_config, args.cores, args.keep_existing)
        supply = chosen_supply(args.supply[:1])  # the stand-ins are placed around round 1's
    else:
        supply = chosen_supply(args.supply)
    stand_ins = [("sleep", float(r)) for r in args.ratios.split(",") if r]
    stand_ins += [("cpu", float(r)) for r in args.cpu_ratios.split(",") if r]
    models = [m.split(":") for m in args.models.split(",") if m]
    jobs = []
    for (library, dataset, workers, batch), rows in supply.groupby(
        ["library", "dataset", "workers", "batch_size"]
    ):
        machine = str(rows["machine"].iloc[0])
        recipes = sorted(set(rows["transform"]))
        common = [
            "--machine", machine, "--workers", str(int(workers)), "--batch-size",
            str(int(batch)), "--num-images", str(int(rows["num_images"].iloc[0])),
            "--steps", str(args.steps), "--blocks", str(args.blocks),
        ]  # fmt: skip
        suffix = regimes.allocator_suffix(args.allocator)
        # Around the rate the table predicts from: every run of the supply pooled.
        rates = {
            recipe: tables.supply_rate(tables.pooled_supply(rows[rows["transform"] == recipe]))[0]
            for recipe in recipes
        }
        for repeat in range(1, args.repeats + 1):
            out = args.out / f"repeat-{repeat}" if args.repeats > 1 else args.out
            where = out / "results/raw" / machine / dataset / "training" / f"{library}{suffix}"
            for recipe, rate in rates.items():
                for kind, ratio in stand_ins:
                    ms = 1000.0 * batch / (rate / ratio)
                    name = f"r{ratio:g}" if kind == "sleep" else f"{kind}-r{ratio:g}"
                    output = where / f"w{int(workers)}-{recipe}-{name}.json"
                    stand_in = [*recipe_args([recipe]), "--accelerator", f"{kind}:{ms:.2f}"]
                    jobs.append((repeat, library, dataset, output, [*common, *stand_in]))
            for model, size in models:
                output = where / f"w{int(workers)}-{model}-{size}px.json"
                real = [*recipe_args(recipes), "--accelerator", "model", "--model",
                        model, "--cpu-input-size", size, "--device", "cpu"]  # fmt: skip
                jobs.append((repeat, library, dataset, output, [*common, *real]))
    # Round by round: each setting's runs are spread over the whole check, not back to back.
    jobs.sort(key=lambda job: job[0])
    outputs = []
    supplied = 1  # rounds whose supply has run
    for repeat, library, dataset, output, engine_args in tqdm(
        jobs, desc="training jobs", unit="job"
    ):
        if alternate and repeat > supplied:  # supply round k just before training round k
            run_supply(args.supply[repeat - 1], args.supply_config, args.cores, args.keep_existing)
            supplied = repeat
        if not (args.keep_existing and output.exists()):
            manifest = manifest_of(args.supply[0], dataset)
            launch(library, manifest, output, engine_args, args.envs, args.allocator)
        outputs.append((repeat, output))
    if alternate:  # every round's supply, now that all have run
        supply = chosen_supply(args.supply)
    sources = [Path(s) for s in supply["source_file"].unique()]  # every run of the supply
    pooled = with_bounds(
        tables.predicted_vs_measured(loaded([*sources, *(o for _, o in outputs)], args))
    )
    label = f"pooled ({len(args.supply)} supply runs, {args.repeats} training runs)"
    parts = [pooled.assign(pooling=label)] if len(args.supply) > 1 or args.repeats > 1 else []
    if len(args.supply) == args.repeats > 1:
        # Each supply run against one training run: what a single run of each would have said.
        for repeat, run in enumerate(args.supply, start=1):
            own = [s for s in sources if s.is_relative_to(run)]
            mine = [o for r, o in outputs if r == repeat]
            table = with_bounds(tables.predicted_vs_measured(loaded([*own, *mine], args)))
            parts.append(table.assign(pooling=f"supply run {repeat}, training run {repeat}"))
    table = pd.concat(parts, ignore_index=True) if parts else pooled
    args.table.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.table, index=False)
    for pooling, part in table.groupby("pooling", sort=False) if parts else [("", table)]:
        if pooling:
            print(pooling)
        report(part)
    print(json.dumps({"table": str(args.table), "rows": len(table)}))
    predicted = pooled[pooled["predicted_img_per_s"].notna()]
    return 0 if predicted["within_tolerance"].all() else 1


def loaded(files: list[Path], args: argparse.Namespace) -> pd.DataFrame:
    """The result files as the table reads them; with ``--epochs-rate``, without the supply's
    steady rate (the table then predicts from its epochs, as for an older result file)."""
    frame = tidy.load(files)
    if args.epochs_rate:
        frame = frame.drop(columns=[c for c in frame.columns if c.startswith("steady_")])
    return frame


def with_bounds(table: pd.DataFrame) -> pd.DataFrame:
    """The table with ``bound``: data (data / model below 0.95), crossover (to 1.3) or model."""
    table["data_over_model"] = pd.to_numeric(table["data_over_model"], errors="coerce")
    table["bound"] = table["data_over_model"].map(
        lambda r: "data" if r < 0.95 else "crossover" if r <= 1.3 else "model"
    )
    # What stepped: a sleeping stand-in, a CPU stand-in (sharing the cores) or a real model.
    table["step_kind"] = table["variant"].map(
        lambda v: (
            "sleep"
            if str(v).startswith("sleep-")
            else "cpu"
            if str(v).startswith("cpu-")
            else "model"
        )
    )
    return table


def report(table: pd.DataFrame) -> None:
    """One line per bound: how many rows meet both targets, and the range of the ratios."""
    predicted = table[table["predicted_img_per_s"].notna()]
    for (kind, bound), rows in predicted.groupby(["step_kind", "bound"]):
        ratio = rows["measured_vs_predicted"]
        wait = rows["wait_difference"].abs()
        misses = rows[~rows["within_tolerance"].astype(bool)]
        # A miss whose supply faulted beyond its output in some run: its rate depends on the
        # process's allocator history (augbench.analysis.training.pooled_supply).
        bound_misses = int(misses["supply_allocator_bound"].map(is_true).sum())
        # A miss within the prediction's interval is off by no more than its inputs' spread.
        interval_misses = int(misses["within_interval"].map(is_true).sum())
        print(
            f"  {kind} step, {bound}-bound: {int(rows['within_tolerance'].sum())}/{len(rows)} "
            "within "
            f"{TRAINING_PREDICTION_TOLERANCE:.0%} and {TRAINING_WAIT_TOLERANCE:.0%} points; "
            f"measured / predicted {ratio.min():.2f}-{ratio.max():.2f} (median "
            f"{ratio.median():.2f}), wait off by at most {100 * wait.max():.1f} points"
            + (
                f"; {bound_misses} of the {len(misses)} outside with an allocator-bound supply, "
                f"{interval_misses} within the prediction's interval"
                if len(misses)
                else ""
            )
        )


if __name__ == "__main__":
    sys.exit(main())
