"""Per-library adapters. ``get(name)`` returns the adapter without importing the library."""

from __future__ import annotations

from augbench.adapters.base import Adapter, Mapping, Unsupported

__all__ = ["Adapter", "Mapping", "Unsupported", "get", "names"]


def _registry() -> dict[str, type[Adapter]]:
    from augbench.adapters.albumentationsx import AlbumentationsXAdapter
    from augbench.adapters.dali import DaliAdapter
    from augbench.adapters.kornia import KorniaAdapter
    from augbench.adapters.pillow import PillowAdapter
    from augbench.adapters.torchvision import TorchvisionAdapter

    return {
        cls.name: cls
        for cls in (
            AlbumentationsXAdapter,
            TorchvisionAdapter,
            KorniaAdapter,
            PillowAdapter,
            DaliAdapter,
        )
    }


def names() -> list[str]:
    return list(_registry())


def get(name: str) -> Adapter:
    registry = _registry()
    if name not in registry:
        raise KeyError(f"no adapter for library {name!r}; known: {', '.join(registry)}")
    return registry[name]()
