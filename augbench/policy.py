"""Measurement policy numbers: the only place they are defined.

Config may override them (``policy:`` block, ``disable_slow_skip``); the effective values are
recorded in every result file's ``benchmark_params``.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

# Thread-count variables read by OpenMP, MKL, OpenBLAS, numexpr and Accelerate when a library
# first loads them; they must be in the environment before numpy/torch/cv2 are imported.
THREAD_ENV_VARS: tuple[str, ...] = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)

# Set by tests and audits (augbench/measuring/netguard): every benchmark process records and refuses
# any connection that leaves the machine, in the JSON-lines file this names.
NETWORK_GUARD_ENV_VAR = "AUGBENCH_NETWORK_GUARD"

# The allocator as shipped (glibc malloc): the setting every job runs under unless config
# ``allocators`` names others, and the one whose files carry no allocator suffix.
DEFAULT_ALLOCATOR = "glibc"

# A result row whose repeated throughputs vary more than this (std / mean) is flagged unstable.
CV_UNSTABLE_THRESHOLD = 0.15

# Precision goal of every measured row (augbench/measuring/stopping.py): the half-width of the
# interval of its median throughput (augbench.intervals) over the median. Engines stop repeating
# once a row reaches it; rows that hit their maximum number of values first keep their wider CI and
# the summary flags them.
RELATIVE_CI_TARGET = 0.05

# Micro regime: one timed value (loops passes over the job's images) lasts at least this long; the
# loops come from the preflight, as pyperf's own calibration aims its values at a minimum time
# (its --min-time, 0.1 s by default). 50 ms is still > 10 scheduler ticks; a noisier value shows
# in the row's relative CI, which decides whether the row gets another process.
MICRO_MIN_VALUE_SECONDS = 0.05
MICRO_MAX_LOOPS = 1000

# cpu_dataloader baselines (docs/cpu_dataloader.md). A row whose median throughput is at least
# this fraction of its job's transport baseline (the recipe's tail alone through the same loader)
# is `transport_bound`: the loader, not the library's augmentation, sets most of its speed, so
# figures mark it instead of presenting it as the library's speed.
TRANSPORT_BOUND_FRACTION = 0.8
# The hand-over probe (augbench.measuring.engines.dataloader.baselines.measure_handover): the main
# process's time in next() for a batch a worker has already made (unpickling its shared-memory
# handles, mapping the batch, freeing the one before), which a training step pays on top of its
# own time. Measured twice per decode job with workers: "idle", after the workers have finished
# everything in flight; "busy", reading at HANDOVER_BUSY_PACE times the loader's own batch
# period, so the workers are still working while the main process receives (on a machine whose
# cores the workers fill, the main process then waits for a core: about twice the idle time on a
# 2-core machine). HANDOVER_PROBES batches each, the median reported.
HANDOVER_PROBES = 6
HANDOVER_BUSY_PACE = 1.5
# ... and before each idle read it waits at least this long (more at slow batch periods).
HANDOVER_MIN_IDLE_WAIT_S = 0.05
# regime / bare user loop below this: the harness costs the row something; the summary flags it.
BARE_LOOP_MIN_RATIO = 0.95
# decode-scope throughput / the composition of the decode floor and the memory-scope row: the goal
# for the cheapest recipe of each library (docs/cpu_dataloader.md, "Decode composition").
DECODE_COMPOSITION_GOAL = 0.8
# Pipeline breakdown (augbench/measuring/engines/pipeline_breakdown.py). The whole-pipeline row
# times the library's own composition object through the harness; a bare loop over the same object
# on the same images runs interleaved with it, and harness / bare must be within this fraction of 1
# or the row is flagged with both numbers (the check that can find harness cost).
PIPELINE_HARNESS_TOLERANCE = 0.05
# Timed values per fresh process of the pipeline breakdown (each process: an untimed warm-up pass,
# then these): few per process, so the interval of a row's median spans several processes.
BREAKDOWN_VALUES_PER_PROCESS = 2
# Fewest fresh processes of each kind of pass whose values the breakdown's stopping rule first looks
# at (where its maximum allows that many): one process's values spread less than those of
# processes with their own memory layouts, so an interval over one process is too narrow to stop on.
BREAKDOWN_FIRST_LOOK_PROCESSES = 2
# The composition effect (whole / sum of the isolated steps) is information, not a check: the
# isolated steps materialize every intermediate output and the composition does not. Beyond this
# fraction of 1 the row says what differs.
COMPOSITION_EFFECT_NOTE = 0.20
# Fewest timed epochs (and interleaved baseline pairs) a cpu_dataloader row takes before the
# stopping rule (augbench/measuring/stopping.py) may end it; its configured num_runs / baseline_runs
# are the maxima. Three values are the fewest whose 95 % CI can reach RELATIVE_CI_TARGET at a CV of
# ~2 %.
DATALOADER_MIN_RUNS = 3
# Resolution sweep (docs/resolution.md): a transform's cost "grows faster than pixels" between two
# resolutions when the slope of log(seconds per image) over log(pixels per image) exceeds 1 by
# more than this and by more than the two rows' own confidence intervals allow.
RESOLUTION_SLOPE_TOLERANCE = 0.1


@dataclass(frozen=True)
class SlowTransformPolicy:
    """Preflight a transform on a few items before the real measurement.

    A transform at or above ``max_seconds_per_item`` (0.05 s/img = 20 img/s) or whose preflight
    takes longer than ``preflight_max_seconds`` is recorded as ``early_stopped`` with its
    preflight throughput instead of being measured for minutes.
    """

    preflight_items: int = 10
    max_seconds_per_item: float = 0.05
    preflight_max_seconds: float = 60.0
    enabled: bool = True

    def verdict(self, items: int, seconds: float) -> str | None:
        """The early-stop reason for a preflight of ``items`` in ``seconds``, or None to go on."""
        if not self.enabled:
            return None
        if seconds > self.preflight_max_seconds:
            return (
                f"preflight of {items} items took {seconds:.1f} s "
                f"(> {self.preflight_max_seconds:.0f} s limit)"
            )
        per_item = seconds / max(items, 1)
        if per_item >= self.max_seconds_per_item:
            return (
                f"{per_item:.3f} s/item in preflight of {items} items "
                f"(>= {self.max_seconds_per_item} s/item slow-transform threshold)"
            )
        return None

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> SlowTransformPolicy:
        policy = cfg.get("policy") or {}
        base = cls()
        return cls(
            preflight_items=int(policy.get("preflight_items", base.preflight_items)),
            max_seconds_per_item=float(
                policy.get("max_seconds_per_item", base.max_seconds_per_item)
            ),
            preflight_max_seconds=float(
                policy.get("preflight_max_seconds", base.preflight_max_seconds)
            ),
            enabled=not bool(cfg.get("disable_slow_skip", False)),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ThreadPolicy:
    """How many threads a measured process (or each DataLoader worker) may use."""

    threads: int = 1
    opencv_threads: int = 0  # cv2.setNumThreads(0): OpenCV runs its loops sequentially
    extra_env: dict[str, str] = field(default_factory=dict)

    def environment(self) -> dict[str, str]:
        env = {var: str(self.threads) for var in THREAD_ENV_VARS}
        env.update(self.extra_env)
        return env

    def apply_environment(self) -> None:
        """Export the thread variables; call before numpy, torch or cv2 is imported."""
        os.environ.update(self.environment())

    def shell_prefix(self) -> str:
        """``VAR=value ...`` for a shell command line, so the interpreter starts with them."""
        return " ".join(f"{k}={v}" for k, v in sorted(self.environment().items()))

    def apply_runtime(self) -> dict[str, Any]:
        """Set thread counts of already-imported libraries; return what is now in force."""
        import sys

        applied: dict[str, Any] = {"environment": {k: os.environ.get(k) for k in THREAD_ENV_VARS}}
        # sys.modules may map a name to None (a module made unimportable): not imported.
        cv2 = sys.modules.get("cv2")
        if cv2 is not None:
            cv2.setNumThreads(self.opencv_threads)
            applied["opencv"] = {"threads": cv2.getNumThreads()}
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_num_threads(self.threads)
            applied["pytorch"] = {"threads": torch.get_num_threads()}
        return applied

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# Micro benchmarks are single-threaded by definition.
MICRO_THREADS = ThreadPolicy(threads=1)

# DataLoader regimes: each worker process (and the main process, which does the work itself when
# num_workers=0) runs one thread, so N workers use N cores. Applied before imports in the job and
# again in every worker by worker_init_fn.
DATALOADER_THREADS = ThreadPolicy(threads=1)

# GPU regimes (gpu_dataloader, dali): every process, DataLoader worker and DALI host thread uses
# one BLAS/OpenMP thread; parallelism comes only from the configured workers / DALI num_threads.
GPU_REGIME_THREADS = ThreadPolicy(threads=1)


# -- memory of a planned job (augbench.planning.memory; docs/cloud.md#memory)
# ---------------------------- Resident MiB of one process after ``import augbench`` and the
# library's adapter import, alone and with torch, are measured per library by
# tools/checks/import_rss.py into augbench/planning/library_memory.json
# (augbench.planning.memory.process_mb). A library without a measurement (a registered extension):
# about the largest measured one.
UNKNOWN_LIBRARY_RSS_MB = (700.0, 700.0)
# A job's manager process that imports no library (augbench.measuring.engines.micro's; the
# pipeline breakdown's, which starts its rounds' interpreters): same tool.
MANAGER_RSS_MB = 44.0
# What the fork a DataLoader row runs in adds of its own (pages it writes: outputs, copy-on-write
# object headers, its thread arenas), and a loader worker of a library without a measured one
# (library_memory.json's ``loader_worker``); from Snakemake's max_pss of cpu_dataloader jobs.
WORKER_PRIVATE_MB = 60.0
# Batches a DataLoader worker of the cpu_dataloader and pipeline regimes holds at once: the one it
# builds and one ready. Their main process takes each batch as it arrives, so the rest of a
# prefetch_factor's queue fills only behind a main process that falls behind (a training step:
# its own memory model). Planned at four batches per worker, the pipelines' DataLoader jobs of a
# checked shape held 0.43-0.67 of their plan (docs/results/intel-xeon-2c/
# 2026-12-01-cost-validation-shape-batches-batch-periods/).
BATCHES_HELD_PER_WORKER = 2
# The same for a training job's decode-scope worker beside a model being trained: fitted on the
# reference run's ResNet-18 jobs (tools/maintenance/reference_run.yaml, amd-epyc-2c,
# 2026-11-27: the largest shortfall of a 1-worker job's mem_mb below its max_pss with 60 MB, 96
# MB, per worker before headroom); checked on the runs of docs/training.md "Through the
# workflow's own runs" (tools/checks/training_memory.py,
# docs/results/amd-epyc-2c/2026-11-27-training-check-workflow-1/).
TRAINING_WORKER_PRIVATE_MB = 140.0
# The training regime's model state in the main process at batch 32 (weights, gradients, SGD
# momentum, activations), scaled by batch size in the memory model. resnet18 at 112 px on CPU:
# measured 2026-11-25 on amd-epyc-2c, peak RSS 1010 MB at batch 16 with torchvision imported
# (672 MB), so ~340 MB at 16 and ~700 MB at 32. The sleep accelerator holds nothing.
# Allocator settings (augbench.measuring.allocator; docs/pipelines.md "Measured here"). glibc as
# shipped adapts its mmap threshold (up to 32 MiB) to what the process freed before, so its history
# decides whether a large buffer is returned to the kernel on free and page-faulted in again on the
# next call; "glibc-steady" raises both thresholds so large buffers stay in the heap and are reused.
ALLOCATOR_ENV: dict[str, dict[str, str]] = {
    "glibc": {},
    "glibc-steady": {
        "MALLOC_MMAP_THRESHOLD_": "1073741824",
        "MALLOC_TRIM_THRESHOLD_": "4294967296",
    },
}
# Allocators that replace malloc when preloaded (augbench.measuring.allocator.preload_library).
PRELOADED_ALLOCATORS: tuple[str, ...] = ("mimalloc", "jemalloc")
# Every allocator setting (config allocators), glibc as shipped first: the baseline of the others.
ALLOCATOR_SETTINGS: tuple[str, ...] = (*ALLOCATOR_ENV, *PRELOADED_ALLOCATORS)
# An allocator-effect ratio is "precise" when both of its rows' relative 95 % CIs are at most this
# (twice the rows' own goal, RELATIVE_CI_TARGET): the summary's numbers use only precise pairs and
# the figure draws the others hollow (a one-run DataLoader row at 100 % CI moves a ratio 2x).
ALLOCATOR_EFFECT_MAX_CI = 0.10
# An allocator effect is called real only beyond the spread of the ratio where none is expected
# (augbench.analysis.allocator_effect.null_spreads): this quantile of |log ratio| over the pairs
# whose glibc row does not fault, and only with at least MIN_NULL_PAIRS of them.
ALLOCATOR_NULL_QUANTILE = 0.95
MIN_NULL_PAIRS = 5

# "The model is fed": a data wait below this share of the training loop's time, the one
# definition the starvation and training tables share (augbench.planning.starvation_model.verdict:
# fed when the wait's whole interval is below it, starved when all of it is at or above it,
# borderline otherwise).
FED_WAIT = 0.05
# The training regime's out-of-sample check (augbench/analysis/training.py): a measured training
# throughput beyond this fraction of the starvation model's prediction, or a measured data wait
# more than TRAINING_WAIT_TOLERANCE (absolute share of the loop) from the predicted one, is flagged.
TRAINING_PREDICTION_TOLERANCE = 0.15
TRAINING_WAIT_TOLERANCE = 0.05
TRAINING_MODEL_MB: dict[str, float] = {"resnet18": 601.0, "resnet50": 3467.0, "sleep": 0.0}
# Host memory a CUDA context and the GPU libraries' loaded code add to a process: an
# assumption (no GPU measured here), named as such wherever a GPU job's memory is printed.
CUDA_CONTEXT_HOST_MB = 2500.0


@dataclass(frozen=True)
class MemoryHeadroom:
    """A job's predicted memory is ``model x factor + mb``: allocator slack and page-cache
    pages of the files it reads, which the model does not itemize."""

    factor: float = 1.2
    mb: float = 0.0


MEMORY_HEADROOM = MemoryHeadroom()


# -- quietness of the machine during a job (augbench/measuring/quietness.py; docs/methodology.md)
# ---------- Every timed job records what other processes did on its CPUs from its start to its
# result file; a row is "under load" (tidy's under_load, load_reason) when its job crossed any of
# these. Measured on amd-epyc-2c (the 2-core development VM), 2026-11-26, with micro (pillow) and
# cpu_dataloader (albumentationsx, memory and decode, 0 and 2 workers) jobs: quiet jobs read -0.03
# to +0.03 cores of other load run by hand and 0.04-0.05 under Snakemake (its own polling); with
# one competing busy loop 0.93-1.0 cores (up to 1.7 where other work ran too). One busy core more
# than halved the micro job's HorizontalFlip (13,000 -> 3,000-6,000 img/s); 0.72 cores of other
# work cut it 42 %, 0.25-0.45 cores moved it < 1 %.
# * Other processes' CPU time over the job's wall time above this fraction of its CPUs (0.25 core
#   of 2 here): five times the largest quiet reading, so tick accounting and the driver's polling
#   do not cross it, and low enough that a job filling its cores loses at most ~12 % to others
#   unflagged.
UNDER_LOAD_OTHER_CORES_FRACTION = 0.125
# * Steal (the hypervisor running another guest while this one wanted a CPU) above this share of
#   the CPUs' time: it falls on the vCPUs the job keeps busy, so it costs a job filling its cores
#   about that share of its throughput; above RELATIVE_CI_TARGET the neighbour moves the row more
#   than the row's own precision goal. This VM reads 0-0.3 % per job.
UNDER_LOAD_STEAL_FRACTION = RELATIVE_CI_TARGET
# * The fastest counted CPU's clock at the end more than this fraction below the start: beyond
#   the usual step between single- and all-core turbo, where thermal or power throttling (clocks
#   back to base, typically 25-40 % below turbo) shows. Not testable here (the VM reports one
#   fixed clock in /proc/cpuinfo and no cpufreq).
UNDER_LOAD_CLOCK_DROP = 0.15
# No verdict for a job shorter than this: /proc/stat counts in 10 ms ticks per CPU, so one second
# resolves other load to about 0.02 core.
QUIETNESS_MIN_WALL_SECONDS = 1.0
# The sample an engine process takes at its start, asleep, of what others load the machine with;
# paid once per engine process (a fifth of a second on each of a smoke run's ~36 jobs).
QUIETNESS_PRESTART_SECONDS = 0.2

# A timed job's whole process tree is sampled for its peak memory by a process of its own
# (augbench.measuring.memory_peak), since Snakemake's benchmark file samples every 30 s after a
# job's first 30 s and misses a long job's peaks: resident sets (statm, a counter) every
# JOB_MEMORY_SAMPLE_SECONDS, proportional sets (smaps_rollup, a page-table walk of about 10 ms per
# 600 MB resident on amd-epyc-2c) every JOB_MEMORY_PSS_EVERY-th sample and followed from the
# resident sets in between; on amd-epyc-2c (2026-11-30) the sampler used 9 % of one core beside a
# 3.2 GB tree (AlbumentationsX's pipeline DataLoader job, 2 workers) and 19 % beside a 5.1 GB one
# (Kornia's). Snakemake's own sampler reads the full smaps twice a second for 30 s.
JOB_MEMORY_SAMPLE_SECONDS = 0.25
JOB_MEMORY_PSS_EVERY = 4
# The sampler is a child of the job's engine, so the machine holds it with the job and Snakemake's
# benchmark counts it: its resident set, measured on amd-epyc-2c (2026-11-30, `python -m
# augbench.measuring.memory_peak` sampling a sleeping process: 15.2 MB resident, 8.9 MB
# proportional), is part of every timed job's predicted memory (augbench.planning.memory.predict).
JOB_MEMORY_SAMPLER_MB = 15.0


# The DataLoader's main process (collation, the hand-over from the workers, the timing loop) keeps
# about half a core busy while the workers fill the machine: on the 2-core machine of the shipped
# reference timings, going from 1 to 2 workers sped rows up 1.04-2.57x (median 1.6x), not 2x.
MAIN_PROCESS_CORES = 0.5


# The answer page calls a runner-up margin faster, slower or a tie only from a ratio interval of at
# least this level; below it (e.g. a DataLoader row of two epochs: a 50 % interval) the margin is
# shown with its interval and "not decided". Three default runs on one 2-core VM within 90 minutes
# named three different train_light winners from their 50 % intervals
# (docs/results/amd-epyc-2c/2026-11-26-default-run-5/).
ANSWER_MIN_INTERVAL_LEVEL = 0.9
# The level every decided call needs (augbench.decision: a median's interval ranks a row, a ratio's
# interval decides a margin, at an ACHIEVED coverage of at least this): the same fact as the answer
# page's minimum above, under the name the decision rule uses.
DECISION_LEVEL = ANSWER_MIN_INTERVAL_LEVEL
# The level an interval is built at where its process values allow it (augbench.decision): above
# DECISION_LEVEL so that a rule that is exact by construction still keeps the calibration's 10 %
# bar with room over 20-24 A/A pairs. Built at 0.90, 5 against 5 processes false-call 9.5 % of
# equal pairs and fail that bar by chance alone about a third of the time; built at 0.95 they give
# 0.968 (3.2 %), 4 against 4 give 0.971, 3 against 3 give [min, max] at 0.90, which still decides.
INTERVAL_LEVEL = 0.95
# A/A calibration (docs/calibration.md): the same work under two names, each row pair decided at
# DECISION_LEVEL; a kind of row passes with at least this many pairs at that level and at most this
# share of them called "faster" or "slower" (false calls).
CALIBRATION_MIN_PAIRS = 20
CALIBRATION_MAX_FALSE_CALL_RATE = 0.10
