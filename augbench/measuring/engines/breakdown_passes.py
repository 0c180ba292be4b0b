"""The pipeline breakdown's passes and rounds (augbench.measuring.engines.pipeline_breakdown, whose
docstring has the design): what one fresh process of each kind of pass times (``one_process``:
steps, whole, bare), the seeds and memory layout it runs with, a pipeline's rounds of such
processes until its stopping rule is met (``Measurement``), and what they measured
(``Breakdown``). Imported by the breakdown job after its thread policy is applied."""

from __future__ import annotations

import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from augbench.intervals import Interval, process_median_interval, ratio_interval
from augbench.measuring.engines import skeleton
from augbench.measuring.stopping import StoppingRule
from augbench.policy import BREAKDOWN_VALUES_PER_PROCESS

Unit = tuple[str, Callable[[Any], Any]]
Materialize = Callable[[Any, Any], Any]

# Warm-up seeds lie apart from the values' seeds (0, 1, 2, ...): the warm-up makes other draws
# than the first timed value, as a user's first calls do.
WARMUP_SEED_BASE = 1_000_000


@dataclass
class Breakdown:
    """Seconds per value, by the fresh process that measured them: one list per step (steps
    pass), the whole pipeline through the harness (whole pass) and the bare loop over the same
    object (bare pass)."""

    labels: list[str]
    images: int  # items per value: the distinct images times the passes over them
    passes: int = 1
    step_groups: list[list[list[float]]] = field(default_factory=list)  # process, value, step
    whole_groups: list[list[float]] = field(default_factory=list)
    bare_groups: list[list[float]] = field(default_factory=list)
    # Minor page faults of each whole-pass process over its timed values
    # (augbench.measuring.allocator): under glibc as shipped they differ from process to process
    # with its address layout.
    whole_faults_by_process: list[int] = field(default_factory=list)
    peak_rss_mb: float = 0.0  # the largest peak of the whole pass's processes
    # The address_layout of the interpreter of each round run in one (the job's rounds; not a
    # round that ``Measurement.step`` ran in the calling process).
    layouts: list[str] = field(default_factory=list)
    order: list[str] = field(default_factory=list)  # the kinds, in the order their processes ran

    @property
    def whole_seconds(self) -> list[float]:
        return [v for g in self.whole_groups for v in g]

    @property
    def bare_seconds(self) -> list[float]:
        return [v for g in self.bare_groups for v in g]

    @property
    def step_seconds(self) -> list[list[float]]:
        return [v for g in self.step_groups for v in g]

    def faults_per_image(self) -> float:
        return sum(self.whole_faults_by_process) / (len(self.whole_seconds) * self.images)

    def faults_per_image_by_process(self) -> list[float]:
        return [
            faults / (len(group) * self.images)
            for faults, group in zip(self.whole_faults_by_process, self.whole_groups, strict=True)
        ]

    def per_image(self, seconds: Sequence[float]) -> float:
        return statistics.median(seconds) / self.images

    def throughputs(self, groups: Sequence[Sequence[float]]) -> list[list[float]]:
        """Images per second, by process."""
        return [[self.images / s for s in g] for g in groups]

    def seconds_interval(self, groups: Sequence[Sequence[float]]) -> Interval:
        """The interval of the median seconds per image over these processes' values."""
        return process_median_interval([[s / self.images for s in g] for g in groups])

    def step_total_groups(self) -> list[list[float]]:
        return [[sum(value) for value in g] for g in self.step_groups]

    def step_medians(self) -> list[float]:
        """Median seconds per image of each step over the values."""
        return [
            self.per_image([run[i] for run in self.step_seconds]) for i in range(len(self.labels))
        ]

    def shares(self) -> list[float]:
        medians = self.step_medians()
        total = sum(medians)
        return [m / total if total > 0 else float("nan") for m in medians]

    def harness(self) -> Interval:
        """Whole (harness) over bare seconds: the ratio of the two medians, with its interval
        (independent processes of the same seeded work)."""
        return ratio_interval(
            self.seconds_interval(self.whole_groups), self.seconds_interval(self.bare_groups)
        )

    def composition(self) -> Interval:
        """Whole over the summed isolated steps, with its interval."""
        return ratio_interval(
            self.seconds_interval(self.whole_groups),
            self.seconds_interval(self.step_total_groups()),
        )


def steps_pass(
    units: Sequence[Unit], inputs: Sequence[Any], materialize: Materialize, passes: int = 1
) -> list[float]:
    """Seconds of each step over all inputs (``passes`` times), each step on the previous step's
    materialized output; only the step call and its materialization are inside its timer."""
    clock = time.perf_counter
    totals = [0.0] * len(units)
    for sample in [x for _ in range(passes) for x in inputs]:
        current = sample
        for i, (_, fn) in enumerate(units):
            start = clock()
            out = materialize(fn(current), current)
            totals[i] += clock() - start
            current = out
    return totals


def whole_pass(
    whole: Callable[[Any], Any], inputs: Sequence[Any], materialize: Materialize, passes: int = 1
) -> float:
    """Seconds of the library's composition over all inputs (``passes`` times) through the
    harness: one call per sample, the final output materialized, no timer inside. Each output
    stays alive until the next call returns, as in a user's loop (``out = compose(image)``) or
    a DataLoader worker's batch: when it is freed decides what the allocator reuses."""
    stream = [x for _ in range(passes) for x in inputs]
    out = None
    start = time.perf_counter()
    for sample in stream:
        out = materialize(whole(sample), sample)
    elapsed = time.perf_counter() - start
    del out
    return elapsed


def bare_pass(whole: Any, inputs: Sequence[Any], passes: int = 1) -> float:
    """Seconds of a plain loop over the same composition object: the call a user writes
    (``whole.call``: e.g. ``out = compose(image=image)["image"]``) and nothing else."""
    obj, call = whole.obj, whole.call
    out = None
    start = time.perf_counter()
    for _ in range(passes):
        for sample in inputs:
            out = call(obj, sample)
    elapsed = time.perf_counter() - start
    del out
    return elapsed


def reseed(units: Sequence[Unit], seed: int, whole: Any = None) -> None:
    """Seed every random source the steps and the composition draw from, so the passes of one
    round do the same work (same crops, same angles): their times are then comparable."""
    import random

    random.seed(seed)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(seed)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)
    for _, fn in units:
        inner = getattr(fn, "fn", fn)  # a MaskUnit wraps the library callable
        library_transform = getattr(inner, "albumentations_transform", None)
        if library_transform is not None:
            library_transform.set_random_seed(seed)
    own_seed = getattr(getattr(whole, "obj", None), "set_random_seed", None)
    if own_seed is not None:  # an A.Compose draws from its own generators
        own_seed(seed)


# The order of the fresh processes, two rounds: over each pair every kind follows every other
# kind once (S->W, W->B, B->S, S->B, B->W, W->S).
ROUNDS: tuple[tuple[str, ...], ...] = (("steps", "whole", "bare"), ("steps", "bare", "whole"))


def round_seeds(
    round_index: int, values: int = BREAKDOWN_VALUES_PER_PROCESS
) -> tuple[int, list[int]]:
    """The seeds of a round's processes: the warm-up's, then one per timed value. Every kind of
    pass in round ``round_index`` draws the same crops, flips and noise (steps, whole and bare
    compare the same work); rounds draw different ones. With 8 images a pass makes a few dozen
    draws, and a pipeline with random erasing or noise at p=0.5 costs what its draws cost: fixed
    seeds in every round measured one sample of them, a loop seeded otherwise another
    (tools/checks/compose_vs_rows.py seeds its interpreters with these, round by round)."""
    first = round_index * values
    return WARMUP_SEED_BASE + round_index, list(range(first, first + values))


def own_layout(inputs: Sequence[Any], seed: int) -> tuple[list[Any], list[bytearray]]:
    """The inputs copied into this process's own memory behind a pad of a seeded random size
    (and the pad, to keep while they are used).

    Where a buffer lies relative to the buffers a pipeline allocates moves its speed on this
    kind of machine (cache-set and page aliasing): two fresh interpreters doing the same thing
    differ by up to 1.8x here, and forks of one process all inherit its one layout.
    A process of its own therefore places its inputs at a random offset, so that the processes
    of a row sample the layouts a user's processes get instead of repeating one
    (docs/pipelines.md, "Fresh processes")."""
    import copy
    import random

    rng = random.Random(seed)
    pad = [bytearray(rng.randrange(1, 1 << 20)) for _ in range(rng.randrange(1, 8))]
    return [copy.deepcopy(x) for x in inputs], pad


def one_process(
    kind: str,
    units: Sequence[Unit],
    whole: Any,
    inputs: Sequence[Any],
    materialize: Materialize,
    values: int,
    warmups: int,
    passes: int,
    seed: int = 0,
    build: Callable[[], tuple[list[Unit], Any]] | None = None,
    round_index: int = 0,
) -> dict[str, Any]:
    """What one fresh process of ``kind`` measures: its inputs in a layout of its own
    (``own_layout``, seeded by ``seed``) and, with ``build``, its own pipeline objects built
    after them, as a user's process builds its Compose; ``warmups`` untimed passes, then
    ``values`` timed values, with the random draws of round ``round_index`` (``round_seeds``)."""
    warmup_seed, value_seeds = round_seeds(round_index, values)
    inputs, pad = own_layout(inputs, seed)
    if build is not None:
        units, whole = build()
    timed: dict[str, Callable[[], Any]] = {
        "steps": lambda: steps_pass(units, inputs, materialize, passes),
        "whole": lambda: whole_pass(whole, inputs, materialize, passes),
        "bare": lambda: bare_pass(whole, inputs, passes),
    }
    for _ in range(warmups):
        reseed(units, warmup_seed, whole)
        timed[kind]()
    seconds = []
    faults = 0
    for value_seed in value_seeds:
        reseed(units, value_seed, whole)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        seconds.append(timed[kind]())
        faults += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    del pad
    return {
        "seconds": seconds,
        "minor_faults": faults,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def precise_enough(result: Breakdown, rule: StoppingRule) -> bool:
    """The whole pipeline's median and the harness / bare ratio both meet ``rule`` (or its
    maximum number of values is reached)."""
    whole = result.whole_seconds
    if not rule.done(whole, result.throughputs(result.whole_groups)):
        return False
    if len(whole) >= rule.max_values:
        return True
    spread = result.harness().relative_half_width
    return spread is not None and spread <= rule.target


class Measurement:
    """One pipeline's rounds of fresh processes: ``run_round`` runs one round (a process of each
    kind, in the order of ``ROUNDS``, each ``one_process``, forked from the process that calls
    it: a round's fresh interpreter in a job), ``record`` adds it and says whether ``rule`` is
    met (``precise_enough``); ``step`` does both in this process. A value is ``passes`` passes
    over the inputs (so that it lasts long enough to time, ``stopping.passes_per_value``). The
    job runs its pipelines' rounds in turn, so a row's processes spread over the job's time
    instead of sharing one stretch of it (a machine that slows down for a few seconds then
    moves every row a little, not one row a lot, and the rows' intervals see it)."""

    def __init__(
        self,
        units: Sequence[Unit],
        whole: Any,
        inputs: Sequence[Any],
        materialize: Materialize,
        rule: StoppingRule,
        warmups: int = 1,
        passes: int = 1,
        values_per_process: int = BREAKDOWN_VALUES_PER_PROCESS,
        build: Callable[[], tuple[list[Unit], Any]] | None = None,
    ) -> None:
        self.units, self.whole, self.inputs, self.materialize = units, whole, inputs, materialize
        self.rule, self.warmups, self.passes = rule, warmups, passes
        self.values_per_process, self.build = values_per_process, build
        self.result = Breakdown([label for label, _ in units], len(inputs) * passes, passes)
        self.rounds = 0

    @classmethod
    def tally(
        cls,
        labels: Sequence[str],
        images: int,
        rule: StoppingRule,
        warmups: int,
        passes: int,
        values_per_process: int,
    ) -> Measurement:
        """A Measurement that only adds up rounds run elsewhere (``record``, ``next_round``):
        the pipeline's step ``labels`` and ``images`` per pass size its result; it has no
        pipeline to run (``run_round`` is not called on it)."""
        return cls(
            [(label, None) for label in labels], None, [None] * images, None,  # type: ignore[misc]
            rule, warmups, passes, values_per_process,
        )  # fmt: skip

    def next_round(self) -> dict[str, int]:
        """What a fresh interpreter needs to run this pipeline's next round (``run_round``)."""
        return {"round": self.rounds, "seed": len(self.result.order), "passes": self.passes}

    def run_round(self, round_index: int, first_seed: int) -> list[tuple[str, dict[str, Any]]]:
        """Round ``round_index``: one process of each kind, forked from this process in the
        round's order (``ROUNDS``), each with its own layout seed from ``first_seed`` on."""
        measured = []
        for offset, kind in enumerate(ROUNDS[round_index % len(ROUNDS)]):
            seed = first_seed + offset  # each process its own layout, reproducibly
            measured.append(
                (
                    kind,
                    skeleton.in_fresh_fork(
                        lambda kind=kind, seed=seed: one_process(
                            kind,
                            self.units,
                            self.whole,
                            self.inputs,
                            self.materialize,
                            self.values_per_process,
                            self.warmups,
                            self.passes,
                            seed,
                            self.build,
                            round_index,
                        ),
                        f"{kind} pass",
                    ),
                )
            )
        return measured

    def record(self, measured: Sequence[Sequence[Any]], layout: str | None = None) -> bool:
        """A round's processes (``run_round``'s, from an interpreter with this ``layout`` where
        one is named) added to the result; True once the rule is met."""
        result = self.result
        groups = {
            "steps": result.step_groups,
            "whole": result.whole_groups,
            "bare": result.bare_groups,
        }
        for kind, one in measured:
            if "seconds" not in one:
                raise RuntimeError(f"a {kind} pass's process failed: {one.get('reason')}")
            groups[kind].append(one["seconds"])
            result.order.append(kind)
            if kind == "whole":
                result.whole_faults_by_process.append(one["minor_faults"])
                result.peak_rss_mb = max(result.peak_rss_mb, one["peak_rss_mb"])
        if layout is not None:
            result.layouts.append(layout)
        self.rounds += 1
        return precise_enough(result, self.rule)

    def step(self) -> bool:
        """One round forked from this process; True once the rule is met."""
        return self.record(self.run_round(self.rounds, len(self.result.order)))

    def until_met(self) -> Breakdown:
        """Rounds forked from this process until the rule is met; what they measured."""
        while not self.step():
            pass
        return self.result
