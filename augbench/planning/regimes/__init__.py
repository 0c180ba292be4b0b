"""The regimes, declared once: every other module reads them from here.

- :mod:`augbench.planning.regimes.records`: the records a regime declares (:class:`Regime`, its job
  kinds
  :class:`JobKind`, a planned :class:`Job`, what planning reads: :class:`Planner`) and the
  registry of regimes;
- :mod:`augbench.paths`: the path scheme of the timed jobs' files;
- :mod:`augbench.planning.regimes.pricing`: what the cost model's pricing of every kind shares;
- one module per regime family, each holding its declaration, how its jobs are planned, what
  they hold in memory, how they are priced and the tables it adds: :mod:`.micro`,
  :mod:`.cpu_dataloader`, :mod:`.gpu` (``gpu_dataloader`` and ``dali``), :mod:`.training`.

How to add a regime: docs/architecture.md.
"""

from __future__ import annotations

from typing import Any

from augbench.paths import (
    ALLOCATOR_PATTERN,
    ALLOCATOR_ROLES,
    allocator_setting,
    allocator_suffix,
    run_number,
    run_suffix,
    split_allocator,
    without_run,
)
from augbench.planning.regimes import records
from augbench.planning.regimes.cpu_dataloader import CPU_DATALOADER
from augbench.planning.regimes.gpu import DALI, GPU_DATALOADER
from augbench.planning.regimes.micro import MICRO
from augbench.planning.regimes.records import (
    ANALYSIS_RULES,
    BY_NAME,
    KINDS,
    ROLES,
    SETUP_RULES,
    Job,
    JobKind,
    Planner,
    Regime,
    Table,
    Wildcards,
    benchmark_glob,
    gpu_regimes,
    kind_of_result,
    kinds,
    libraries_for,
    register,
    result_library,
    timed_rules,
    timed_rules_in_order,
    unregister,
)
from augbench.planning.regimes.training import TRAINING

for _regime in (MICRO, CPU_DATALOADER, GPU_DATALOADER, DALI, TRAINING):
    register(_regime)

__all__ = [
    "ALLOCATOR_PATTERN",
    "ALLOCATOR_ROLES",
    "ANALYSIS_RULES",
    "BY_NAME",
    "CPU_DATALOADER",
    "DALI",
    "GPU_DATALOADER",
    "KINDS",
    "MICRO",
    "ROLES",
    "SETUP_RULES",
    "TRAINING",
    "Job",
    "JobKind",
    "Planner",
    "Regime",
    "Table",
    "Wildcards",
    "allocator_setting",
    "allocator_suffix",
    "benchmark_glob",
    "gpu_regimes",
    "kind_of_result",
    "kinds",
    "libraries_for",
    "register",
    "result_library",
    "run_number",
    "run_suffix",
    "split_allocator",
    "timed_rules",
    "timed_rules_in_order",
    "unregister",
    "without_run",
]


def __getattr__(name: str) -> Any:
    """``ALL`` (every regime, in the order tables, figures and job lists follow) and ``NAMES``:
    the registry's current views, which :func:`register` replaces."""
    if name in ("ALL", "NAMES"):
        return getattr(records, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
