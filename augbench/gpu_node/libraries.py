"""Which libraries the offline GPU node runs and what it needs for them, read from the library
declarations (augbench.workload.adapters); the kit keeps no list of libraries of its own.

The node (docs/gpu_regimes.md, "On an offline GPU node") has its own Python with the packages of
:data:`NODE_PROVIDES`. A library takes part in the node's runs when its declaration has
``gpu_batches`` (the GPU DataLoader) and the distributions its GPU path imports there
(``node_packages``) are all on the node, or can travel in the bundle (``node_unfit`` empty: their
wheels install beside the node's own torch). The bundle brings what those libraries and the
engines (``ENGINE_PACKAGES``) import that the node lacks, each pinned by its library's lock. The
first of them in the libraries' order (augbench.workload.adapters.names) is the reference the A/A
pairs compare with and, where it also feeds training and transforms images on the CPU, the training
regime's library; the others are paired with it on :data:`EQUAL_WORK_RECIPE`.

:func:`facts` is computed where the bundle is built and carried in ``plan.json``: on the node, the
environment probe (standard library only, so that it can name a missing numpy) and the summary
read it from there.
"""

from __future__ import annotations

import re
from typing import Any

from augbench.workload import adapters
from augbench.workload.adapters.base import (
    CPU_TRANSFORMS,
    ENGINE_PACKAGES,
    GPU_BATCHES,
    MICRO_TIMER,
    TRAINING_FEED,
)

# What the node is expected to have (the prover reports what it finds): a system Python with a
# CUDA build of torch and torchvision and the usual scientific packages.
NODE_PROVIDES = (
    "torch", "torchvision", "numpy", "pillow", "opencv-python-headless", "pandas", "matplotlib",
    "pyyaml", "psutil", "scipy", "timm",
)  # fmt: skip
# What every GPU engine imports from the node's own packages, distribution -> module.
NODE_BASE: dict[str, str] = {"torch": "torch", "numpy": "numpy", "pillow": "PIL"}
# The recipe on which any two libraries of the GPU DataLoader do equal work in the decode scope:
# the engine's workers decode with torchvision.io for every library, and Identity is the
# library's float conversion and Normalize on the device.
EQUAL_WORK_RECIPE = "Identity"
# The reference's second name in the A/A pairs (augbench.workload.adapters: "<library>~<tag>").
ALIAS_TAG = "b"


def normalized(name: str) -> str:
    """PEP 503 name: what wheel file names, locks and the node's packages are compared by."""
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_of(library: str) -> str:
    """The lock that pins a library's packages (a second name's is its base library's)."""
    return f"envs/{adapters.base_of(library)}.txt"


def _provided(distribution: str) -> bool:
    return normalized(distribution) in {normalized(d) for d in NODE_PROVIDES}


def lacking(library: str) -> list[str]:
    """The distributions of a library's GPU path that the node does not have."""
    return [d for d in adapters.declared(library).node_packages if not _provided(d)]


def gpu_libraries() -> list[str]:
    """Every library that transforms batches on the GPU (second names aside)."""
    return [n for n in adapters.with_capability(GPU_BATCHES) if not adapters.is_alias(n)]


def libraries() -> tuple[str, ...]:
    """The libraries the node runs, in the libraries' order: those with ``gpu_batches`` whose
    packages the node has, or whose wheels travel in the bundle."""
    return tuple(
        name
        for name in gpu_libraries()
        if not lacking(name) or not adapters.declared(name).node_unfit
    )


def _chosen() -> tuple[str, ...]:
    chosen = libraries()
    if not chosen:
        raise ValueError(
            "no library declares gpu_batches with packages an offline GPU node has or its bundle "
            "can bring (augbench.workload.adapters: node_packages, node_unfit)"
        )
    return chosen


def reference() -> str:
    """The library the A/A pairs compare with: the first the node runs."""
    return _chosen()[0]


def training_library() -> str:
    """The training regime's library on the node (and its supply's, a cpu_dataloader job): the
    first it runs that feeds training and transforms images on the CPU."""
    for name in _chosen():
        if {TRAINING_FEED, CPU_TRANSFORMS} <= adapters.declared(name).capabilities:
            return name
    raise ValueError(f"none of the node's libraries ({', '.join(_chosen())}) feeds training")


def second_name() -> str:
    """The reference under its second name (the same adapter and env)."""
    return f"{reference()}{adapters.ALIAS_MARK}{ALIAS_TAG}"


def calibration_pairs() -> tuple[tuple[str, str, str | None], ...]:
    """The GPU DataLoader's A/A pairs: (name a, name b, the only recipe on which they do equal
    work; None: every recipe). The reference against its second name, and against each other
    library the node runs on :data:`EQUAL_WORK_RECIPE`."""
    first, *others = _chosen()
    return (
        (first, second_name(), None),
        *((first, other, EQUAL_WORK_RECIPE) for other in others),
    )


def requirements() -> list[tuple[str, str]]:
    """(distribution, the lock that pins it) of every package the bundle brings: what the node's
    libraries import that the node lacks, each pinned by its library's lock, then the engines'
    packages the node lacks, pinned by the lock of the first library whose wheels travel (else
    the first library's): the bundle's wheels then come from as few locks as can be."""
    chosen = _chosen()
    out: dict[str, str] = {}
    for name in chosen:
        for distribution in lacking(name):
            out.setdefault(distribution, lock_of(name))
    pinning = next(iter(out.values()), lock_of(chosen[0]))
    for distribution in ENGINE_PACKAGES:
        if not _provided(distribution):
            out.setdefault(distribution, pinning)
    return list(out.items())


def _and(words: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


def not_brought() -> dict[str, str]:
    """What the node run neither has nor brings, and why, by distribution: the libraries of a
    GPU regime that cannot travel, the CPU reference of the GPU/CPU ratio, the micro timer."""
    from augbench.planning import regimes

    chosen = libraries()
    gpu_needs = {regime.needs for regime in regimes.ALL if regime.gpu}
    out: dict[str, str] = {}
    for name in adapters.names():
        declared = adapters.declared(name)
        if adapters.is_alias(name) or name in chosen or not gpu_needs & declared.capabilities:
            continue
        runs_in = [regime.name for regime in regimes.ALL if regime.needs in declared.capabilities]
        out[declared.distribution or name] = declared.node_unfit or (
            f"its regimes ({', '.join(runs_in)}) are not part of the node run"
        )
    titles = [adapters.declared(name).title or name for name in chosen]
    for name in adapters.names():
        declared = adapters.declared(name)
        if declared.cpu_reference and name not in chosen:
            paths = f" {_and(titles)} paths" if titles else ""
            out[declared.distribution or name] = f"not imported by the GPU regimes'{paths}"
    out[MICRO_TIMER] = "times the micro regime only, which is not part of the GPU proof"
    return out


def cpu_reference_title() -> str | None:
    """The title of the library whose cpu_dataloader rows divide the GPU rows, if declared."""
    for name in adapters.names():
        declared = adapters.declared(name)
        if declared.cpu_reference:
            return declared.title or name
    return None


def facts() -> dict[str, Any]:
    """What the node's own code reads of the declarations (``plan.json``'s ``node``): the
    libraries it runs (name, title, distribution, what the bundle brings for it), the A/A pairs,
    the distributions the environment probe reports and the modules that must import there, the
    packages the summary compares with the locks first, and what is not brought."""
    chosen = _chosen()
    packages: dict[str, str] = {}
    for name in chosen:
        packages.update(adapters.declared(name).node_packages)
    missing = not_brought()
    return {
        "libraries": [
            {
                "name": name,
                "title": adapters.declared(name).title or name,
                "distribution": adapters.declared(name).distribution or name,
                "brought": lacking(name),
            }
            for name in chosen
        ],
        "training_library": training_library(),
        "calibration_pairs": [list(pair) for pair in calibration_pairs()],
        "distributions": list(
            dict.fromkeys([*NODE_PROVIDES, *packages, *ENGINE_PACKAGES, *missing])
        ),
        "modules": list(
            dict.fromkeys([*NODE_BASE.values(), *packages.values(), *ENGINE_PACKAGES.values()])
        ),
        "key_packages": list(dict.fromkeys([*NODE_BASE, *packages, *ENGINE_PACKAGES])),
        "cpu_reference": cpu_reference_title(),
        "micro_timer": MICRO_TIMER,
        "not_brought": missing,
    }
