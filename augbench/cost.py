"""Time and cost of a sweep, from the per-job times of a finished (smaller) local run.

One per-job time model, used by the cloud estimate (rule ``cost``, docs/cloud.md), the plan's ETA
(augbench.plan) and the validation run (tools/checks/cost_validation.py). The jobs it prices come
from the same place the rules do (``augbench.sweep.Sweep.cost_jobs``): every timed job with its
engine flags, the mean megapixels of the images it holds and its predicted memory; plus the
setup jobs. How a job kind is priced is its declaration's ``cost`` (augbench/regimes.py):

- ``pyperf`` (micro): per transform, the passes it makes (warm-up + values, per pyperf process;
  each value at least ``policy.MICRO_MIN_VALUE_SECONDS``) x the job's images x seconds per image;
  processes *expected* = the share of its maximum the local rows used (rows stop once precise),
  *max* = every process allowed. Each process imports the library again: the job's fixed
  overhead is paid per process round.
- ``dataloader``: per recipe, the epochs of each arm the job interleaves (the regime's loader;
  while baselines run, the bare loop, and in the decode scope the memory companion and the
  decode floor) x images per epoch / that arm's measured rate at the same setting (scope,
  workers); epochs *expected* from the local rows' early stopping, *max* = num_runs.
- ``stream`` (GPU DataLoader, DALI): images x (warm-ups + values) per recipe; the GPU kinds on a
  machine without CUDA use ``cloud.assumed_img_per_s`` (labelled ``assumed``).
- ``breakdown`` (pipeline breakdown): per pipeline, warm-up pairs plus values in pairs (steps
  pass and whole pass) of ``passes x images`` each; values expected from the local rows. Each round
  runs in an interpreter of its own (the first in the job's process): the fixed overhead is paid
  per round.
- ``training``: per recipe and feed, the engine's three passes (augbench.engines.training,
  counted by augbench.stopping.training_counts and model_alone_counts): the step alone (its
  warm-up and model steps), the loader alone, and warm-up + timed steps of the loop, whose rate
  is the starvation model's prediction (augbench.starvation_model.predict) from the loader's
  measured seconds per image at that setting and the step's (a ``sleep:<ms>`` stand-in's own;
  a model's measured per accelerator, model name and device, else the measured loop's rate),
  all counts from the job's own flags.
- ``whole_job``: a fixed amount of work: its measured wall time.

A transform's seconds per image scale with pixels: measured at the local dataset's mean
megapixels, priced at the job's (``Job.megapixels``: the resolution sweep's jobs). A transform
that the slow-transform policy would stop at the job's size costs its preflight only. A
transform without a local row costs its library's median; a library without any row has no
model: reported, never dropped. Target machines differ from the local one by a per-core ``speed
factor`` (config ``cloud.speed_factors``), and each VM job pays ``cloud.vm_start_s`` of start-up;
jobs that the profile groups (``groups`` / ``group-components``) share one VM and its start-up.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from augbench import adapters, matrix, regimes
from augbench.policy import (
    BREAKDOWN_VALUES_PER_PROCESS,
    DATALOADER_MIN_RUNS,
    MAIN_PROCESS_CORES,
)
from augbench.regimes import Job
from augbench.stopping import (
    BREAKDOWN_KINDS,
    breakdown_passes,
    breakdown_value_bounds,
    epoch_batches,
    model_alone_counts,
    passes_per_value,
    training_counts,
)

# Rule names come from the declarations (augbench/regimes.py): a new job kind is priced, or
# reported as unpriced, without any change here.
SETUP_KINDS = regimes.SETUP_RULES
ANALYSIS_KINDS = regimes.ANALYSIS_RULES
# Without a local timing, a setup job is assumed to take this long (seconds; printed as assumed).
ASSUMED_SETUP_S = 60.0
# Tables, figures and report pieces after the benchmarks: the local ETA counts them (timed by their
# benchmark files benchmarks/analysis/.../<rule>.tsv; without one, assumed); the cloud estimate runs
# them on the driver and leaves them out.
ASSUMED_ANALYSIS_S = 15.0
# The arms of a DataLoader job and the row fields holding each arm's per-epoch rates.
DATALOADER_ARMS = {
    "regime": "throughputs",
    "bare": "bare_loop_throughputs",
    "memory": "memory_row_throughputs",
    "floor": "decode_floor_throughputs",
}


def bench_kinds() -> tuple[str, ...]:
    """Rules priced per transform from their result rows."""
    return tuple(k.rule for k in regimes.kinds() if k.cost != "whole_job")


def whole_job_kinds() -> tuple[str, ...]:
    """Rules priced by their measured wall time per library (a fixed amount of work each: the
    lazy-output diagnostic)."""
    return tuple(k.rule for k in regimes.kinds() if k.cost == "whole_job")


def setting_of(row: Mapping[str, Any], params: Mapping[str, Any]) -> str:
    """The loader setting a row was measured at (``memory-w2``), '' where the kind has none."""
    scope = row.get("scope") or params.get("scope")
    workers = row.get("workers", params.get("workers"))
    return f"{scope}-w{workers}" if scope and workers is not None else ""


# -- the jobs a plan prices: augbench.regimes.Job, the plan's own record (Sweep.cost_jobs) ------


@dataclass
class KindModel:
    """Per-job model of one (kind, library), learned from a local run."""

    per_image_s: dict[str, float] = field(default_factory=dict)  # transform -> s/image
    overhead_s: float = 0.0
    basis: str = "measured"
    # micro: pyperf processes a row used / the most it was allowed (rows stop once their CI
    # reaches the target), so a plan expects that share of its own maximum.
    process_share: float = 1.0
    # The mean megapixels of the images each transform was measured on, and how its seconds per
    # image grow with pixels (the exponent of a power law fitted over the local run's datasets,
    # 1.0 where it measured one size only).
    megapixels: dict[str, float] = field(default_factory=dict)
    slope: dict[str, float] = field(default_factory=dict)
    # micro: seconds a process round adds per megapixel the job holds (its decoded cache
    # loaded, converted, on the first round decoded), on top of overhead_s.
    overhead_per_mp_s: float = 0.0
    # DataLoader kinds: "<transform>|<setting>|<arm>" -> s/image, and the share of num_runs the
    # rows used; breakdown: the share of max_values.
    arm_s: dict[str, float] = field(default_factory=dict)
    run_share: float = 1.0
    # DataLoader kinds: the job's own baselines (the transport baseline), s/image per setting.
    baseline_s: dict[str, float] = field(default_factory=dict)
    # resize_dataset: seconds per megapixel read and written (decode, Lanczos, JPEG encode).
    per_megapixel_s: float = 0.0
    # Whether the local rows could stop early (their maximum above their minimum): otherwise the
    # shares above say nothing and are borrowed (borrow_shares) or left at the maximum.
    share_observed: bool = False
    # DataLoader kinds whose results record job_timing: a process's fixed cost (start, imports)
    # and each setting's beyond its rows (loaders, workers, baselines' set-up, preloading).
    process_s: float = 0.0
    setting_s: dict[str, float] = field(default_factory=dict)
    # DataLoader kinds: the usable cores of the machine the rows were measured on (0: unknown),
    # so a worker count is priced for the cores of the machine it will run on (_arm_seconds).
    cores: int = 0
    # training: the step's seconds per image, per "<accelerator>|<model>|<device>" (a real
    # model's; device cpu or cuda).
    step_s: dict[str, float] = field(default_factory=dict)
    # DataLoader kinds with sized epochs (--window-seconds): "<transform>|<setting>" -> images per
    # timed epoch the rows used. The engine sizes them from each row's preflight
    # (augbench.stopping.window_batches), which the plan does not know before the run.
    epoch_images: dict[str, float] = field(default_factory=dict)
    # DataLoader kinds with fresh processes (--processes): a later process's seconds beyond its
    # timed epochs (its interpreter, imports, items, and each row's loader start and warm-up).
    later_process_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "per_image_s": self.per_image_s, "overhead_s": self.overhead_s,
            "process_share": self.process_share, "megapixels": self.megapixels,
            "arm_s": self.arm_s, "run_share": self.run_share, "baseline_s": self.baseline_s,
            "per_megapixel_s": self.per_megapixel_s, "process_s": self.process_s,
            "setting_s": self.setting_s, "share_observed": self.share_observed,
            "slope": self.slope, "overhead_per_mp_s": self.overhead_per_mp_s,
            "cores": self.cores, "step_s": self.step_s, "epoch_images": self.epoch_images,
            "later_process_s": self.later_process_s,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> KindModel:
        return cls(
            dict(entry["per_image_s"]), float(entry["overhead_s"]),
            process_share=float(entry.get("process_share", 1.0)),
            megapixels=dict(entry.get("megapixels", {})), arm_s=dict(entry.get("arm_s", {})),
            run_share=float(entry.get("run_share", 1.0)),
            baseline_s=dict(entry.get("baseline_s", {})),
            per_megapixel_s=float(entry.get("per_megapixel_s", 0.0)),
            process_s=float(entry.get("process_s", 0.0)),
            setting_s=dict(entry.get("setting_s", {})),
            share_observed=bool(entry.get("share_observed", entry.get("process_share", 1.0) < 1)),
            slope=dict(entry.get("slope", {})),
            overhead_per_mp_s=float(entry.get("overhead_per_mp_s", 0.0)),
            cores=int(entry.get("cores", 0)),
            step_s=dict(entry.get("step_s", {})),
            epoch_images=dict(entry.get("epoch_images", {})),
            later_process_s=float(entry.get("later_process_s", 0.0)),
        )  # fmt: skip

    def seconds_per_image(self, transform: str, megapixels: float = 0.0) -> float:
        """Seconds per image of ``transform`` (the library's median where it has no row), scaled
        from the pixels it was measured at to ``megapixels`` (when both are known) by its
        fitted exponent."""
        typical = statistics.median(self.per_image_s.values())
        seconds = self.per_image_s.get(transform, typical)
        measured = self.megapixels.get(transform) or _median(self.megapixels.values())
        slope = self.slope.get(transform, 1.0)
        return seconds * (megapixels / measured) ** slope if megapixels and measured else seconds


def _median(values: Any) -> float:
    values = [v for v in values if v]
    return statistics.median(values) if values else 0.0


def _benchmark_seconds(tsv: Path) -> float | None:
    row = benchmark_row(tsv)
    return float(row["s"]) if row else None


def benchmark_row(tsv: Path) -> dict[str, str] | None:
    """The row of a Snakemake benchmark file (s, max_rss, max_pss, ...), None if absent."""
    try:
        with tsv.open() as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
    except OSError:
        return None
    return rows[0] if rows else None


# -- images a measured row processed, and the work it took -----------------------------------
def micro_row_images(row: Mapping[str, Any], params: Mapping[str, Any]) -> float | None:
    """Images a micro row actually processed, where it records how (pyperf processes and loops:
    rows stop early and fast transforms repeat passes); None for older result files."""
    if "pyperf_processes" not in row or "loops" not in row:
        return None
    passes = (params["values"] + params["warmups"]) * row["pyperf_processes"] * row["loops"]
    return params["num_images"] * passes


def dataloader_row_work(row: Mapping[str, Any], params: Mapping[str, Any]) -> float:
    """Seconds of the epochs a DataLoader row timed, every arm (its rates' lists; a row measured
    in several processes lists every process's epochs, each of its own ``images_per_run``)."""
    per_epoch = row.get("images_per_run") or params["images_per_run"]
    rates = [r for name in DATALOADER_ARMS.values() for r in row.get(name) or [] if r]
    return sum(per_epoch / rate for rate in rates)


def breakdown_row_work(row: Mapping[str, Any], params: Mapping[str, Any]) -> float:
    """Seconds of a breakdown row's passes: every kind's processes, warm-ups included
    (augbench.stopping.breakdown_passes, the engine's own count)."""
    images = row.get("num_images", params["num_images"]) * row.get("passes_per_value", 1)
    per = params.get("values_per_process", BREAKDOWN_VALUES_PER_PROCESS)
    passes = breakdown_passes(len(row.get("throughputs") or []), params.get("warmups", 1), per)
    return len(BREAKDOWN_KINDS) * passes * images / row["median_throughput"]


def training_row_work(row: Mapping[str, Any], params: Mapping[str, Any]) -> float:
    """Seconds of a training row's three passes (augbench.engines.training.measure_feed): the
    step alone, the loader alone and the loop's warm-up and timed steps."""
    batch = row.get("batch_size") or params["batch_size"]
    step = (row.get("model_step_ms") or 0.0) / 1000.0
    rate = row.get("loader_img_per_s")
    loader = row.get("loader_batches", 0) * batch / rate if rate else 0.0
    steps = row.get("warmup_iterations", 0) + row.get("timed_steps", params.get("steps", 0))
    return (
        # The step alone's warm-up as the row records it (rows without the field took one).
        ((row.get("model_warmup_steps") or 1) + params.get("model_steps", 0)) * step
        + loader
        + steps * batch / row["median_throughput"]
    )


def row_work(kind: str, row: Mapping[str, Any], params: Mapping[str, Any]) -> float:
    model = regimes.KINDS[kind].cost
    if model == "training":
        return training_row_work(row, params)
    if model == "pyperf":
        # Older result files without processes and loops per row: every process allowed.
        most = params["num_images"] * params["processes"] * (params["values"] + params["warmups"])
        return (micro_row_images(row, params) or most) / row["median_throughput"]
    if model == "dataloader":
        return dataloader_row_work(row, params)
    if model == "breakdown":
        return breakdown_row_work(row, params)
    return stream_images(params) / row["median_throughput"]


def stream_images(params: Mapping[str, Any]) -> float:
    """Images one recipe streams in a GPU DataLoader or DALI job: warm-ups and values."""
    return params["num_images"] * (params.get("values", 1) + params.get("warmups", 0))


# -- learning from a local run --------------------------------------------------------------
Key = tuple[str, str]  # (kind, library)


def _result_files(run_dir: Path) -> list[tuple[Path, Path, str]]:
    """(result file, its job's benchmark file, rule) of every timed kind that writes rows, by
    the kinds' declared result and log patterns (a job_per: library job's one benchmark file
    is named after the job)."""
    out = []
    for root in ("results/raw", "results/pipelines/raw"):
        for path in sorted((run_dir / root).glob("**/*.json")):
            found = regimes.kind_of_result(str(path.relative_to(run_dir)))
            if found is None:
                continue
            kind, wildcards = found
            bench = run_dir / kind.log_file("benchmarks", "tsv").format(**wildcards)
            out.append((path, bench, kind.rule))
    return out


def run_dataset_images(run_dir: Path) -> int | None:
    """Images of a finished run's dataset (the median over its manifests: the resolution
    sweep's datasets hold the same images resized), what dataset setup jobs scale from."""
    counts = []
    for manifest in run_dir.glob("results/data/*/manifest.json"):
        try:
            counts.append(int(json.loads(manifest.read_text())["file_count"]))
        except (OSError, ValueError, KeyError):
            continue
    return int(statistics.median(counts)) if counts else None


def learn(run_dir: Path) -> dict[tuple[str, str], KindModel]:
    """(kind, library) -> model, from the result files of a finished local run and the matching
    Snakemake benchmark files (benchmarks/<machine>/<dataset>/[pipelines/]<regime>/<library>/
    <job>.tsv). Setup kinds are keyed (kind, "") and learned from benchmarks/setup/<kind>/*.tsv."""
    per_image: dict[Key, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    pixels: dict[Key, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    arms: dict[Key, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    baselines: dict[Key, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    overheads: dict[Key, list[tuple[float, float]]] = defaultdict(list)  # (MP held, s)
    shares: dict[tuple[str, str], list[float]] = defaultdict(list)
    run_shares: dict[tuple[str, str], list[float]] = defaultdict(list)
    epochs: dict[Key, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    laters: dict[Key, list[float]] = defaultdict(list)
    observed: set[Key] = set()
    stopped: dict[Key, dict[str, list[tuple[float, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    jobs: dict[Path, list[tuple[Key, float, int, float]]] = defaultdict(list)
    # DataLoader result files with job_timing: (key, setting, work, setting s, import s).
    timed: dict[Path, list[tuple[Key, str, float, float, float]]] = defaultdict(list)
    processes: dict[Key, list[float]] = defaultdict(list)
    settings: dict[Key, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    cores: dict[Key, list[int]] = defaultdict(list)
    steps: dict[Key, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for path, bench, kind in _result_files(run_dir):
        if regimes.KINDS[kind].cost == "whole_job":
            continue
        library = path.parts[-2]
        timing = None  # a DataLoader file's job_timing, where it records one
        try:
            payload = json.loads(path.read_text())
            params = payload["metadata"]["benchmark_params"]
            dataset = payload["metadata"].get("dataset") or {}
            megapixels = float(dataset.get("mean_megapixels") or 0)
            model = regimes.KINDS[kind].cost
            key = (kind, library)
            work = 0.0
            held = params.get("num_images", 0) * megapixels
            for transform, row in payload["results"].items():
                # A preflight is measured time outside the timed runs (a stopped row's only).
                work += row.get("preflight_seconds") or 0.0
                if row.get("status") == "early_stopped" and row.get("preflight_throughput"):
                    # How its cost grows with pixels: the preflight's rate is a point too.
                    stopped[key][transform].append((megapixels, 1.0 / row["preflight_throughput"]))
                if row.get("status") != "ok" or not row.get("median_throughput"):
                    continue
                if model == "breakdown" and row.get("pipeline", transform) != transform:
                    continue  # a step row: part of its pipeline's passes
                per_image[key][transform].append(1.0 / row["median_throughput"])
                pixels[key][transform].append(megapixels)
                work += row_work(kind, row, params)
                if model == "pyperf" and "pyperf_processes" in row:
                    shares[key].append(row["pyperf_processes"] / max(params["processes"], 1))
                    if params["processes"] > params.get("min_processes", 1):
                        observed.add(key)
                if model == "dataloader":
                    setting = setting_of(row, params)
                    for arm, name in DATALOADER_ARMS.items():
                        rates = [r for r in row.get(name) or [] if r]
                        if rates:
                            arms[key][f"{transform}|{setting}|{arm}"].append(
                                1.0 / statistics.median(rates)
                            )
                    rounds = row.get("timed_rounds") or len(row.get("throughputs") or [])
                    # Each fresh process (--processes) times up to num_runs rounds of its own.
                    per_process = rounds / max(1, int(row.get("processes") or 1))
                    run_shares[key].append(per_process / max(params["num_runs"], 1))
                    if row.get("window_batches") and params.get("window_seconds"):
                        batch = row.get("batch_size") or params["batch_size"]
                        epochs[key][f"{transform}|{setting}"].append(row["window_batches"] * batch)
                    if params["num_runs"] > params.get("min_runs", DATALOADER_MIN_RUNS):
                        observed.add(key)
                    transport = [r for r in row.get("transport_throughputs") or [] if r]
                    if transport:
                        baselines[key][setting].append(1.0 / statistics.median(transport))
                if model == "training" and row.get("loader_img_per_s"):
                    # The CPU feed's loader is the recipe's (the GPU feed's cuts crops only).
                    setting = f"decode-w{row.get('workers', params.get('workers'))}"
                    if row.get("feed", "cpu") == "cpu":
                        recipe = row.get("transform", transform)
                        arms[key][f"{recipe}|{setting}|loader"].append(1 / row["loader_img_per_s"])
                    accelerator = str(row.get("accelerator") or params.get("accelerator"))
                    if row.get("model_step_ms") and not accelerator.startswith("sleep:"):
                        batch = row.get("batch_size") or params["batch_size"]
                        on_gpu = str(row.get("device", "cpu")).startswith("cuda")
                        name = f"{accelerator}|{params.get('model', 'auto')}|"
                        name += "cuda" if on_gpu else "cpu"
                        steps[key][name].append(row["model_step_ms"] / 1000.0 / batch)
                if model == "breakdown":
                    values = len(row.get("throughputs") or [])
                    least, most = breakdown_value_bounds(
                        params["min_values"],
                        params["max_values"],
                        params.get("values_per_process", BREAKDOWN_VALUES_PER_PROCESS),
                    )
                    run_shares[key].append(values / max(most, 1))
                    if most > least:
                        observed.add(key)
            if model == "dataloader":  # the job's transport baseline: once per result file
                work += _baseline_work(payload["results"], params)
                if params.get("usable_cores"):
                    cores[key].append(int(params["usable_cores"]))
                timing = payload["metadata"].get("job_timing")
                first = next(iter(payload["results"].values()), {})
                setting = setting_of({"scope": payload["metadata"].get("scope"), **first}, params)
                if timing:
                    # Later processes (--processes): their time, windows included, is what
                    # dataloader_estimate charges them, not the setting's fixed cost; ``work``
                    # holds every process's windows, the first's about 1/processes of it.
                    later = timing.get("later_processes_seconds") or 0.0
                    count = max(1, int(params.get("processes") or 1))
                    first_work = work / count
                    if later and count > 1:
                        laters[key].append((later - (work - first_work)) / (count - 1))
                    timed_entry = (key, setting, first_work + later, timing["setting_seconds"],
                                   timing["import_seconds"])  # fmt: skip
        except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError):
            continue  # not a result of this workflow's regimes
        if params.get("settings_in_job"):  # a job_per: library job: one benchmark file for all
            run = regimes.run_suffix(regimes.without_run(path.name)[1])
            bench = bench.with_name(f"{matrix.dataloader_library_job(params['shard'])}{run}.tsv")
        rounds = 1
        if model == "pyperf":
            rounds = max((r.get("pyperf_processes", 1) for r in payload["results"].values()
                          if r.get("status") == "ok"), default=1)  # fmt: skip
        if model == "breakdown":  # an interpreter per round (the first: the job's process)
            rounds = max((r.get("round_interpreters") or 1
                          for r in payload["results"].values()), default=1)  # fmt: skip
        jobs[bench].append((key, work, rounds, held))
        if model == "dataloader" and timing:
            timed[bench].append(timed_entry)
    for bench, members in jobs.items():
        seconds = _benchmark_seconds(bench)
        if seconds is None:
            continue
        # A job's time beyond the measured work of every result file it wrote: its process
        # start, imports and set-up (a job_per: library job pays them once for its settings;
        # a micro job once per pyperf process round).
        overhead = max(seconds - sum(work for _, work, _, _ in members), 0.0)
        rounds = max(r for _, _, r, _ in members)
        held = max(h for _, _, _, h in members)
        for key in {key for key, _, _, _ in members}:
            overheads[key].append((held, overhead / rounds))
    for bench, entries in timed.items():
        seconds = _benchmark_seconds(bench)
        if seconds is None or len(entries) != len(jobs[bench]):
            continue
        # The process: everything outside its settings but their imports (paid once).
        process = seconds - sum(wall - imports for _, _, _, wall, imports in entries)
        for key, setting, work, wall, imports in entries:
            settings[key][setting].append(max(wall - imports - work, 0.0))
        processes[entries[0][0]].append(max(process, 0.0))
    models: dict[tuple[str, str], KindModel] = {}
    for key in set(per_image) | set(overheads):
        fits = {
            t: _fit_power(
                [*pixels[key][t], *(m for m, _ in stopped[key][t])],
                [*v, *(x for _, x in stopped[key][t])],
            )
            for t, v in per_image[key].items()
        }
        fixed, per_mp = (
            _fit_line(overheads[key])
            if regimes.KINDS[key[0]].cost == "pyperf"
            else (statistics.median(o for _, o in overheads[key]) if overheads[key] else 0.0, 0.0)
        )
        models[key] = KindModel(
            {t: fit[0] for t, fit in fits.items()},
            fixed,
            process_share=statistics.fmean(shares[key]) if shares[key] else 1.0,
            megapixels={t: fit[1] for t, fit in fits.items()},
            slope={t: fit[2] for t, fit in fits.items()},
            overhead_per_mp_s=per_mp,
            arm_s={a: statistics.median(v) for a, v in arms[key].items()},
            run_share=statistics.fmean(run_shares[key]) if run_shares[key] else 1.0,
            baseline_s={s: statistics.median(v) for s, v in baselines[key].items()},
            process_s=statistics.median(processes[key]) if processes[key] else 0.0,
            setting_s={s: statistics.median(v) for s, v in settings[key].items()},
            share_observed=key in observed,
            cores=min(cores[key]) if cores[key] else 0,
            step_s={name: statistics.median(v) for name, v in steps[key].items()},
            epoch_images={name: statistics.median(v) for name, v in epochs[key].items()},
            later_process_s=max(statistics.median(laters[key]), 0.0) if laters[key] else 0.0,
        )
    _learn_fixed_kinds(run_dir, models)
    return models


# Pixel ranges narrower than this ratio say nothing about how a cost grows with pixels.
MIN_PIXEL_RATIO = 2.0
SLOPE_BOUNDS = (0.5, 2.0)


def _fit_power(megapixels: list[float], seconds: list[float]) -> tuple[float, float, float]:
    """(seconds, megapixels, exponent) of ``seconds = s0 x (mp / mp0) ** k`` fitted by least
    squares on logs over the sizes a transform was measured at (the resolution sweep's datasets
    of the local run); one size, or sizes closer than MIN_PIXEL_RATIO: the median, k = 1."""
    points = [(m, s) for m, s in zip(megapixels, seconds, strict=True) if m > 0 and s > 0]
    sizes = [m for m, _ in points]
    if not points or max(sizes) / min(sizes) < MIN_PIXEL_RATIO:
        return statistics.median(seconds), _median(megapixels), 1.0
    xs = [math.log(m) for m, _ in points]
    ys = [math.log(s) for _, s in points]
    x0, y0 = statistics.fmean(xs), statistics.fmean(ys)
    k = sum((x - x0) * (y - y0) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - x0) ** 2 for x in xs
    )
    return math.exp(y0), math.exp(x0), min(max(k, SLOPE_BOUNDS[0]), SLOPE_BOUNDS[1])


def _fit_line(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(a, b) of ``overhead = a + b x megapixels held`` (a micro process round: imports, then
    its decoded cache), least squares over the local jobs; one size: the median, b = 0."""
    if not points:
        return 0.0, 0.0
    sizes = [m for m, _ in points]
    values = [o for _, o in points]
    if min(sizes) <= 0 or max(sizes) / min(sizes) < MIN_PIXEL_RATIO:
        return statistics.median(values), 0.0
    m0, o0 = statistics.fmean(sizes), statistics.fmean(values)
    b = sum((m - m0) * (o - o0) for m, o in points) / sum((m - m0) ** 2 for m in sizes)
    b = max(b, 0.0)
    return max(o0 - b * m0, 0.0), b


def borrow_shares(models: dict[Key, KindModel], reference: Mapping[Key, KindModel]) -> list[str]:
    """Where the local rows could not stop early (e.g. the smoke preset's one pyperf process),
    take the share of their maximum that rows used from ``reference`` (the reference timings
    shipped in workflow/resources/time_model.json: a default run), where it observed them;
    returns the (kind, library) pairs borrowed for. Without either, a plan expects the maximum."""
    borrowed = []
    for key, model in sorted(models.items()):
        found = reference.get(key)
        if model.share_observed or found is None or not found.share_observed:
            continue
        model.process_share, model.run_share = found.process_share, found.run_share
        borrowed.append(f"{key[0]}/{key[1]}")
    return borrowed


def _baseline_work(results: Mapping[str, Any], params: Mapping[str, Any]) -> float:
    """Seconds of a DataLoader job's transport baseline (rows repeat the job's one baseline)."""
    for row in results.values():
        rates = [r for r in row.get("transport_throughputs") or [] if r]
        if rates:
            return sum(params["images_per_run"] / r for r in rates)
    return 0.0


def _learn_fixed_kinds(run_dir: Path, models: dict[tuple[str, str], KindModel]) -> None:
    """Setup, analysis and whole-job kinds: their measured wall time."""
    for kind in SETUP_KINDS:
        times = [
            s
            for tsv in sorted((run_dir / "benchmarks" / "setup" / kind).glob("*.tsv"))
            if (s := _benchmark_seconds(tsv)) is not None
        ]
        if times:
            models[(kind, "")] = KindModel({}, statistics.median(times))
    # A resize job also starts a process, imports Pillow and writes and stages an archive, as a
    # staging job does: that fixed time is the staging job's; the rest scales with megapixels.
    staged = models.get(("stage_dataset", ""))
    fixed = staged.overhead_s if staged is not None else 0.0
    rates = [
        max(s - fixed, 0.0) / mp
        for tsv in sorted((run_dir / "benchmarks" / "setup" / "resize_dataset").glob("*.tsv"))
        if (s := _benchmark_seconds(tsv)) is not None
        and (mp := resized_megapixels(run_dir / "results" / "data", tsv.stem))
    ]
    if rates:  # a resize job's time is its megapixels read and written
        models[("resize_dataset", "")] = KindModel(
            {}, 0.0, per_megapixel_s=statistics.median(rates)
        )
    for kind in ANALYSIS_KINDS:  # benchmarks/analysis/[<root>/]<kind>.tsv
        times = [
            s
            for tsv in sorted((run_dir / "benchmarks" / "analysis").glob(f"**/{kind}.tsv"))
            if (s := _benchmark_seconds(tsv)) is not None
        ]
        if times:
            models[(kind, "")] = KindModel({}, statistics.median(times))
    for kind in whole_job_kinds():
        pattern, library_from = regimes.benchmark_glob(regimes.KINDS[kind])
        whole: dict[str, list[float]] = defaultdict(list)
        for tsv in sorted(run_dir.glob(f"benchmarks/{pattern}")):
            if (s := _benchmark_seconds(tsv)) is not None:
                name = tsv.stem if library_from == "stem" else tsv.parent.name
                whole[regimes.split_allocator(name)[0]].append(s)
        for library, times in whole.items():
            models[(kind, library)] = KindModel({}, statistics.median(times))


def resized_megapixels(data_dir: Path, key: str) -> float | None:
    """Megapixels a resize job read (its base images) and wrote (the derived ones), from the
    staged manifests; None where they are missing."""
    try:
        derived = json.loads((data_dir / key / "manifest.json").read_text())
        base = json.loads((data_dir / derived["base_key"] / "manifest.json").read_text())
    except (OSError, ValueError, KeyError, TypeError):
        return None
    count = len(derived["files"])
    pixels = [f["width"] * f["height"] for f in derived["files"] + base["files"][:count]]
    return sum(pixels) / 1e6 or None


# -- pricing one planned job ----------------------------------------------------------------
@dataclass(frozen=True)
class Estimate:
    """Local seconds of one job: expected (early stopping as observed locally) and at most."""

    expected: float
    most: float


def _policy(params: Mapping[str, Any]) -> dict[str, Any]:
    policy = params.get("policy")
    return (json.loads(policy) if isinstance(policy, str) else policy) or {}


def _preflight_items(params: Mapping[str, Any]) -> int:
    policy = _policy(params)
    return int(policy.get("preflight_items", 0)) if policy.get("enabled", True) else 0


# Within this factor of the slow-transform threshold (either side), a predicted per-image time
# cannot say on which side the job's own preflight will fall: the probability of an early stop
# rises across the band (the validation run's borderline transforms, docs/cloud.md).
SLOW_BAND = 1.25


def _stop_probability(seconds_per_image: float, params: Mapping[str, Any]) -> float:
    policy = _policy(params)
    if not policy or not policy.get("enabled", True):
        return 0.0
    ratio = seconds_per_image / policy["max_seconds_per_item"]
    if ratio <= 0:
        return 0.0
    # Linear in log(ratio): 0 at threshold / SLOW_BAND, 1/2 at the threshold, 1 at x SLOW_BAND.
    return min(max(0.5 + math.log(ratio) / (2 * math.log(SLOW_BAND)), 0.0), 1.0)


def pyperf_estimate(model: KindModel, job: Job, params: Mapping[str, Any]) -> Estimate:
    images = params["num_images"]
    most = params["processes"]
    # Expectations over rows: fractional processes, runs and values.
    expected = min(max(model.process_share * most, params.get("min_processes", 1)), most)
    cap = _policy(params).get("preflight_max_seconds", math.inf)
    work = {"expected": 0.0, "most": 0.0}
    for transform in job.transforms:
        s_img = model.seconds_per_image(transform, job.megapixels)
        preflight = (_preflight_items(params) + 1) * s_img
        per_process = (
            (params["values"] + params["warmups"]) * passes_per_value(s_img, images) * images
        )
        per_process *= s_img
        # Near the slow-transform threshold a preflight goes either way: expect each outcome
        # with its probability; at most, the full measurement unless a stop is certain.
        stop = _stop_probability(s_img, params)
        stopped = min(preflight, cap)
        work["expected"] += stop * stopped + (1 - stop) * (preflight + expected * per_process)
        work["most"] += stopped if stop >= 1 else preflight + most * per_process
    round_s = model.overhead_s + model.overhead_per_mp_s * images * job.megapixels
    return Estimate(
        round_s * expected / job.share + work["expected"],
        round_s * most / job.share + work["most"],
    )


def dataloader_estimate(model: KindModel, job: Job, params: Mapping[str, Any]) -> Estimate:
    """Epochs of every arm at the job's setting, plus its baselines and fixed costs; the arms'
    rates are the measured ones at the setting, scaled to the cores of the machine the job will
    run on (``params['target_cores']``; 0 or absent: the measuring machine's)."""
    # The engine's epoch: batches_per_run rounded up to a whole number of batches per worker.
    per_epoch = params["batch_size"] * epoch_batches(
        params["batches_per_run"], int(params.get("workers") or 0)
    )
    most_runs = params["num_runs"]
    expected_runs = min(max(model.run_share * most_runs, DATALOADER_MIN_RUNS), most_runs)
    baseline_runs = params.get("baseline_runs", 0)
    # Fresh processes per row (augbench.engines.dataloader.processes), each its own epochs.
    processes = max(1, int(params.get("processes") or 1))
    window_s = float(params.get("window_seconds") or 0.0)
    scope = params.get("scope") or ""
    setting = f"{scope}-w{params.get('workers')}" if scope else ""
    totals = {"expected": 0.0, "most": 0.0}
    warmups = 0.0  # a later process's untimed warm-up epochs, one per row
    for transform in job.transforms:
        cores = int(params.get("target_cores") or 0)
        s_warm = _arm_seconds(model, transform, setting, "regime", job.megapixels, cores)
        warmups += params["batch_size"] * max(1, int(params.get("workers") or 0)) * s_warm
        for label, runs in (("expected", expected_runs), ("most", most_runs)):
            seconds = 0.0
            for arm in DATALOADER_ARMS:
                epochs = runs if arm == "regime" else min(baseline_runs, runs)
                if arm in ("memory", "floor") and scope != "decode":
                    epochs = 0
                if epochs:
                    s_img = _arm_seconds(
                        model, transform, setting, arm, job.megapixels,
                        int(params.get("target_cores") or 0),
                    )  # fmt: skip
                    # A sized epoch (--window-seconds) lasts at least that long, and as long
                    # as the images the measured rows' epochs held where the model has them.
                    sized = model.epoch_images.get(f"{transform}|{setting}") if window_s else None
                    epoch_s = max(per_epoch * s_img, window_s, (sized or 0.0) * s_img)
                    # The regime's epochs run in every process, the baselines in the first.
                    seconds += epochs * epoch_s * (processes if arm == "regime" else 1)
            totals[label] += seconds
    transport = model.baseline_s.get(setting) or _median(model.baseline_s.values())
    baseline = baseline_runs * per_epoch * transport
    if model.setting_s:  # the process's fixed cost, shared by its settings, + this setting's
        own = model.setting_s.get(setting, _median(model.setting_s.values()))
        overhead = model.process_s / job.share + own + baseline
        start = model.process_s
    else:
        overhead = model.overhead_s / job.share + baseline
        start = model.overhead_s
    # A later process imports the library again and warms each row up; the setting's own fixed
    # cost (the hand-over probe, the rows' preflights) is the first process's.
    overhead += (processes - 1) * (model.later_process_s or start + warmups)
    return Estimate(overhead + totals["expected"], overhead + totals["most"])


def parallelism(workers: int, cores: int) -> float:
    """How many images a DataLoader setting transforms at once: its workers, at most the cores
    the main process leaves them, at least one (0 workers: the main process itself)."""
    if not cores:
        return float(max(1, workers))
    return max(1.0, min(float(workers), cores - MAIN_PROCESS_CORES))


def _arm_seconds(
    model: KindModel, transform: str, setting: str, arm: str, mp: float, target_cores: int = 0
) -> float:
    """An arm's seconds per image at a setting on a machine of ``target_cores`` (0: the measuring
    machine's): measured at that setting, else at the nearest measured one of the same scope
    (fewest workers above, or the most below), scaled by how many images each transforms at once
    (:func:`parallelism`, with the measuring machine's cores and the target's). A recipe the run
    did not measure takes the median of the library's measured recipes at that setting; without
    any, the regime's per-image time."""
    scope, _, workers = setting.partition("-w")
    target = target_cores or model.cores

    def nearest(name: str) -> tuple[int, float] | None:
        exact = model.arm_s.get(f"{name}|{setting}|{arm}")
        if exact is not None or not workers.isdigit():
            return None if exact is None else (int(workers or 0), exact)
        same = sorted(
            (int(k.split("|")[1].partition("-w")[2]), v)
            for k, v in model.arm_s.items()
            if k.startswith(f"{name}|{scope}-w") and k.endswith(f"|{arm}")
        )
        above = [(w, v) for w, v in same if w >= int(workers)]
        return above[0] if above else (same[-1] if same else None)

    def scaled(found: tuple[int, float]) -> float:
        measured_workers, seconds = found
        if workers.isdigit() and model.cores:
            seconds *= parallelism(measured_workers, model.cores) / parallelism(
                int(workers), target
            )
        return seconds

    found = nearest(transform)
    if found is not None:
        seconds, measured = scaled(found), model.megapixels.get(transform)
    else:
        names = {k.split("|")[0] for k in model.arm_s}
        others = [scaled(f) for f in (nearest(n) for n in sorted(names)) if f is not None]
        if not others:
            return model.seconds_per_image(transform, mp)
        seconds, measured = statistics.median(others), None
    measured = measured or _median(model.megapixels.values())
    return seconds * (mp / measured) if mp and measured else seconds


def breakdown_estimate(model: KindModel, job: Job, params: Mapping[str, Any]) -> Estimate:
    images = params["num_images"]
    per = max(1, int(params.get("values_per_process") or BREAKDOWN_VALUES_PER_PROCESS))
    least, most = breakdown_value_bounds(params["min_values"], params["max_values"], per)
    expected = min(max(model.run_share * most, least), most)
    totals = {"expected": 0.0, "most": 0.0}
    for pipeline in job.transforms:
        s_img = model.seconds_per_image(pipeline, job.megapixels)
        per_pass = passes_per_value(s_img, images) * images * s_img
        for label, values in (("expected", expected), ("most", most)):
            passes = breakdown_passes(math.ceil(values), params["warmups"], per)
            totals[label] += len(BREAKDOWN_KINDS) * passes * per_pass
    # One interpreter per round (the first is the job's process): its imports and decoding.
    overhead = {label: model.overhead_s * math.ceil(values / per)
                for label, values in (("expected", expected), ("most", most))}  # fmt: skip
    return Estimate(overhead["expected"] + totals["expected"], overhead["most"] + totals["most"])


def stream_estimate(model: KindModel, job: Job, params: Mapping[str, Any]) -> Estimate:
    images = stream_images(params)
    seconds = model.overhead_s / job.share + sum(
        images * model.seconds_per_image(t, job.megapixels) for t in job.transforms
    )
    return Estimate(seconds, seconds)


def training_estimate(model: KindModel, job: Job, params: Mapping[str, Any]) -> Estimate:
    """The job's recipes on each feed: the engine's three passes (module docstring), the loop at
    the starvation model's rate for the loader's and the step's seconds per image. A GPU feed is
    priced as the CPU feed (on a machine without CUDA its rows are skipped in no time)."""
    from augbench.starvation_model import Supply, predict

    if not model.arm_s and not model.per_image_s:  # a job's wall time only (an older model file)
        return Estimate(model.overhead_s, model.overhead_s)
    # The engine's flags of the job (regimes.training_args, as Job.params names them).
    batch, workers = int(params["batch_size"]), int(params["workers"])
    warmup, loader_batches = training_counts(
        workers, int(params["warmup_steps"]), int(params["prefetch_factor"])
    )
    timed, model_steps = int(params["steps"]), int(params["model_steps"])
    accelerator = str(params["accelerator"])
    sleep = accelerator.removeprefix("sleep:")
    feeds = params["feeds"]
    feeds = feeds.split(",") if isinstance(feeds, str) else list(feeds)
    seconds = model.overhead_s / job.share
    for transform in job.transforms:
        loader = _arm_seconds(
            model, transform, f"decode-w{workers}", "loader", job.megapixels,
            int(params.get("target_cores") or 0),
        )  # fmt: skip
        if sleep != accelerator:  # the stand-in sleeps its own time per batch
            step = float(sleep) / 1000.0 / batch
        else:
            step = _step_seconds(model, f"{accelerator}|{params.get('model', 'auto')}", params)
            step = model.seconds_per_image(transform) if step is None else step
        supply = Supply(1.0 / loader, workers, batch)
        loop = batch / predict(supply, 1.0 / max(step, 1e-9)).images_per_second
        alone = sum(model_alone_counts(int(params["warmup_steps"]), model_steps))
        per_feed = alone * batch * step + loader_batches * batch * loader
        seconds += len(feeds) * (per_feed + (warmup + timed) * loop)
    return Estimate(seconds, seconds)


def _step_seconds(model: KindModel, name: str, params: Mapping[str, Any]) -> float | None:
    """A real model's step in seconds per image on the job's device (``target_device``: the
    placement's in a cloud estimate; none: the measuring machine's): as measured there; on a
    GPU where only a CPU step was measured, 0: the loop at the loader's pace (a GPU steps
    ResNet-50 faster than a loader feeds it, docs/training.md); None: price the measured loop."""
    device = str(params.get("target_device") or "")
    measured = {k.rsplit("|", 1)[1]: v for k, v in model.step_s.items() if k.startswith(f"{name}|")}
    if not device:
        return _median(measured.values()) or None
    if device in measured:
        return measured[device]
    return 0.0 if device == "cuda" else None


ESTIMATORS = {
    "pyperf": pyperf_estimate,
    "dataloader": dataloader_estimate,
    "breakdown": breakdown_estimate,
    "stream": stream_estimate,
    "training": training_estimate,
}


def supported(job: Job) -> tuple[str, ...]:
    """The job's transforms its library runs: a catalog transform the library's adapter does not
    support is an `unsupported` row, written without timing anything, so it costs nothing.
    Names outside the catalog (pipelines, the GPU regimes' Identity baseline) are kept."""
    from augbench import adapters, catalog

    if not job.library or job.library not in adapters.names():
        return job.transforms
    adapter = adapters.get(job.library)
    known = set(catalog.names())
    return tuple(t for t in job.transforms if t not in known or adapter.supports(t))


def estimate_jobs(
    jobs: list[Job],
    models: dict[tuple[str, str], KindModel],
    config: Mapping[str, Any],
    image_scale: float = 1.0,
    target_cores: Callable[[Job], int] | None = None,
    target_device: Callable[[Job], str] | None = None,
) -> tuple[dict[Job, Estimate | None], dict[Job, str]]:
    """Local seconds of every planned job (None: no model) and the basis of each estimate
    (measured / assumed / none: why). The reusable core: a cloud estimate divides by a machine's
    speed factor; a local ETA sums it as is. ``image_scale`` scales the dataset setup jobs;
    ``target_cores`` gives the cores of the machine a job runs on (DataLoader workers are
    priced for them; None: the measuring machine's), ``target_device`` its device for a model
    step (``cuda`` or ``cpu``; None: the measuring machine's)."""
    assumed = config.get("cloud", {}).get("assumed_img_per_s", {})
    out: dict[Job, Estimate | None] = {}
    basis: dict[Job, str] = {}
    for job in jobs:
        # A library's second name (A/A runs) does its base library's work, at its base's rates.
        library = adapters.base_of(job.library) if job.rule not in SETUP_KINDS else ""
        model = models.get((job.rule, library))
        if (
            job.rule in SETUP_KINDS
            and model is not None
            and model.per_megapixel_s
            and "num_images" in job.params
        ):
            params = job.params  # a resize job: the megapixels it reads and writes
            mp = params["num_images"] * (params["input_megapixels"] + job.megapixels)
            seconds = model.overhead_s + mp * model.per_megapixel_s
            out[job], basis[job] = Estimate(seconds, seconds), "measured"
            continue
        if job.rule in SETUP_KINDS or job.rule in ANALYSIS_KINDS:
            if model is None:  # an assumption does not scale with the dataset
                fixed = ASSUMED_SETUP_S if job.rule in SETUP_KINDS else ASSUMED_ANALYSIS_S
                out[job], basis[job] = Estimate(fixed, fixed), "assumed"
            else:
                scale = image_scale if job.rule in SETUP_KINDS and job.rule != "build_env" else 1.0
                seconds = model.overhead_s * scale
                out[job], basis[job] = Estimate(seconds, seconds), "measured"
            continue
        declared = regimes.KINDS.get(job.rule)
        if declared is None:
            out[job], basis[job] = None, f"none: {job.rule} is not a declared job kind"
            continue
        if declared.cost == "whole_job":  # a fixed amount of work: its measured wall time
            out[job] = None if model is None else Estimate(model.overhead_s, model.overhead_s)
            basis[job] = "measured" if model is not None else f"none: no local {job.rule} job"
            continue
        # The job's own flags over its kind's config block (older callers pass no flags).
        block = dict(config.get(declared.config_block) or {}) if declared.config_block else {}
        params = {"num_images": config.get("num_images"), **block, **job.params}
        params["target_cores"] = target_cores(job) if target_cores else 0
        params["target_device"] = target_device(job) if target_device else ""
        # A training model of a job's wall time only (an older model file) is priced as such.
        if model is not None and (model.per_image_s or declared.cost == "training"):
            priced = dataclasses.replace(job, transforms=supported(job))
            out[job], basis[job] = ESTIMATORS[declared.cost](model, priced, params), "measured"
            continue
        rate = assumed.get(declared.placement, assumed.get(job.rule, {})).get(job.library)
        if rate and params.get("num_images"):
            overhead = model.overhead_s / job.share if model is not None else 0.0
            seconds = overhead + len(job.transforms) * stream_images(params) / rate
            out[job], basis[job] = Estimate(seconds, seconds), "assumed"
        else:
            out[job] = None
            basis[job] = (
                "none: no measured row in the local run and no cloud.assumed_img_per_s."
                f"{declared.placement}.{job.library}"
            )
    return out, basis


def seconds_per_job(
    jobs: list[Job],
    models: dict[tuple[str, str], KindModel],
    config: Mapping[str, Any],
    image_scale: float = 1.0,
    cores: int = 0,
) -> tuple[dict[Job, float | None], dict[Job, str]]:
    """Expected local seconds of every job (the plan's ETA) on a machine of ``cores`` (0: the
    measuring machine's): :func:`estimate_jobs`."""
    found, basis = estimate_jobs(jobs, models, config, image_scale, lambda job: cores)
    return {j: (e.expected if e is not None else None) for j, e in found.items()}, basis


# -- the cloud estimate ---------------------------------------------------------------------
@dataclass(frozen=True)
class Grouping:
    """How the profile bundles jobs into VM jobs (Snakemake ``groups`` / ``group-components``):
    rule -> group name, group -> jobs per VM job."""

    groups: Mapping[str, str] = field(default_factory=dict)
    components: Mapping[str, int] = field(default_factory=dict)

    def vm_jobs(self, jobs_per_rule: Mapping[str, int]) -> dict[str, float]:
        """VM jobs per rule: a rule's share of its group's ceil(jobs / components)."""
        in_group: dict[str, int] = defaultdict(int)
        for rule, count in jobs_per_rule.items():
            if rule in self.groups:
                in_group[self.groups[rule]] += count
        out = {}
        for rule, count in jobs_per_rule.items():
            group = self.groups.get(rule)
            if group is None:
                out[rule] = float(count)
                continue
            size = max(int(self.components.get(group, 1)), 1)
            out[rule] = math.ceil(in_group[group] / size) * count / in_group[group]
        return out


@dataclass
class Row:
    """One line of the estimate: the jobs of one rule on one machine type."""

    kind: str
    machine_type: str
    jobs: int
    preemptible: bool
    speed_factor: float
    basis: str
    seconds_expected: float | None  # job seconds on the target machine (None: no model)
    seconds_max: float | None
    vm_jobs: float  # VM jobs after grouping (start-ups paid)
    vm_start_s: float
    on_demand_usd_h: float | None
    spot_usd_h: float | None
    # The longest VM job of the rule (expected): its start-up plus the longest members a group
    # VM could be handed (Snakemake fills a group job in plan order, so this is the worst case).
    longest_vm_job_s: float = 0.0

    @property
    def startup_vm_hours(self) -> float:
        return self.vm_jobs * self.vm_start_s / 3600

    def vm_hours(self, which: str = "expected") -> float | None:
        seconds = self.seconds_expected if which == "expected" else self.seconds_max
        return None if seconds is None else seconds / 3600 + self.startup_vm_hours

    def usd(self, spot: bool, which: str = "expected") -> float | None:
        price = self.spot_usd_h if spot and self.preemptible else self.on_demand_usd_h
        hours = self.vm_hours(which)
        return None if hours is None or price is None else hours * price


def placement_of(config: Mapping[str, Any], job: Job) -> Mapping[str, Any] | None:
    """The cloud machine class a job's kind is placed on (config cloud.regimes), None for jobs
    without a placement of their own (setup jobs: the profile's default machine)."""
    declared = regimes.KINDS.get(job.rule)
    placements = config.get("cloud", {}).get("regimes", {})
    return placements.get(declared.placement) if declared else None


def placement_device(config: Mapping[str, Any]) -> Callable[[Job], str]:
    """The device a model steps on in each job's cloud placement: ``cuda`` where it has a GPU,
    else ``cpu`` ("" where the job has no placement: as measured)."""

    def device(job: Job) -> str:
        spec = placement_of(config, job)
        return ("cuda" if spec.get("gpu") else "cpu") if spec else ""

    return device


def placement_cores(config: Mapping[str, Any]) -> Callable[[Job], int]:
    """The vCPUs of the machine each job is placed on in a cloud sweep (0 where it has no
    placement: priced as measured)."""

    def cores(job: Job) -> int:
        spec = placement_of(config, job)
        return int(spec.get("cpus", 0)) if spec else 0

    return cores


def estimate(
    jobs: list[Job],
    models: dict[tuple[str, str], KindModel],
    config: Mapping[str, Any],
    default_machine: str,
    preemptible: set[str],
    vm_start_s: float,
    image_scale: float = 1.0,
    grouping: Grouping | None = None,
) -> list[Row]:
    cloud = config.get("cloud", {})
    factors = cloud.get("speed_factors", {})
    on_demand = cloud.get("prices_usd_per_hour", {})
    spot = cloud.get("spot_prices_usd_per_hour", {})
    found, basis = estimate_jobs(
        jobs, models, config, image_scale, placement_cores(config), placement_device(config)
    )
    by_rule: dict[tuple[str, str], list[Job]] = defaultdict(list)
    for job in jobs:
        placement = placement_of(config, job)
        machine = placement["machine_type"] if placement else default_machine
        by_rule[(job.rule, machine)].append(job)
    # A job_per: library job is one VM job however many result files (model jobs) it writes.
    vm_counts = {
        kind: sum(1.0 / j.share for j in members) for (kind, _), members in by_rule.items()
    }
    grouping = grouping or Grouping()
    vm_jobs = grouping.vm_jobs({k: round(v) for k, v in vm_counts.items()})
    rows = []
    for (kind, machine), members in by_rule.items():
        factor = float(factors.get(machine, 1.0))
        estimates = [found[j] for j in members]
        known = [e for e in estimates if e is not None]
        complete = len(known) == len(estimates)
        group = grouping.groups.get(kind)
        per_vm = max(int(grouping.components.get(group, 1)), 1) if group else 1
        # Result files per VM job: a job_per: library job writes `share` of them.
        files = per_vm * max((j.share for j in members), default=1)
        longest = sorted((e.expected for e in known), reverse=True)[:files]
        rows.append(
            Row(kind, machine, round(vm_counts[kind]), kind in preemptible, factor,
                "; ".join(sorted({basis[j] for j in members})),
                sum(e.expected for e in known) / factor if complete else None,
                sum(e.most for e in known) / factor if complete else None,
                vm_jobs[kind], vm_start_s, on_demand.get(machine), spot.get(machine),
                vm_start_s + sum(longest) / factor)
        )  # fmt: skip
    order = {k: i for i, k in enumerate(SETUP_KINDS + bench_kinds() + whole_job_kinds())}
    return sorted(rows, key=lambda r: (order.get(r.kind, 99), r.machine_type))


def _fmt(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}f}"


TSV_COLUMNS = (
    "rule", "jobs", "machine_type", "vm_jobs", "vm_hours_expected", "vm_hours_max",
    "usd_expected", "usd_max", "usd_spot_expected", "usd_spot_max", "startup_vm_hours",
    "preemptible", "speed_factor", "basis",
)  # fmt: skip


def _sum(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def write_tsv(rows: list[Row], path: Path) -> None:
    """One row per rule and machine type, then ``total`` (n/a where a rule has no model)."""
    path.parent.mkdir(parents=True, exist_ok=True)

    def cells(r: Row) -> list[Any]:
        return [r.kind, r.jobs, r.machine_type, _fmt(r.vm_jobs, 1),
                _fmt(r.vm_hours("expected"), 4), _fmt(r.vm_hours("max"), 4),
                _fmt(r.usd(False, "expected"), 4), _fmt(r.usd(False, "max"), 4),
                _fmt(r.usd(True, "expected"), 4), _fmt(r.usd(True, "max"), 4),
                _fmt(r.startup_vm_hours, 4), r.preemptible, r.speed_factor, r.basis]  # fmt: skip

    with path.open("w", newline="") as fh:
        out = csv.writer(fh, delimiter="\t")
        out.writerow(TSV_COLUMNS)
        for r in rows:
            out.writerow(cells(r))
        out.writerow([
            "total", sum(r.jobs for r in rows), "", _fmt(sum(r.vm_jobs for r in rows), 1),
            _fmt(_sum([r.vm_hours("expected") for r in rows]), 4),
            _fmt(_sum([r.vm_hours("max") for r in rows]), 4),
            _fmt(_sum([r.usd(False, "expected") for r in rows]), 4),
            _fmt(_sum([r.usd(False, "max") for r in rows]), 4),
            _fmt(_sum([r.usd(True, "expected") for r in rows]), 4),
            _fmt(_sum([r.usd(True, "max") for r in rows]), 4),
            _fmt(sum(r.startup_vm_hours for r in rows), 4), "", "", "",
        ])  # fmt: skip


JOB_COLUMNS = (
    "rule", "library", "output", "benchmark", "transforms", "megapixels", "expected_s", "max_s",
    "mem_mb", "rss_mb", "forked", "basis",
)  # fmt: skip


def write_jobs_tsv(
    jobs: list[Job],
    models: dict[Key, KindModel],
    config: Mapping[str, Any],
    path: Path,
    cloud: bool = False,
) -> None:
    """Every planned job with its predicted seconds (expected, at most) on the machine the
    timings were measured on (``cloud``: on its cloud placement's cores) and, for timed jobs,
    its benchmark file and memory: what tools/checks/cost_validation.py compares with a measured
    run, job by job."""
    found, basis = estimate_jobs(
        jobs, models, config,
        target_cores=placement_cores(config) if cloud else None,
        target_device=placement_device(config) if cloud else None,
    )  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        out = csv.writer(fh, delimiter="\t")
        out.writerow(JOB_COLUMNS)
        for job, est in found.items():
            out.writerow([
                job.rule, job.library, job.output, job.benchmark, ",".join(job.transforms),
                f"{job.megapixels:.4f}", _fmt(est.expected if est else None, 3),
                _fmt(est.most if est else None, 3), job.mem_mb, job.rss_mb, job.forked,
                basis[job],
            ])  # fmt: skip


def startup_share(rows: list[Row]) -> float | None:
    """Start-up VM hours / all VM hours (expected), None without a total."""
    hours = _sum([r.vm_hours("expected") for r in rows])
    return None if not hours else sum(r.startup_vm_hours for r in rows) / hours


def wall_hours(rows: list[Row], concurrent: int) -> float:
    """Expected wall time with ``concurrent`` VM jobs at once: the VM hours spread over them, but
    never less than the longest VM job."""
    hours = sum(r.vm_hours("expected") or 0.0 for r in rows)
    longest = max((r.longest_vm_job_s for r in rows), default=0.0) / 3600
    return max(hours / max(concurrent, 1), longest)


def _totals(rows: list[Row]) -> tuple[float, float, Row, float]:
    """Machine hours expected and at most, the rule with the longest machine job, and the
    start-up share: what both totals say."""
    hours = sum(r.vm_hours("expected") or 0.0 for r in rows)
    most = sum(r.vm_hours("max") or 0.0 for r in rows)
    longest = max(rows, key=lambda r: r.longest_vm_job_s)
    return hours, most, longest, startup_share(rows) or 0.0


def total_line(rows: list[Row], concurrent: int) -> str:
    hours, most, longest, share = _totals(rows)
    return (
        f"total: {sum(r.jobs for r in rows)} jobs in {sum(r.vm_jobs for r in rows):.0f} VM "
        f"jobs, {hours:.2f} VM hours expected ({most:.2f} at most; VM start-up "
        f"{share:.0%} of them), {sum(r.usd(False) or 0 for r in rows):.2f} USD on demand "
        f"({sum(r.usd(False, 'max') or 0 for r in rows):.2f} at most), "
        f"{sum(r.usd(True) or 0 for r in rows):.2f} USD with preemptible benchmark jobs; "
        f"about {wall_hours(rows, concurrent):.2f} h of wall time with {concurrent} jobs at once "
        f"(longest VM job: {longest.kind}, {longest.longest_vm_job_s / 3600:.2f} h)"
    )


def node_total_line(rows: list[Row], concurrent: int) -> str:
    """The total of a SLURM cluster's estimate: node-hours, and USD only where every partition
    used has a configured price per node-hour."""
    hours, most, longest, share = _totals(rows)
    unpriced = sorted({r.machine_type for r in rows if r.on_demand_usd_h is None})
    usd = (
        f"{sum(r.usd(False) or 0 for r in rows):.2f} USD at the configured node-hour prices "
        f"({sum(r.usd(False, 'max') or 0 for r in rows):.2f} at most)"
        if not unpriced
        else "no USD (no price per node-hour for "
        + ", ".join(unpriced)
        + ": slurm.prices_usd_per_node_hour)"
    )
    return (
        f"total: {sum(r.jobs for r in rows)} jobs in {sum(r.vm_jobs for r in rows):.0f} SLURM "
        f"jobs, {hours:.2f} node-hours expected ({most:.2f} at most; job start-up "
        f"{share:.0%} of them), {usd}; about {wall_hours(rows, concurrent):.2f} h of wall time "
        f"with {concurrent} jobs at once (longest SLURM job: {longest.kind}, "
        f"{longest.longest_vm_job_s / 3600:.2f} h)"
    )


def report(
    rows: list[Row],
    planned: list[str],
    concurrent: int,
    sources: dict[str, str],
    unit: str = "VM",
) -> str:
    """The table, then a total only when every planned kind has a model (and, for cloud VMs, a
    price). ``unit``: "VM" (a cloud sweep) or "node" (the partitions of a SLURM cluster, USD
    only where configured)."""
    nodes = unit == "node"
    width = max([22, *(len(r.kind) + 2 for r in rows)])  # the longest rule name, then a gap
    place = "partition" if nodes else "machine"
    jobs_head = "SLURM jobs" if nodes else "VM jobs"
    jw, hw = (11, 12) if nodes else (8, 10)  # column widths: the longer node headings
    head = (f"{'rule':<{width}}{place:<16}{'jobs':>6}{jobs_head:>{jw}}{'speed x':>8}"
            f"{unit + ' h exp':>{hw}}{unit + ' h max':>{hw}}{'USD exp':>10}{'USD max':>10}"
            + ("" if nodes else f"{'USD Spot exp':>14}") + "  basis")  # fmt: skip
    lines = [head]
    for r in rows:
        spot = _fmt(r.usd(True)) if r.preemptible else "(on-demand)"
        lines.append(
            f"{r.kind:<{width}}{r.machine_type:<16}{r.jobs:>6}{r.vm_jobs:>{jw}.1f}"
            f"{r.speed_factor:>8.2f}{_fmt(r.vm_hours('expected')):>{hw}}"
            f"{_fmt(r.vm_hours('max')):>{hw}}{_fmt(r.usd(False)):>10}"
            f"{_fmt(r.usd(False, 'max')):>10}" + ("" if nodes else f"{spot:>14}") + f"  {r.basis}"
        )
    modelled = {r.kind for r in rows}
    gaps = [f"{k}: no planned jobs found" for k in planned if k not in modelled]
    gaps += [f"{r.kind} on {r.machine_type}: {r.basis}" for r in rows if r.seconds_expected is None]
    if not nodes:
        unpriced = {r.machine_type for r in rows if r.seconds_expected is not None}
        unpriced -= {r.machine_type for r in rows if r.usd(True) is not None}
        gaps += [
            f"{m}: no price; set cloud.prices_usd_per_hour.{m} (and "
            f"cloud.spot_prices_usd_per_hour.{m} for preemptible jobs)"
            for m in sorted(unpriced)
        ]
    if gaps:
        lines.append("NO TOTAL: the estimate does not cover every planned job:")
        lines.extend(f"  {g}" for g in gaps)
    else:
        lines.append(node_total_line(rows, concurrent) if nodes else total_line(rows, concurrent))
    lines.extend(f"{k}: {v}" for k, v in sources.items())
    return "\n".join(lines)
