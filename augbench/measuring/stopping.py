"""When a repeated measurement is precise enough to stop: one rule for every timing engine.

A row reports the median of its values, so its precision is the relative half-width of the
interval of that median (augbench.intervals: the order-statistic interval of one process's values,
or a bootstrap over processes where a row has several; the wider side over the median). Engines
repeat a measurement until that is at most ``policy.RELATIVE_CI_TARGET`` or until their configured
maximum number of values, never fewer than their minimum; every row records what it reached, and
the summary flags rows that stopped above the target.

Checking after every new value and stopping at the first lucky one makes the reported interval
too narrow (the rule picks the moment it looks best). The rule therefore looks only at block
boundaries: at the minimum, then every ``block`` values after it (the minimum by default), and
engines that add values in groups (a process's values, a round of arms) check once per group.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from augbench.intervals import median_interval, process_median_interval
from augbench.policy import (
    BREAKDOWN_FIRST_LOOK_PROCESSES,
    HANDOVER_BUSY_PACE,
    HANDOVER_MIN_IDLE_WAIT_S,
    HANDOVER_PROBES,
    MICRO_MAX_LOOPS,
    MICRO_MIN_VALUE_SECONDS,
    RELATIVE_CI_TARGET,
)


def relative_ci(
    values: Sequence[float], groups: Sequence[Sequence[float]] | None = None
) -> float | None:
    """Relative half-width of the interval of the median of ``values`` (of ``groups``, one list
    per process, where given); None with fewer than two values."""
    interval = process_median_interval(groups) if groups else median_interval(values)
    return interval.relative_half_width


@dataclass(frozen=True)
class StoppingRule:
    """Take at least ``min_values`` and at most ``max_values``; stop earlier once the relative
    interval of the median is at most ``target``, looked at only at the minimum and then every
    ``block`` values (``min_values`` when 0)."""

    min_values: int
    max_values: int
    target: float = RELATIVE_CI_TARGET
    block: int = 0

    def __post_init__(self) -> None:
        if self.min_values < 1 or self.max_values < self.min_values:
            raise ValueError(f"bad stopping bounds {self.min_values}..{self.max_values}")

    @property
    def step(self) -> int:
        return max(1, self.block or self.min_values)

    def looks_at(self, n: int) -> bool:
        """Whether the rule looks at the interval after ``n`` values (a block boundary)."""
        return n >= self.min_values and (n - self.min_values) % self.step == 0

    def done(
        self, values: Sequence[float], groups: Sequence[Sequence[float]] | None = None
    ) -> bool:
        n = len(values)
        if n >= self.max_values:
            return True
        if not self.looks_at(n):
            return False
        ci = relative_ci(values, groups)
        return ci is not None and ci <= self.target


def expected_values(
    rule: StoppingRule, spreads: Sequence[float], length: float, paired_below: int = 0
) -> float:
    """How many values ``rule`` is expected to take from a row whose values each last ``length``
    (e.g. seconds per epoch): the mean over ``spreads``, each as likely, of the count it stops at.

    A spread is a measured row's relative interval at the rule's first look times the length of
    its values: jitter of a fixed size, so a row of longer values is relatively quieter and stops
    sooner. At a later look the interval is the first look's scaled as the interval of evenly
    spread normal values (:func:`relative_ci` of their quantiles) is between the two counts: the
    order-statistic interval can widen before it narrows. At a look below ``paired_below`` values
    the ratios of the values to a companion's of like length must be precise too (the DataLoader's
    bare loop): a ratio of two independent values spreads sqrt(2) times as wide. Without
    spreads: the maximum."""
    if not spreads or length <= 0:
        return float(rule.max_values)
    looks = [n for n in range(rule.min_values, rule.max_values) if rule.looks_at(n)]
    first = _normal_width(rule.min_values)
    widening = {
        n: (_normal_width(n) / first if first else 1.0) * (math.sqrt(2) if n < paired_below else 1)
        for n in looks
    }
    counts = []
    for spread in spreads:
        relative = spread / length
        stops = (n for n in looks if relative * widening[n] <= rule.target)
        counts.append(next(stops, rule.max_values))
    return sum(counts) / len(counts)


@functools.cache
def _normal_width(n: int) -> float:
    """The relative interval of ``n`` values at evenly spaced quantiles of a normal distribution
    of a small spread (the spread cancels in a ratio of two counts)."""
    normal = NormalDist(1.0, 0.01)
    return relative_ci([normal.inv_cdf((i + 0.5) / n) for i in range(n)]) or 0.0


def passes_per_value(seconds_per_image: float, num_images: int) -> int:
    """Passes over the images per timed value, so that one value lasts at least
    ``MICRO_MIN_VALUE_SECONDS`` (pyperf's own loop calibration targets the same): a fast
    transform's value is then not a handful of milliseconds at the mercy of one interrupt."""
    per_pass = max(seconds_per_image * num_images, 1e-9)
    return max(1, min(MICRO_MAX_LOOPS, math.ceil(MICRO_MIN_VALUE_SECONDS / per_pass)))


def epoch_batches(batches_per_run: int, workers: int) -> int:
    """Batches per timed DataLoader epoch: ``batches_per_run`` rounded up to a whole number of
    batches per worker, so each of ``workers`` workers makes the same number and the epoch runs
    at the rate they deliver together (3 batches from 2 workers time one worker's tail)."""
    per = max(1, workers)
    return per * math.ceil(max(1, batches_per_run) / per)


def batches_ahead(workers: int, prefetch_factor: int) -> int:
    """Batches a DataLoader has in flight: ``prefetch_factor`` per worker, none without workers."""
    return prefetch_factor * workers if workers else 0


def handover_window_batches(workers: int) -> int:
    """Batches of the hand-over probe's own timed window, which sets its batch period."""
    return epoch_batches(max(8, 4 * workers), workers)


def handover_idle_wait(ahead: int, period: float) -> float:
    """The hand-over probe's wait before each idle read, at a batch period of ``period``: long
    enough for every worker to finish what is in flight and go idle."""
    return max(HANDOVER_MIN_IDLE_WAIT_S, 2.0 * (ahead + 1) * period)


def handover_probe_seconds(period: float, workers: int, prefetch_factor: int) -> float:
    """Seconds the hand-over probe (augbench.measuring.engines.dataloader.baselines
    .measure_handover) spends beyond starting its loader, at a batch period of ``period``: its
    warm-up, the batches in flight and its window, read back to back; the waits before its idle
    reads; and its paced reading (settling, then the busy and the read probes). The reads
    themselves take milliseconds; the cost model counts the probe with this."""
    ahead = batches_ahead(workers, prefetch_factor)
    batches = max(1, workers) + ahead + 1 + handover_window_batches(workers)
    paced = (ahead + 1 + 2 * HANDOVER_PROBES) * HANDOVER_BUSY_PACE * period
    return batches * period + HANDOVER_PROBES * handover_idle_wait(ahead, period) + paced


# The most batches one sized window holds (window_batches): a preflight that ran far faster than
# the loader can cannot make a timed epoch run for minutes.
MAX_WINDOW_BATCHES = 256


def window_batches(
    seconds: float, rate: float, batch_size: int, batches_per_run: int, workers: int, cores: int
) -> int:
    """Batches per timed epoch that last about ``seconds`` at ``rate`` images per second per
    process (the preflight's, one sample at a time) times the workers that run at once
    (``min(workers, cores)``, at least one), at least ``batches_per_run``, at most
    MAX_WINDOW_BATCHES, in whole batches per worker (:func:`epoch_batches`). A window of a few
    batches is one round of one batch per worker: its rate is the workers' start from idle more
    than their pace, and does not repeat from one process to the next."""
    wanted = batches_per_run
    if seconds > 0 and rate > 0 and math.isfinite(rate):
        parallel = max(1, min(workers, cores))
        wanted = max(batches_per_run, math.ceil(seconds * rate * parallel / max(1, batch_size)))
    return epoch_batches(min(wanted, MAX_WINDOW_BATCHES), workers)


def training_counts(workers: int, warmup_steps: int, prefetch_factor: int) -> tuple[int, int]:
    """(untimed warm-up steps, loader-only batches) of one training feed
    (augbench.measuring.engines.training.measure_feed, and the cost model's count of it): the
    loader-only pass reads at least 6 batches and 3 per worker; the warm-up drains what the workers
    prefetched meanwhile, so it takes at least one step more than they hold."""
    return max(warmup_steps, prefetch_factor * workers + 1), max(6, 3 * workers)


def model_alone_counts(warmup_steps: int, model_steps: int) -> tuple[int, int]:
    """(untimed, timed) steps of a training feed's step-alone pass
    (augbench.measuring.engines.training .model_rate, and the cost model's count of it): as many
    warm-up steps as the loop is configured with, at least one (allocations, cuDNN's choices, a
    GPU's clocks leaving idle), then ``model_steps`` timed ones."""
    return max(1, warmup_steps), model_steps


# The pipeline breakdown's kinds of pass (augbench.measuring.engines.pipeline_breakdown): each runs
# in its own fresh processes, so each costs the same passes.
BREAKDOWN_KINDS = ("steps", "whole", "bare")


def breakdown_value_bounds(min_values: int, max_values: int, per_process: int) -> tuple[int, int]:
    """The fewest and most timed values per kind of pass, in whole processes of
    ``per_process`` values (a round runs one process of each kind); the fewest span at least
    ``policy.BREAKDOWN_FIRST_LOOK_PROCESSES`` processes where the most do."""
    least = per_process * math.ceil(max(1, min_values) / per_process)
    most = max(least, per_process * math.ceil(max(1, max_values) / per_process))
    least = max(least, min(most, per_process * BREAKDOWN_FIRST_LOOK_PROCESSES))
    return least, most


def breakdown_passes(values: int, warmups: int, per_process: int) -> int:
    """Passes over the images for ``values`` timed values of one kind: every process of
    ``per_process`` values first runs ``warmups`` untimed passes."""
    processes = math.ceil(max(1, values) / per_process)
    return processes * (warmups + per_process)


# The lazy-output diagnostic's untimed passes over its images before the timed ones.
LAZY_WARMUP_PASSES = 1


def lazy_probe_calls(num_images: int, repeats: int) -> int:
    """Calls of one transform in the lazy-output diagnostic, each counted with a materialization
    (augbench.measuring.engines.lazy_outputs .probe, and the cost model's count of it): two on
    the first image (its output described; the same object twice?), then the warm-up passes and
    ``repeats`` timed passes over every image."""
    return 2 + (LAZY_WARMUP_PASSES + repeats) * num_images
