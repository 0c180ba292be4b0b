"""The cpu_dataloader loaders, declared once: what feeds the regime's decode-scope rows
(docs/cpu_dataloader.md, "Loaders").

A :class:`Loader` names how the recipe's samples are made in parallel and the Python packages it
imports (import name and the PyPI pins its env would install). ``process`` is the torch DataLoader
with worker processes (every row's loader unless the config asks for more); ``thread`` maps the
samples on threads of the main process (torchdata.nodes' ``ParallelMapper(method="thread")``
where torchdata is installed, else a ``concurrent.futures`` pool with the same prefetch depth;
each row records which, ``loader_impl``); ``spdl`` is SPDL's pipeline builder with thread
concurrency. A thread loader starts as many threads as the setting has workers.

Read on the driver (the config's enum of names, the job names) without importing any loader; in
a library's env, :meth:`Loader.problem` says in one line why one cannot run (its package is
missing): its rows are ``skipped`` with that reason.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

PROCESS = "process"
THREAD = "thread"
SPDL = "spdl"
# What ``thread`` measures where torchdata is missing (the row's ``loader_impl``).
TORCHDATA_IMPL = "torchdata.nodes.ParallelMapper(method='thread')"
FUTURES_IMPL = "concurrent.futures.ThreadPoolExecutor"
SPDL_IMPL = "spdl.pipeline.PipelineBuilder (thread concurrency)"
PROCESS_IMPL = "torch.utils.data.DataLoader (worker processes)"
# A non-default loader is a dimension of a result's name: ``decode-w2`` -> ``decode-w2-thread``.
SEPARATOR = "-"


class UnknownLoader(ValueError):
    """A loader name that is not declared; the message names the valid ones."""


@dataclass(frozen=True)
class Loader:
    """One loader (module docstring): ``packages`` are (import name, PyPI pin) pairs its rows
    need beyond torch; ``optional`` ones change its implementation, never its availability."""

    name: str
    description: str
    packages: tuple[tuple[str, str], ...] = ()
    optional: tuple[tuple[str, str], ...] = ()

    def problem(self) -> str | None:
        """Why it cannot run in this process's env, in one line; None where it can."""
        missing = [pin for module, pin in self.packages if importlib.util.find_spec(module) is None]
        if missing:
            return f"loader {self.name}: not installed in this env (PyPI {', '.join(missing)})"
        return None

    def suffix(self) -> str:
        """The part of a result's name it adds: empty for the default."""
        return "" if self.name == DEFAULT else f"{SEPARATOR}{self.name}"


LOADERS: tuple[Loader, ...] = (
    Loader(PROCESS, "torch DataLoader, one worker process per worker"),
    Loader(THREAD, "samples mapped on threads of the main process, one thread per worker "
           "(torchdata.nodes ParallelMapper method='thread', else concurrent.futures)",
           optional=(("torchdata", "torchdata==0.11.0"),)),
    Loader(SPDL, "SPDL pipeline builder, thread concurrency, one thread per worker",
           packages=(("spdl", "spdl==0.8.0"),)),
)  # fmt: skip
BY_NAME: dict[str, Loader] = {x.name: x for x in LOADERS}
NAMES: tuple[str, ...] = tuple(BY_NAME)
DEFAULT = PROCESS
# The result-name parts (regex) of every loader, empty for the default: tried last, so a name's
# loader part is never read as the start of what follows it.
PATTERN = "(" + "".join(SEPARATOR + n + "|" for n in NAMES if n != DEFAULT) + ")"


def get(name: str) -> Loader:
    """The declared loader ``name``; :class:`UnknownLoader` names the valid ones."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise UnknownLoader(f"unknown loader {name!r}; valid loaders: {', '.join(NAMES)}") from None


def suffix(name: str) -> str:
    """``thread`` -> ``-thread``; ``process`` -> ``''``."""
    return get(name).suffix()


def from_suffix(text: str) -> str:
    """:func:`suffix` reversed."""
    return get(text.removeprefix(SEPARATOR)).name if text else DEFAULT


def thread_impl() -> str:
    """What ``thread`` measures in this env: torchdata's mapper where it is installed."""
    return TORCHDATA_IMPL if importlib.util.find_spec("torchdata") is not None else FUTURES_IMPL


def impl_of(name: str) -> str:
    return {PROCESS: PROCESS_IMPL, SPDL: SPDL_IMPL}.get(name) or thread_impl()
