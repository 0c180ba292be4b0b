"""The thread loaders of the cpu_dataloader engine (augbench.workload.loaders): the recipe's samples
made on threads of the main process, one thread per worker of the setting, batched and collated as
the DataLoader does (``default_collate``), read through the same timed-epoch machinery
(augbench.measuring.engines.dataloader.timing): each ``iter()`` is one epoch of the sampler's items.

- ``thread``: torchdata.nodes ``ParallelMapper(method="thread")`` where torchdata is installed;
  else a ``concurrent.futures.ThreadPoolExecutor`` started once (as persistent workers are) with
  ``workers x prefetch_factor`` batches in flight, the DataLoader's depth;
- ``spdl``: SPDL's ``PipelineBuilder``, the recipe piped with thread concurrency ``workers``,
  aggregated into batches, collated, ``workers x prefetch_factor`` batches buffered at the sink.

With no workers a thread loader makes every sample in the main thread, as the DataLoader does.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from augbench.policy import DATALOADER_THREADS
from augbench.workload import loaders


def _collate(samples: list[Any]) -> Any:
    from torch.utils.data import default_collate

    return default_collate(samples)


def _thread_init() -> None:
    """A loader thread runs under the regime's thread policy (the process's, already applied)."""
    DATALOADER_THREADS.apply_runtime()


def _batches(sampler: Any, batch_size: int) -> Iterator[list[int]]:
    """The sampler's indices in batches, read lazily (an endless sampler stays endless)."""
    indices = iter(sampler)
    while batch := list(itertools.islice(indices, batch_size)):
        yield batch


class _ThreadedLoader:
    """What both thread loaders share: ``threads`` threads, ``threads x prefetch_factor``
    batches ahead, and with no threads every sample made in the calling thread, as the
    DataLoader does without workers."""

    def __init__(
        self,
        dataset: Any,
        sampler: Any,
        batch_size: int,
        threads: int,
        prefetch_factor: int,
        timeout: float,
    ) -> None:
        self.dataset, self.sampler = dataset, sampler
        self.batch_size, self.threads = batch_size, threads
        self.depth = max(1, threads * prefetch_factor)
        self.timeout = timeout or None

    def __iter__(self) -> Iterator[Any]:
        if not self.threads:
            batches = _batches(self.sampler, self.batch_size)
            return (_collate([self.dataset[i] for i in b]) for b in batches)
        return self._threaded()

    def _threaded(self) -> Iterator[Any]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class ThreadLoader(_ThreadedLoader):
    """``thread``: samples on ``threads`` threads, ``threads x prefetch_factor`` batches ahead
    (module docstring); ``impl`` is what it measures (augbench.workload.loaders.thread_impl)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.impl = loaders.thread_impl()
        self.pool: ThreadPoolExecutor | None = None
        if self.threads and self.impl == loaders.FUTURES_IMPL:
            self.pool = ThreadPoolExecutor(
                self.threads, thread_name_prefix="augbench-loader", initializer=_thread_init
            )

    def _threaded(self) -> Iterator[Any]:
        if self.pool is None:
            return self._torchdata()
        return self._futures(_batches(self.sampler, self.batch_size))

    def _futures(self, batches: Iterator[list[int]]) -> Iterator[Any]:
        assert self.pool is not None
        pending: collections.deque[list[Future[Any]]] = collections.deque()

        def submit() -> None:
            batch = next(batches, None)
            if batch is not None:
                pending.append([self.pool.submit(self.dataset.__getitem__, i) for i in batch])

        for _ in range(self.depth):
            submit()
        while pending:
            futures = pending.popleft()
            samples = [f.result(timeout=self.timeout) for f in futures]
            submit()
            yield _collate(samples)

    def _torchdata(self) -> Iterator[Any]:
        """A graph per epoch: its threads start with the epoch's first batch, inside its clock."""
        from torchdata.nodes import (
            Batcher,
            IterableWrapper,
            Loader,
            Mapper,
            ParallelMapper,
            Prefetcher,
        )

        node = ParallelMapper(
            IterableWrapper(iter(self.sampler)),
            map_fn=self.dataset.__getitem__,
            num_workers=self.threads,
            in_order=True,
            method="thread",
        )
        node = Mapper(Batcher(node, self.batch_size, drop_last=False), _collate)
        yield from Loader(Prefetcher(node, prefetch_factor=self.depth))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None

    def __del__(self) -> None:
        self.close()


class SpdlLoader(_ThreadedLoader):
    """``spdl``: SPDL's pipeline, the recipe on ``threads`` threads (module docstring)."""

    impl = loaders.SPDL_IMPL

    def _threaded(self) -> Iterator[Any]:
        return self._pipeline()

    def _pipeline(self) -> Iterator[Any]:
        """A pipeline per epoch: its threads start with the epoch's first batch, in its clock."""
        from spdl.pipeline import PipelineBuilder

        pipeline = (
            PipelineBuilder()
            .add_source(iter(self.sampler))
            .pipe(self.dataset.__getitem__, concurrency=self.threads, output_order="input")
            .aggregate(self.batch_size, drop_last=False)
            .pipe(_collate)
            .add_sink(self.depth)
            .build(num_threads=self.threads, max_failures=0)
        )
        with pipeline.auto_stop():
            yield from pipeline.get_iterator(timeout=self.timeout or 300.0)


def thread_loader(
    name: str,
    dataset: Any,
    sampler: Any,
    batch_size: int,
    threads: int,
    prefetch_factor: int,
    timeout: float,
) -> ThreadLoader | SpdlLoader:
    """The loader ``name`` (``thread`` or ``spdl``) over ``dataset`` in ``sampler``'s order."""
    cls = SpdlLoader if name == loaders.SPDL else ThreadLoader
    return cls(dataset, sampler, batch_size, threads, prefetch_factor, timeout)
