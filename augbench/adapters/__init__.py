"""Per-library adapters, each a library's declaration and its operations. ``get(name)`` returns
the adapter without importing the library; :func:`declared` its class, whose attributes are what
the workflow knows about the library (augbench.adapters.base.Adapter)."""

from __future__ import annotations

from augbench.adapters.base import CAPABILITIES, Adapter, Mapping, Unsupported

__all__ = [
    "CAPABILITIES",
    "Adapter",
    "Mapping",
    "Unsupported",
    "declared",
    "get",
    "names",
    "register",
    "unregister",
    "with_capability",
]

# Libraries added beside the shipped ones (tests, extensions): :func:`register`.
_ADDED: dict[str, type[Adapter]] = {}


def _registry() -> dict[str, type[Adapter]]:
    from augbench.adapters.albumentations_mit import AlbumentationsMitAdapter
    from augbench.adapters.albumentationsx import AlbumentationsXAdapter
    from augbench.adapters.dali import DaliAdapter
    from augbench.adapters.kornia import KorniaAdapter
    from augbench.adapters.pillow import PillowAdapter
    from augbench.adapters.pillow_simd import PillowSimdAdapter
    from augbench.adapters.torchvision import TorchvisionAdapter

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


def declared(name: str) -> type[Adapter]:
    """A library's declaration (its adapter class, nothing built or imported)."""
    registry = _registry()
    if name not in registry:
        raise KeyError(f"no adapter for library {name!r}; known: {', '.join(registry)}")
    return registry[name]


def get(name: str) -> Adapter:
    return declared(name)()


def with_capability(capability: str) -> tuple[str, ...]:
    """The libraries that declare ``capability``, in :func:`names` order."""
    return tuple(name for name, cls in _registry().items() if capability in cls.capabilities)
