"""Per-library adapters, each a library's declaration and its operations. ``get(name)`` returns
the adapter without importing the library; :func:`declared` its class, whose attributes are what
the workflow knows about the library (augbench.workload.adapters.base.Adapter).

A library may also be named ``<library>~<tag>`` (``albumentationsx~b``): the same library under a
second name, for A/A runs (docs/calibration.md). It measures with its base library's adapter and
env, and is a library of its own in job names, wildcards, result paths and rows (``library`` is the
alias, ``library_base`` the library it stands for). :func:`declared` resolves it in any process;
:func:`register_aliases` makes the configured ones config names that every regime of the base's
capabilities plans (augbench.planning.config.resolve calls it)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

from augbench.workload.adapters.base import CAPABILITIES, Adapter, Mapping, Unsupported

__all__ = [
    "ALIAS_MARK",
    "CAPABILITIES",
    "Adapter",
    "Mapping",
    "Unsupported",
    "base_of",
    "declared",
    "get",
    "has_capability",
    "is_alias",
    "names",
    "register",
    "register_aliases",
    "unregister",
    "with_capability",
]

# Libraries added beside the shipped ones (tests, extensions, configured aliases): :func:`register`.
_ADDED: dict[str, type[Adapter]] = {}

# "<library>~<tag>": a second name of a library. "~" is free in file names, Snakemake wildcards and
# storage URLs, and no library name, allocator suffix ("+") or run suffix ("-run") holds it.
ALIAS_MARK = "~"
_ALIAS = re.compile(r"(?P<base>[a-z0-9_]+)~(?P<tag>[a-z0-9]+)")


def _registry() -> dict[str, type[Adapter]]:
    from augbench.workload.adapters.albumentations_mit import AlbumentationsMitAdapter
    from augbench.workload.adapters.albumentationsx import AlbumentationsXAdapter
    from augbench.workload.adapters.dali import DaliAdapter
    from augbench.workload.adapters.kornia import KorniaAdapter
    from augbench.workload.adapters.pillow import PillowAdapter
    from augbench.workload.adapters.pillow_simd import PillowSimdAdapter
    from augbench.workload.adapters.torchvision import TorchvisionAdapter

    shipped = (
        AlbumentationsXAdapter,
        AlbumentationsMitAdapter,
        TorchvisionAdapter,
        KorniaAdapter,
        PillowAdapter,
        PillowSimdAdapter,
        DaliAdapter,
    )
    return {**{cls.name: cls for cls in shipped}, **_ADDED}


def register(cls: type[Adapter]) -> None:
    """Add a library by its adapter class: every regime with one of its capabilities, the config's
    library names, the tables and the figures take it from here."""
    unknown = set(cls.capabilities) - set(CAPABILITIES)
    if not cls.name or unknown:
        raise ValueError(f"adapter {cls.__name__}: needs a name and capabilities of {CAPABILITIES}")
    _ADDED[cls.name] = cls


def unregister(name: str) -> None:
    _ADDED.pop(name, None)


def names() -> list[str]:
    """Every library, in the order tables and figures list them."""
    return list(_registry())


def is_alias(name: str) -> bool:
    """Whether ``name`` is spelled as a second name of a library (``<library>~<tag>``)."""
    return _ALIAS.fullmatch(str(name)) is not None


def base_of(name: str) -> str:
    """The library a name stands for: the base of an alias, else the name itself."""
    found = _ALIAS.fullmatch(str(name))
    return found.group("base") if found else str(name)


@cache
def _alias_class(name: str, base: type[Adapter]) -> type[Adapter]:
    """The base library's adapter under the alias's name. It is no CPU reference and no sibling of
    another library: those facts belong to the base (exactly one library is the reference)."""
    tag = name.split(ALIAS_MARK, 1)[1]
    attributes = {
        "name": name,
        "title": f"{base.title or base.name} {ALIAS_MARK}{tag}",
        "cpu_reference": False,
        "sibling": "",
        "alias_of": base.name,
        "__doc__": f"{base.name} under a second name ({name}): A/A runs.",
    }
    return type(f"{base.__name__}Alias_{tag}", (base,), attributes)


def declared(name: str) -> type[Adapter]:
    """A library's declaration (its adapter class, nothing built or imported); an alias's is its
    base library's under the alias's name."""
    registry = _registry()
    if name in registry:
        return registry[name]
    base = base_of(name)
    if is_alias(name) and base in registry:
        return _alias_class(name, registry[base])
    raise KeyError(f"no adapter for library {name!r}; known: {', '.join(registry)}")


def register_aliases(libraries: Iterable[str]) -> None:
    """Register the aliases among ``libraries`` whose base is a known library: each is then a
    config name, planned in every regime of its base's capabilities. Others stay unknown names
    (the config's error names them)."""
    for name in libraries:
        if is_alias(name) and base_of(name) in _registry():
            register(declared(name))


def get(name: str) -> Adapter:
    return declared(name)()


def has_capability(name: str, capability: str) -> bool:
    """Whether library ``name`` (a second name too, in any process) declares ``capability``."""
    try:
        return capability in declared(name).capabilities
    except KeyError:
        return False


def with_capability(capability: str) -> tuple[str, ...]:
    """The libraries that declare ``capability``, in :func:`names` order."""
    return tuple(name for name, cls in _registry().items() if capability in cls.capabilities)
