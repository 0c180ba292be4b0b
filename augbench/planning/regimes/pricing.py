"""What the cost model shares across job kinds: the learned per-job model of one (kind, library),
an estimate, and the base every kind's pricing extends.

A regime module declares how its kinds are priced (a :class:`Pricing` of its own: the work its
rows took, what its rows teach the model, how a planned job is priced); augbench.planning.cost
learns from a finished run's timings through those hooks and prices a plan with them.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

Key = tuple[str, str]  # (kind, library)


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
    # micro: what each transform adds to a process round beyond its timed passes and preflight
    # (its construction and clean-up: the rows' worker_seconds), so a round of few transforms
    # costs less than one of many; 0 where the rows record none (kept in overhead_s).
    transform_round_s: float = 0.0
    # DataLoader kinds: "<transform>|<setting>|<arm>" -> s/image, and the share of num_runs the
    # rows used; breakdown: the share of max_values.
    arm_s: dict[str, float] = field(default_factory=dict)
    run_share: float = 1.0
    # DataLoader kinds: the job's own baselines (the transport baseline), s/image per setting.
    baseline_s: dict[str, float] = field(default_factory=dict)
    # resize_dataset: seconds per megapixel read and written (decode, Lanczos, JPEG encode), and
    # per image (each archive member read, written and hashed; 0 in a model learned from one size).
    per_megapixel_s: float = 0.0
    per_file_s: float = 0.0
    # build_env: the seconds a build adds where uv's cache holds no wheel of a package and
    # compiles it (once per cache); overhead_s is a build from a cache that has them all.
    cache_fill_s: float = 0.0
    # Whether the local rows could stop early (their maximum above their minimum): otherwise the
    # shares above say nothing and are borrowed (augbench.planning.cost.borrow_shares) or left at
    # the maximum.
    share_observed: bool = False
    # DataLoader kinds whose results record job_timing: a process's fixed cost (start, imports)
    # and each setting's beyond its rows (loaders, workers, baselines' set-up, preloading).
    process_s: float = 0.0
    setting_s: dict[str, float] = field(default_factory=dict)
    # ... and, where the rows say how many loaders each setting started, that fixed time per
    # loader start (a row's fork, each arm's loader and workers, its warm-up) and the hand-over
    # probe's apart (decode settings with workers run it whatever their baselines): what it
    # took beyond its batch periods (stopping.handover_probe_seconds), which an estimate adds to
    # the periods of the job's own batch size.
    start_s: dict[str, float] = field(default_factory=dict)
    handover_fixed_s: dict[str, float] = field(default_factory=dict)
    # DataLoader kinds: the usable cores of the machine the rows were measured on (0: unknown),
    # so a worker count is priced for the cores of the machine it will run on.
    cores: int = 0
    # training: the step's seconds per image, per "<accelerator>|<model>|<device>" (a real
    # model's; device cpu or cuda).
    step_s: dict[str, float] = field(default_factory=dict)
    # DataLoader kinds with sized epochs (--window-seconds): "<transform>|<setting>" -> images per
    # timed epoch the rows used. The engine sizes them from each row's preflight
    # (augbench.measuring.stopping.window_batches), which the plan does not know before the run.
    epoch_images: dict[str, float] = field(default_factory=dict)
    # DataLoader kinds with fresh processes (--processes): a later process's seconds beyond its
    # timed epochs (its interpreter, imports, items, and each row's loader start and warm-up).
    later_process_s: float = 0.0
    # DataLoader kinds: start_s and later_process_s learned without the loaders' warm-up epochs,
    # which the estimate prices per recipe at the planned batch; a model file written before
    # (false when absent) keeps them in those fixed times and is priced as it was learned.
    warmups_apart: bool = False
    # DataLoader kinds: each one-process row's relative interval at the stopping rule's first
    # look times its epoch's seconds (augbench.measuring.stopping.expected_values): a row of
    # longer epochs stops sooner. Without them: run_share.
    epoch_spread_s: list[float] = field(default_factory=list)
    # micro: seconds per image of catalog transforms the run did not measure, from the shipped
    # transform-cost prior moved to this model (augbench.planning.transform_prior.apply); filled
    # where models are loaded for a plan, never stored with them.
    prior_s: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "per_image_s": self.per_image_s, "overhead_s": self.overhead_s,
            "process_share": self.process_share, "megapixels": self.megapixels,
            "arm_s": self.arm_s, "run_share": self.run_share, "baseline_s": self.baseline_s,
            "per_megapixel_s": self.per_megapixel_s, "per_file_s": self.per_file_s,
            "process_s": self.process_s,
            "setting_s": self.setting_s, "share_observed": self.share_observed,
            "slope": self.slope, "overhead_per_mp_s": self.overhead_per_mp_s,
            "transform_round_s": self.transform_round_s,
            "cores": self.cores, "step_s": self.step_s, "epoch_images": self.epoch_images,
            "later_process_s": self.later_process_s, "epoch_spread_s": self.epoch_spread_s,
            "cache_fill_s": self.cache_fill_s, "start_s": self.start_s,
            "handover_fixed_s": self.handover_fixed_s, "warmups_apart": self.warmups_apart,
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
            per_file_s=float(entry.get("per_file_s", 0.0)),
            process_s=float(entry.get("process_s", 0.0)),
            setting_s=dict(entry.get("setting_s", {})),
            share_observed=bool(entry.get("share_observed", entry.get("process_share", 1.0) < 1)),
            slope=dict(entry.get("slope", {})),
            overhead_per_mp_s=float(entry.get("overhead_per_mp_s", 0.0)),
            transform_round_s=float(entry.get("transform_round_s", 0.0)),
            cores=int(entry.get("cores", 0)),
            step_s=dict(entry.get("step_s", {})),
            epoch_images=dict(entry.get("epoch_images", {})),
            later_process_s=float(entry.get("later_process_s", 0.0)),
            epoch_spread_s=[float(v) for v in entry.get("epoch_spread_s", [])],
            cache_fill_s=float(entry.get("cache_fill_s", 0.0)),
            start_s=dict(entry.get("start_s", {})),
            handover_fixed_s=dict(entry.get("handover_fixed_s", {})),
            warmups_apart=bool(entry.get("warmups_apart", False)),
        )  # fmt: skip

    def seconds_per_image(self, transform: str, megapixels: float = 0.0) -> float:
        """Seconds per image of ``transform`` (without a row of its own: the prior's, else the
        library's median), scaled from the pixels it was measured at to ``megapixels`` (when both
        are known) by its fitted exponent."""
        typical = statistics.median(self.per_image_s.values())
        seconds = self.per_image_s.get(transform, self.prior_s.get(transform, typical))
        measured = self.megapixels.get(transform) or median_of(self.megapixels.values())
        slope = self.slope.get(transform, 1.0)
        return seconds * (megapixels / measured) ** slope if megapixels and measured else seconds


def median_of(values: Any) -> float:
    """The median of the non-zero values, 0 without any."""
    values = [v for v in values if v]
    return statistics.median(values) if values else 0.0


# Pixel ranges narrower than this ratio say nothing about how a cost grows with pixels.
MIN_PIXEL_RATIO = 2.0


def fit_line(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(a, b) of ``seconds = a + b x megapixels`` by least squares over (megapixels, seconds)
    points, both at least 0 (a micro process round: imports, then its decoded cache; a resize per
    image: its own time, then its pixels); sizes closer than MIN_PIXEL_RATIO: the median, b = 0."""
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


@dataclass(frozen=True)
class Estimate:
    """Local seconds of one job: expected (early stopping as observed locally) and at most."""

    expected: float
    most: float


class PricedJob(Protocol):
    """What a pricing reads of a planned job (augbench.planning.regimes.records.Job)."""

    transforms: tuple[str, ...]
    megapixels: float
    share: int


def nested() -> defaultdict[Key, defaultdict[str, list[float]]]:
    return defaultdict(lambda: defaultdict(list))


@dataclass
class Learned:
    """What a local run's rows teach, per (kind, library), before the model is fitted: each
    pricing's :meth:`Pricing.learn_row` and :meth:`Pricing.learn_file` add to it."""

    per_image: defaultdict[Key, defaultdict[str, list[float]]] = field(default_factory=nested)
    pixels: defaultdict[Key, defaultdict[str, list[float]]] = field(default_factory=nested)
    # Early-stopped rows: (megapixels, seconds per image of their preflight) per transform.
    stopped: defaultdict[Key, defaultdict[str, list[tuple[float, float]]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    arms: defaultdict[Key, defaultdict[str, list[float]]] = field(default_factory=nested)
    baselines: defaultdict[Key, defaultdict[str, list[float]]] = field(default_factory=nested)
    epochs: defaultdict[Key, defaultdict[str, list[float]]] = field(default_factory=nested)
    steps: defaultdict[Key, defaultdict[str, list[float]]] = field(default_factory=nested)
    shares: defaultdict[Key, list[float]] = field(default_factory=lambda: defaultdict(list))
    run_shares: defaultdict[Key, list[float]] = field(default_factory=lambda: defaultdict(list))
    spreads: defaultdict[Key, list[float]] = field(default_factory=lambda: defaultdict(list))
    laters: defaultdict[Key, list[float]] = field(default_factory=lambda: defaultdict(list))
    # micro: each row's seconds per process beyond its passes and preflight.
    transform_rounds: defaultdict[Key, list[float]] = field(
        default_factory=lambda: defaultdict(list)
    )
    cores: defaultdict[Key, list[int]] = field(default_factory=lambda: defaultdict(list))
    observed: set[Key] = field(default_factory=set)

    def absorb(self, other: Learned) -> None:
        """Add what ``other`` learned (one result file's rows, learned apart so that a file that
        fails half-way teaches nothing)."""
        for name in self.__dataclass_fields__:
            mine, theirs = getattr(self, name), getattr(other, name)
            if isinstance(mine, set):
                mine |= theirs
                continue
            for key, found in theirs.items():
                if isinstance(found, Mapping):
                    for inner, values in found.items():
                        mine[key][inner].extend(values)
                else:
                    mine[key].extend(found)

    def model(self, key: Key, fits: Mapping[str, tuple[float, float, float]]) -> KindModel:
        """The fields learned from rows (``fits``: transform -> seconds, megapixels, slope);
        augbench.planning.cost adds what it learns from the jobs' benchmark files."""

        def medians(found: Mapping[str, list[float]]) -> dict[str, float]:
            return {name: statistics.median(v) for name, v in found.items()}

        return KindModel(
            {t: fit[0] for t, fit in fits.items()},
            process_share=statistics.fmean(self.shares[key]) if self.shares[key] else 1.0,
            megapixels={t: fit[1] for t, fit in fits.items()},
            slope={t: fit[2] for t, fit in fits.items()},
            arm_s=medians(self.arms[key]),
            run_share=statistics.fmean(self.run_shares[key]) if self.run_shares[key] else 1.0,
            baseline_s=medians(self.baselines[key]),
            share_observed=key in self.observed,
            cores=min(self.cores[key]) if self.cores[key] else 0,
            step_s=medians(self.steps[key]),
            epoch_images=medians(self.epochs[key]),
            epoch_spread_s=sorted(self.spreads[key]),
            later_process_s=(
                max(statistics.median(self.laters[key]), 0.0) if self.laters[key] else 0.0
            ),
            warmups_apart=True,
            transform_round_s=(
                statistics.median(self.transform_rounds[key]) if self.transform_rounds[key] else 0.0
            ),
        )


@dataclass(frozen=True)
class JobTiming:
    """A result file's own account of its job's time (DataLoader jobs' ``job_timing``): its
    setting, the work its rows did in its first process plus its later processes' time, the
    setting's wall time and its imports."""

    setting: str
    work_s: float
    setting_s: float
    import_s: float
    # The setting's loader starts (each ok row's arms, and its transport baseline's), which share
    # its fixed time beyond the hand-over probe's seconds; 0: not known.
    loader_starts: int = 0
    handover_s: float = 0.0
    # Of handover_s, what its batch periods at the job's own transport rate do not account for.
    handover_fixed_s: float = 0.0
    # The first process's warm-up epochs (one per loader of each row), at the arms' rates.
    warmup_s: float = 0.0


class Pricing:
    """How the cost model learns a job kind from a local run and prices a planned job of it. A
    kind whose rows do not say what its job costs is priced by its measured wall time
    (``wall_time_only``)."""

    name = ""
    wall_time_only = False
    # Whether a model without per-transform rows still prices a job (else the assumed rates).
    prices_without_rows = False
    # Whether a job's fixed cost grows with the megapixels it holds (else a median).
    overhead_grows_with_pixels = False
    # The kind whose model of the same library prices what this kind never measured (its
    # estimate finds it as ``params["single_model"]``); '' for none.
    single_kind = ""

    def params(self, metadata: Mapping[str, Any]) -> Mapping[str, Any]:
        """The job's parameters as its result file records them."""
        return metadata["benchmark_params"]

    def row_work(self, row: Mapping[str, Any], params: Mapping[str, Any]) -> float:
        """Seconds of measured work an ok row took (what its job's time holds beyond its fixed
        cost)."""
        raise NotImplementedError

    def counts_row(self, name: str, row: Mapping[str, Any]) -> bool:
        """Whether an ok row is priced on its own (not part of another's passes)."""
        return True

    def learn_row(
        self,
        learned: Learned,
        key: Key,
        name: str,
        row: Mapping[str, Any],
        params: Mapping[str, Any],
    ) -> None:
        """What an ok row teaches beyond its seconds per image."""

    def learn_file(
        self,
        learned: Learned,
        key: Key,
        payload: Mapping[str, Any],
        params: Mapping[str, Any],
        work: float,
    ) -> tuple[float, JobTiming | None]:
        """What a result file teaches once (its rows' ``work`` done): more work its job did
        outside its rows, and the file's own timing where it records one."""
        return 0.0, None

    def rounds(self, results: Mapping[str, Any]) -> int:
        """How many times the job paid its fixed cost (its process rounds)."""
        return 1

    def estimate(self, model: KindModel, job: PricedJob, params: Mapping[str, Any]) -> Estimate:
        raise NotImplementedError


class WallTime(Pricing):
    """A fixed amount of work: its measured wall time (per library)."""

    name = "whole_job"
    wall_time_only = True


# -- the measuring policy a job runs under (its --policy flag) ----------------------------------
def policy_of(params: Mapping[str, Any]) -> dict[str, Any]:
    policy = params.get("policy")
    return (json.loads(policy) if isinstance(policy, str) else policy) or {}


def preflight_items(params: Mapping[str, Any]) -> int:
    policy = policy_of(params)
    return int(policy.get("preflight_items", 0)) if policy.get("enabled", True) else 0


# Within this factor of the slow-transform threshold (either side), a predicted per-image time
# cannot say on which side the job's own preflight will fall: the probability of an early stop
# rises across the band (the validation run's borderline transforms, docs/cloud.md).
SLOW_BAND = 1.25


def stop_probability(seconds_per_image: float, params: Mapping[str, Any]) -> float:
    policy = policy_of(params)
    if not policy or not policy.get("enabled", True):
        return 0.0
    ratio = seconds_per_image / policy["max_seconds_per_item"]
    if ratio <= 0:
        return 0.0
    # Linear in log(ratio): 0 at threshold / SLOW_BAND, 1/2 at the threshold, 1 at x SLOW_BAND.
    return min(max(0.5 + math.log(ratio) / (2 * math.log(SLOW_BAND)), 0.0), 1.0)
