"""The decode floor of the cpu_dataloader engine: pure decoding of one epoch's files in the
loader's number of processes, nothing else (what decoding alone costs at that parallelism;
``baselines.decode_floor`` times it, and ``timing`` beside each decode-scope recipe)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

_FLOOR_DECODE: Callable[[Any], Any] | None = None  # inherited by the forked floor processes


def _decode_all(paths: list[Any]) -> int:
    assert _FLOOR_DECODE is not None
    for path in paths:
        _FLOOR_DECODE(path)
    return len(paths)


class DecodeFloor:
    """Pure decoding of one epoch's files in ``processes`` processes, nothing else.

    One process: a loop in this process. More: forked processes, started (untimed) when the
    floor is created, each decode 1/processes of the files; the clock spans the submission to the
    last one finishing. Create it before any DataLoader so the pool forks a process without
    loader threads; ``close()`` ends the pool.
    """

    def __init__(self, decode: Callable[[Any], Any], paths: list[Any], processes: int) -> None:
        global _FLOOR_DECODE
        _FLOOR_DECODE = decode
        self.processes = processes
        self.use(paths)
        self.pool: Any = None
        if processes > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            context = multiprocessing.get_context("fork")
            self.pool = ProcessPoolExecutor(processes, mp_context=context)
            list(self.pool.map(_decode_all, [c[:1] for c in self.chunks]))  # start them all

    def use(self, paths: list[Any]) -> None:
        """Decode ``paths`` in each epoch from now on (the pool's processes stay)."""
        self.paths = paths
        self.chunks = [paths[i :: self.processes] for i in range(self.processes)]

    def epoch(self) -> tuple[int, float]:
        """Images decoded and seconds (the shape of ``timing.timed_epoch``)."""
        start = time.perf_counter()
        if self.pool is None:
            done = _decode_all(self.paths)
        else:
            done = sum(self.pool.map(_decode_all, self.chunks))
        return done, time.perf_counter() - start

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None
