"""The bare loop: what a user writes without any harness, as a baseline for the cpu_dataloader rows.

A ``torch.utils.data.Dataset`` subclass whose ``__getitem__`` reads the image (the scope's load
step: the preloaded image, or the library's decoder on the path) and applies the library's own
transform objects one after the other; a stock ``DataLoader`` with the default sampler, the
default collate, no timeout and no ``worker_init_fn`` other than the thread policy every
cpu_dataloader process runs under. The engine (``augbench.measuring.engines.cpu_dataloader``) times
it epoch by epoch, interleaved with its own loader, so ``regime_vs_bare`` shows what the harness
(its sampler, dataset wrapper, worker records, timeout) costs.

Imported only inside a library env (it subclasses a torch class at import).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from augbench.policy import DATALOADER_THREADS


class UserDataset(Dataset):
    """Images (or paths) cycled to an epoch of ``length`` samples, each through ``transforms``.

    ``length`` is the epoch size a user picks; the engine sets it before each epoch (a short
    warm-up epoch, then timed epochs), as a user sets an epoch length on their own dataset.
    """

    def __init__(
        self,
        items: list[Any],
        transforms: list[Callable[[Any], Any]],
        length: int,
        load: Callable[[Any], Any] | None = None,
    ) -> None:
        self.items = items
        self.transforms = transforms
        self.length = length
        self.load = load

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> torch.Tensor:
        image = self.items[index % len(self.items)]
        if self.load is not None:
            image = self.load(image)
        for transform in self.transforms:
            image = transform(image)
        return image


def _threads(worker_id: int) -> None:
    DATALOADER_THREADS.apply_runtime()


def user_loader(
    dataset: UserDataset, *, batch_size: int, workers: int, prefetch_factor: int, persistent: bool
) -> DataLoader:
    """A stock DataLoader with the regime's batch size, workers, prefetch and persistence."""
    return DataLoader(
        dataset,
        batch_size=batch_size,
        num_workers=workers,
        prefetch_factor=prefetch_factor if workers else None,
        persistent_workers=persistent if workers else False,
        worker_init_fn=_threads if workers else None,
    )
