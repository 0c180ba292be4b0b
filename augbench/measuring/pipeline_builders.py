"""A pipeline built in its library's env: the callables the engines time. The per-step units and
the whole composition come from the catalog steps through the library's adapter or, for a
pipeline written in the library's own format, from the user's own objects (its module in
``augbench.workload.pipeline_sources``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from augbench.workload.pipeline_sources import albumentations_file, torchvision_module
from augbench.workload.pipelines import (
    NATIVE_CALLS,
    ImageOf,
    MaskUnit,
    NativeStep,
    Pipeline,
    PipelineError,
    Prepare,
    build_unit,
    runs_native,
)

# The module that reads and builds each library's own format, by the format's name.
NATIVE_SOURCES: dict[str, ModuleType] = {
    source.FORMAT: source for source in (albumentations_file, torchvision_module)
}


def native_source(pipeline: Pipeline) -> ModuleType:
    """The module that reads and builds a pipeline written in a library's own format."""
    fmt = pipeline.native.get("format")
    if fmt not in NATIVE_SOURCES:
        raise PipelineError(f"pipeline {pipeline.name!r}: unknown native format {fmt!r}")
    return NATIVE_SOURCES[fmt]


def build_units(adapter: Any, pipeline: Pipeline) -> list[tuple[str, Callable[[Any], Any]]]:
    """(label, callable) per timed unit of the per-step breakdown; with a mask target the
    callables take and return ``{"image", "mask"}`` samples. A pipeline written in the
    library's own format gives the user's own step objects, one unit each."""
    if runs_native(adapter, pipeline):
        fmt = pipeline.native["format"]
        steps = native_source(pipeline).native_steps(pipeline)
        return [(label, NativeStep(obj, fmt)) for label, obj in steps]
    units = [(label, build_unit(adapter, steps)) for label, steps in pipeline.units()]
    if "mask" in pipeline.targets:
        units = [(label, MaskUnit(adapter, fn)) for label, fn in units]
    return units


def build_whole(
    adapter: Any, pipeline: Pipeline, units: Sequence[tuple[str, Callable[[Any], Any]]] = ()
) -> Any:
    """The whole pipeline as its library runs it (``Adapter.compose``: A.Compose, v2.Compose,
    K.AugmentationSequential, a Pillow function chain), built once per job and called once per
    sample: the user's own Compose where the pipeline is written in the library's format.
    ``units`` (from :func:`build_units`) share their step objects with it, so one seed drives
    both; the user's own Compose is built from their file apart from its step objects, and
    each is seeded on its own (``breakdown_passes.reseed``)."""
    if runs_native(adapter, pipeline):
        from augbench.workload.adapters.base import Composed

        fmt = pipeline.native["format"]
        whole = native_source(pipeline).native_compose(pipeline)
        return Composed(whole, NATIVE_CALLS[fmt][1], NATIVE_CALLS[fmt][0])
    units = list(units) or build_units(adapter, pipeline)
    fns = [getattr(fn, "fn", fn) for _, fn in units]  # a MaskUnit wraps the library callable
    return adapter.compose(fns, mask="mask" in pipeline.targets)


def recipe_parts(
    adapter: Any, pipeline: Pipeline
) -> tuple[list[Callable[[Any], Any]], Callable[[Any], Any]]:
    """(steps, tail) of ``cpu_dataloader.Recipe``: the library's whole composition
    (:func:`build_whole`) is the recipe, called once per sample; with targets the sample is
    built first and the image goes to collation."""
    whole = build_whole(adapter, pipeline)
    if pipeline.targets:
        return [Prepare(adapter, pipeline)], ImageOf(whole)
    return [], whole
