"""The one source of truth for which libraries run in which regime."""

from __future__ import annotations

LIBRARIES: tuple[str, ...] = ("albumentationsx", "torchvision", "kornia", "pillow", "dali")

REGIMES: tuple[str, ...] = ("micro", "cpu_dataloader", "gpu_dataloader", "dali")

# Which libraries a regime can measure. A configured library outside its regime's set is simply
# not part of that regime (it is not a row); a library inside the set that lacks a transform is an
# explicit `unsupported` row.
REGIME_LIBRARIES: dict[str, tuple[str, ...]] = {
    "micro": ("albumentationsx", "torchvision", "kornia", "pillow"),
    "cpu_dataloader": ("albumentationsx", "torchvision", "kornia", "pillow"),
    "gpu_dataloader": ("torchvision", "kornia"),
    "dali": ("dali",),
}

# Regimes whose jobs are timed and therefore must never overlap on one machine.
TIMED_REGIMES: tuple[str, ...] = REGIMES

STATUSES: tuple[str, ...] = ("ok", "early_stopped", "unsupported", "skipped", "error")


def libraries_for(regime: str, configured: list[str]) -> list[str]:
    """Configured libraries that take part in ``regime``, in configured order."""
    allowed = REGIME_LIBRARIES[regime]
    return [lib for lib in configured if lib in allowed]
