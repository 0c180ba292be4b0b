"""User-defined pipelines: an ordered list of catalog steps, run by every regime as one recipe.

A pipeline is what a DataLoader recipe (``augbench.workload.recipes``) is, written by the user: a
name, the catalog steps in order (each with optional parameter overrides) and optional ``targets``
that travel with the image (``mask``; ``bboxes`` and ``keypoints`` are accepted by the schema and
reported where no adapter drives them). Files in ``config/pipelines/`` hold one pipeline each::

    name: imagenet_train
    steps:
      - RandomResizedCrop
      - HorizontalFlip
      - ColorJitter: {brightness: 0.2}
      - Normalize
      - ToTensor

Rules (checked while the workflow builds its job graph, before any job runs):

- every step is a catalog candidate (``augbench.workload.catalog.CANDIDATES``), parameters are the
  catalog's own names with values of the same shape; ``Sleep`` (``ms``) is a diagnostic step
  allowed only where ``pipeline_runs.allow_diagnostic_steps`` is true (tests);
- ``Normalize`` (ImageNet statistics by default) is each library's own Normalize + tensor
  conversion (``Adapter.recipe_tail``), so only ``ToTensor`` may follow it, and ``ToTensor`` only
  directly after it (timed together as one step, ``Normalize+ToTensor``);
- every other step is built by the library's adapter (``Adapter.build``); a library without a
  direct implementation of a step gets an ``unsupported`` row naming the step: nothing is ever
  composed from helpers.

Rows of a pipeline carry ``pipeline: <name>``, ``transform: <name>`` and ``variant: pipeline``
(so a pipeline is never ranked against single transforms); per-step rows of the breakdown also
carry ``step`` and ``step_index`` (docs/pipelines.md).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from augbench import paths
from augbench.workload import catalog

TARGETS: tuple[str, ...] = ("mask", "bboxes", "keypoints")
# Which targets each library's adapter passes through its own API is ``Adapter.driven_targets``
# (CPU regimes: AlbumentationsX and Kornia, the mask) and ``Adapter.gpu_driven_targets`` (GPU
# regimes: Kornia, the mask). A library with a pipeline whose target it does not drive in the
# regime gets a `skipped` row saying so (never timed without the target).
DIAGNOSTIC_STEPS: dict[str, dict[str, float]] = {"Sleep": {"ms": 5.0}}
TAIL_STEP, TENSOR_STEP = "Normalize", "ToTensor"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
VARIANT = "pipeline"  # the comparison group of whole-pipeline rows in every regime
STEP_VARIANT = "pipeline-step"


class PipelineError(ValueError):
    """A pipeline definition the workflow cannot run; the message names file, step and key."""


# Step options: how a step is applied, on top of the catalog's parameters (which say what it
# does). ``p``: the probability that the step is applied to an image (every step but Normalize
# and ToTensor; default 1, the catalog's convention). ``antialias``: whether a resampling step
# low-pass filters when it downscales (RandomResizedCrop; absent: the library's own default,
# ``Adapter.antialias_choices``, recorded per row as ``step_antialias``). A library that cannot
# apply an option as asked gets an ``unsupported`` row naming the step and the option.
STEP_OPTIONS: dict[str, tuple[type, ...]] = {"p": (int, float), "antialias": (bool,)}
ANTIALIAS_STEPS: frozenset[str] = frozenset({"RandomResizedCrop"})


@dataclass(frozen=True)
class Step:
    """One pipeline step: a catalog step (``name``, ``params``: the catalog's parameters,
    ``options``: STEP_OPTIONS), or, in a pipeline written in a library's own format
    (``Pipeline.native``), a step no catalog step expresses: ``unmapped`` says why, ``name`` is
    the library's own class name and ``params`` its serialized arguments. An unmapped step runs
    only in the library the pipeline was written for."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    unmapped: str = ""

    @property
    def probability(self) -> float:
        return float(self.options.get("p", 1.0))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "params": self.params}
        if self.options:
            out["options"] = self.options
        if self.unmapped:
            out["unmapped"] = self.unmapped
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        return cls(
            data["name"],
            dict(data.get("params") or {}),
            dict(data.get("options") or {}),
            str(data.get("unmapped") or ""),
        )


@dataclass(frozen=True)
class Pipeline:
    name: str
    steps: tuple[Step, ...]
    targets: tuple[str, ...] = ()
    description: str = ""
    source: str = "inline"
    # Where a pipeline was written in a library's own format: {"library": <adapter name>,
    # "format": "albumentations" (A.save / A.to_dict output; "spec" holds it) or "module"
    # ("ref": "package.module:attribute" of a torchvision v2 Compose)}. That library runs the
    # user's own object; the others run the catalog mapping of ``steps``.
    native: dict[str, Any] = field(default_factory=dict)

    @property
    def recipe(self) -> str:
        """Human-readable form, e.g. ``RandomResizedCrop + HorizontalFlip + Normalize``."""
        return " + ".join(step.name for step in self.steps)

    @property
    def ends_in_tensor(self) -> bool:
        return bool(self.steps) and self.steps[-1].name in (TAIL_STEP, TENSOR_STEP)

    def units(self) -> list[tuple[str, list[Step]]]:
        """Timed units in order: each step alone, ``Normalize`` and a following ``ToTensor``
        together (one library call)."""
        out: list[tuple[str, list[Step]]] = []
        for step in self.steps:
            if step.name == TENSOR_STEP and out and out[-1][1][-1].name == TAIL_STEP:
                out[-1] = (f"{TAIL_STEP}+{TENSOR_STEP}", [*out[-1][1], step])
            else:
                out.append((step.name, [step]))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "steps": [s.to_dict() for s in self.steps],
            "targets": list(self.targets),
            "description": self.description,
            "source": self.source,
            "native": self.native,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Pipeline:
        return cls(
            name=data["name"],
            steps=tuple(Step.from_dict(s) for s in data["steps"]),
            targets=tuple(data.get("targets") or ()),
            description=data.get("description", ""),
            source=data.get("source", "inline"),
            native=dict(data.get("native") or {}),
        )


# -- parsing and validation (driver) ---------------------------------------------------------
def _allowed_steps(allow_diagnostic: bool) -> list[str]:
    return [*catalog.CANDIDATES, *(DIAGNOSTIC_STEPS if allow_diagnostic else ())]


def shape_ok(default: Any, value: Any) -> bool:
    if isinstance(default, tuple | list):
        return (
            isinstance(value, tuple | list)
            and len(value) == len(default)
            and all(shape_ok(d, v) for d, v in zip(default, value, strict=True))
        )
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int | float):
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, type(default))


def parse_step(entry: Any, where: str, allow_diagnostic: bool) -> Step:
    if isinstance(entry, str):
        name, overrides = entry, {}
    elif isinstance(entry, dict) and len(entry) == 1:
        name, overrides = next(iter(entry.items()))
        overrides = overrides or {}
        if not isinstance(overrides, dict):
            raise PipelineError(f"{where}: parameters of {name!r} must be a mapping")
    else:
        raise PipelineError(f"{where}: a step is a name or {{name: {{parameter: value}}}}")
    if name in DIAGNOSTIC_STEPS and not allow_diagnostic:
        raise PipelineError(
            f"{where}: {name!r} is a diagnostic step, allowed only with "
            "pipeline_runs.allow_diagnostic_steps: true"
        )
    if name in DIAGNOSTIC_STEPS:
        defaults: dict[str, Any] = dict(DIAGNOSTIC_STEPS[name])
    elif name in catalog.CANDIDATES:
        defaults = dict(catalog.CANDIDATES[name].params)
    else:
        allowed = ", ".join(_allowed_steps(allow_diagnostic))
        raise PipelineError(f"{where}: unknown step {name!r}; allowed: {allowed}")
    options = step_options(name, overrides, where)
    overrides = {k: v for k, v in overrides.items() if k not in STEP_OPTIONS}
    for key, value in overrides.items():
        if key not in defaults:
            raise PipelineError(
                f"{where}: step {name!r} has no parameter {key!r}; allowed: "
                f"{', '.join(defaults) or 'none'}"
            )
        if not shape_ok(defaults[key], value):
            raise PipelineError(
                f"{where}: step {name!r} parameter {key!r} = {value!r} does not have the shape "
                f"of its catalog value {defaults[key]!r}"
            )
    params = {
        **defaults,
        **{k: list(v) if isinstance(v, tuple) else v for k, v in overrides.items()},
    }
    return Step(name, params, options)


def step_options(name: str, given: dict[str, Any], where: str) -> dict[str, Any]:
    """The STEP_OPTIONS among a step's keys, checked: ``p`` in [0, 1] on any step but Normalize
    and ToTensor, ``antialias`` a boolean on the steps of ANTIALIAS_STEPS."""
    options = {k: v for k, v in given.items() if k in STEP_OPTIONS}
    for key, value in options.items():
        kinds = STEP_OPTIONS[key]
        if not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool)):
            raise PipelineError(
                f"{where}: step {name!r} option {key!r} = {value!r} is not a {kinds[0].__name__}"
            )
    if "p" in options:
        if name in (TAIL_STEP, TENSOR_STEP):
            raise PipelineError(f"{where}: step {name!r} is always applied; it takes no 'p'")
        if not 0.0 <= float(options["p"]) <= 1.0:
            raise PipelineError(
                f"{where}: step {name!r} option 'p' = {options['p']!r} is not in [0, 1]"
            )
        options["p"] = float(options["p"])
    if "antialias" in options and name not in ANTIALIAS_STEPS:
        raise PipelineError(
            f"{where}: step {name!r} takes no 'antialias' (it is an option of "
            f"{', '.join(sorted(ANTIALIAS_STEPS))})"
        )
    return options


def parse(data: Any, *, source: str = "inline", allow_diagnostic: bool = False) -> Pipeline:
    """One pipeline from its mapping (a file's content or an inline config entry)."""
    if not isinstance(data, dict):
        raise PipelineError(f"pipeline {source}: expected a mapping with name and steps")
    unknown = set(data) - {"name", "steps", "targets", "description"}
    if unknown:
        raise PipelineError(
            f"pipeline {source}: unknown keys {sorted(unknown)}; allowed: name, steps, targets, "
            "description"
        )
    name = data.get("name")
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise PipelineError(f"pipeline {source}: name {name!r} must match {NAME_PATTERN.pattern}")
    if name in catalog.CANDIDATES:
        raise PipelineError(
            f"pipeline {source}: name {name!r} is a catalog transform; pipelines and single "
            "transforms share the transform column, so choose another name"
        )
    where = f"pipeline {name!r} ({source})"
    entries = data.get("steps")
    if not isinstance(entries, list) or not entries:
        raise PipelineError(f"{where}: steps must be a non-empty list")
    steps = [
        parse_step(e, f"{where} step {i + 1}", allow_diagnostic) for i, e in enumerate(entries)
    ]
    for i, step in enumerate(steps):
        after = steps[i + 1 :]
        if step.name == TAIL_STEP and any(s.name != TENSOR_STEP for s in after):
            raise PipelineError(
                f"{where} step {i + 1}: Normalize ends in a float32 tensor (the library's "
                "Normalize + tensor conversion), so only ToTensor may follow it"
            )
        if step.name == TENSOR_STEP and (i == 0 or steps[i - 1].name != TAIL_STEP):
            raise PipelineError(f"{where} step {i + 1}: ToTensor must directly follow Normalize")
    targets = data.get("targets") or []
    if not isinstance(targets, list) or any(t not in TARGETS for t in targets):
        raise PipelineError(f"{where}: targets {targets!r}; allowed: {', '.join(TARGETS)}")
    if len(set(targets)) != len(targets):
        raise PipelineError(f"{where}: targets {targets!r} repeat an entry")
    return Pipeline(
        name=name,
        steps=tuple(steps),
        targets=tuple(targets),
        description=str(data.get("description") or ""),
        source=source,
    )


# Where the workflow writes a ``module:attr`` pipeline resolved in the torchvision env
# (rule resolve_pipeline); engines read it (:func:`from_json`).
RESOLVED = paths.RESOLVED_PIPELINE


# The pipelines the workflow ships; every other configured pipeline is the user's own.
SHIPPED_DIR = "config/pipelines"


def entry_path(entry: str, basedir: Path) -> Path:
    """A configured pipeline file: relative paths in the working directory, else in the
    workflow's directory."""
    path = Path(entry)
    if not path.is_absolute() and not path.exists():
        path = Path(basedir) / entry
    return path


def shipped(source: str, basedir: Path) -> bool:
    """Whether a configured pipeline (its ``source`` as configured) is one the workflow ships,
    rather than the user's own (a file elsewhere, a module, an inline mapping)."""
    if source == "inline":
        return False
    path = entry_path(source, basedir)
    return path.exists() and path.resolve().parent == (Path(basedir) / SHIPPED_DIR).resolve()


def module_refs(items: Sequence[Pipeline]) -> dict[str, str]:
    """``name -> module:attr`` of the pipelines the torchvision env must resolve first."""
    return {p.name: p.native["ref"] for p in items if p.native.get("format") == "module"}


def to_json(items: Sequence[Pipeline]) -> str:
    return json.dumps([p.to_dict() for p in items], sort_keys=True)


def from_json(text: str) -> dict[str, Pipeline]:
    """Pipelines from their JSON; in a job, a ``module:attr`` pipeline takes the steps its
    resolution wrote (:data:`RESOLVED`), or the error it met (rows then say so)."""
    items = {d["name"]: Pipeline.from_dict(d) for d in json.loads(text or "[]")}
    return {name: resolve_placeholder(p) for name, p in items.items()}


def resolve_placeholder(pipeline: Pipeline) -> Pipeline:
    path = pipeline.native.get("resolved")
    if pipeline.steps or not path or not Path(path).is_file():
        return pipeline
    data = json.loads(Path(path).read_text())
    if "error" in data:
        return replace(pipeline, native={**pipeline.native, "error": str(data["error"])})
    resolved = Pipeline.from_dict(data["pipeline"])
    return replace(resolved, native={**resolved.native, "resolved": path})


# -- per-library support and builders (library environment) ---------------------------------
def driven_targets(adapter: Any, gpu: bool = False) -> frozenset[str]:
    """The targets the library's adapter passes through its own API in the CPU or GPU regimes."""
    return frozenset(adapter.gpu_driven_targets if gpu else adapter.driven_targets)


def driven_targets_by_library(gpu: bool = False) -> str:
    """``lib: [targets]`` of every library that drives one in the CPU or GPU regimes (messages)."""
    from augbench.workload import adapters

    driven = {name: sorted(driven_targets(adapters.get(name), gpu)) for name in adapters.names()}
    return ", ".join(f"{name}: {targets}" for name, targets in driven.items() if targets)


def support_problem(
    adapter: Any,
    pipeline: Pipeline,
    step_reason: Callable[[str], str | None] | None = None,
    gpu: bool = False,
) -> tuple[str, str, dict[str, Any]] | None:
    """(status, reason, fields) when the library cannot run the pipeline as defined, else None.
    The first step the library lacks (or cannot apply with the step's options) is named; a
    target this harness does not drive for the library in the regime (``gpu``: the GPU
    regimes) gives a `skipped` row (the pipeline is never timed without its targets).
    ``step_reason(name)`` says why a step does not run (None: it runs); by default the
    adapter's CPU mapping decides, the GPU regimes pass :func:`gpu_step_reason`. A pipeline
    written in a library's own format runs as written in that library's CPU regimes; elsewhere
    its catalog mapping runs, and a step without one is named."""
    if pipeline.native.get("error"):
        return ("error", str(pipeline.native["error"]), {})
    if not pipeline.steps:
        return ("error", f"pipeline {pipeline.name!r} was not resolved ({pipeline.source})", {})
    if step_reason is None:
        step_reason = _cpu_step_reason(adapter)
    own = runs_native(adapter, pipeline, gpu)
    for index, step in enumerate(pipeline.steps):
        if own or step.name in (TAIL_STEP, TENSOR_STEP):
            continue
        if step.unmapped:
            reason = (
                f"no catalog step expresses it ({step.unmapped}); it runs only in "
                f"{pipeline.native.get('library')}'s CPU regimes, the library it is written for"
            )
        else:
            reason = step_reason(step.name)
            if reason is None and step.name not in DIAGNOSTIC_STEPS:
                reason = adapter.option_problem(step.name, step.options)
        if reason is not None:
            return (
                "unsupported",
                f"step {index + 1} {step.name}: {reason}",
                {"unsupported_step": step.name, "unsupported_step_index": index},
            )
    undriven = [t for t in pipeline.targets if t not in driven_targets(adapter, gpu)]
    if undriven:
        listed = driven_targets_by_library(gpu)
        if gpu:
            scope = f"here (augbench's GPU regimes carry targets only for {listed})"
        else:
            scope = f"yet (driven in the CPU regimes: {listed})"
        return (
            "skipped",
            f"step 1 {pipeline.steps[0].name}: augbench does not pass the {undriven[0]} target "
            f"through {adapter.name}'s API {scope}",
            {"unsupported_step": pipeline.steps[0].name, "unsupported_target": undriven[0]},
        )
    return None


def runs_native(adapter: Any, pipeline: Pipeline, gpu: bool = False) -> bool:
    """Whether the library runs the user's own objects (a pipeline written in its format, in a
    CPU regime) rather than the catalog mapping of the steps."""
    from augbench.workload.adapters import (
        base_of,  # a second name (A/A runs) runs its base's objects
    )

    native = pipeline.native.get("library") if pipeline.native else None
    return not gpu and bool(native) and native == base_of(adapter.name)


def _cpu_step_reason(adapter: Any) -> Callable[[str], str | None]:
    def reason(name: str) -> str | None:
        if name in DIAGNOSTIC_STEPS or adapter.supports(name):
            return None
        return str(adapter.unsupported_reason(name))

    return reason


def gpu_step_reason(adapter: Any) -> Callable[[str], str | None]:
    """Why a step does not run in a GPU regime (gpu_dataloader, dali): the library lacks it, or
    its call cannot run on CUDA tensors (``gpu_recipes.GPU_UNSUPPORTED``); the diagnostic
    ``Sleep`` is a host step and never runs there."""
    from augbench.workload import gpu_recipes

    def reason(name: str) -> str | None:
        if name in DIAGNOSTIC_STEPS:
            return f"{name} is a diagnostic host step (CPU regimes only)"
        return gpu_recipes.unsupported_reason(adapter, name)

    return reason


def gpu_support_problem(adapter: Any, pipeline: Pipeline) -> tuple[str, str, dict[str, Any]] | None:
    """:func:`support_problem` for the GPU regimes. Besides missing steps and targets: the GPU
    regimes check a float32 batch, so a pipeline not ending in ``Normalize`` is an ``error``."""
    problem = support_problem(adapter, pipeline, gpu_step_reason(adapter), gpu=True)
    if problem is None and not pipeline.ends_in_tensor:
        last = pipeline.steps[-1].name
        return (
            "error",
            f"step {len(pipeline.steps)} {last}: the GPU regimes time float32 batches, so a "
            f"pipeline run there must end with {TAIL_STEP}",
            {"unsupported_step": last},
        )
    return problem


def gpu_problem_row(
    adapter: Any, pipeline: Pipeline | None, import_error: tuple[str, str] | None
) -> dict[str, Any] | None:
    """The GPU engines' row for a pipeline they do not measure (see :func:`gpu_support_problem`);
    None for a single transform, or where the library does not import (that row wins)."""
    from augbench.results import non_ok_row

    problem = None
    if pipeline is not None and import_error is None:
        problem = gpu_support_problem(adapter, pipeline)
    if problem is None:
        return None
    status, reason, fields = problem
    return non_ok_row(status, reason, **fields)


def gpu_steps(pipeline: Pipeline) -> tuple[list[Step], Step | None]:
    """(the steps before ``Normalize``, the ``Normalize`` step) of a pipeline in a GPU regime
    (``ToTensor`` is part of the regime's Normalize: its output is already a tensor)."""
    body = [s for s in pipeline.steps if s.name not in (TAIL_STEP, TENSOR_STEP)]
    tail = next((s for s in pipeline.steps if s.name == TAIL_STEP), None)
    return body, tail


def mapping_calls(adapter: Any, pipeline: Pipeline) -> list[str | None]:
    """The library call of each step as recorded with rows (None where it has none)."""
    calls: list[str | None] = []
    for step in pipeline.steps:
        if step.name == TAIL_STEP:
            calls.append(adapter.recipe_tail_call)
        elif step.name == TENSOR_STEP:
            calls.append("(part of Normalize)")
        elif step.name in DIAGNOSTIC_STEPS:
            calls.append(f"time.sleep({step.params['ms']} / 1000)")
        else:
            calls.append(step_call(adapter, step))
    return calls


def step_call(adapter: Any, step: Step) -> str | None:
    """One step's library call as rows record it, its options said (None: no mapping)."""
    call = None if step.unmapped else adapter.mapping_call(step.name)
    if call is None:
        return None
    if step.probability < 1.0:
        call = f"{call} with p={step.probability}: {adapter.probability_call}"
    if "antialias" in step.options:
        call = f"{call} [antialias={step.options['antialias']}]"
    return call


class SleepStep:
    """Diagnostic step: sleeps a known time and returns its input (materialized like any step's
    output, so the share the breakdown reports for it can be checked)."""

    def __init__(self, ms: float) -> None:
        self.seconds = ms / 1000.0

    def __call__(self, image: Any) -> Any:
        time.sleep(self.seconds)
        return image


def build_unit(adapter: Any, steps: list[Step]) -> Callable[[Any], Any]:
    """The callable of one timed unit, on the library's native image."""
    first = steps[0]
    if first.name == TAIL_STEP:
        return adapter.recipe_tail(tuple(first.params["mean"]), tuple(first.params["std"]))
    if first.name in DIAGNOSTIC_STEPS:
        return SleepStep(float(first.params["ms"]))
    return adapter.build_step(first.name, first.params, first.options)


class MaskUnit:
    """One unit applied to ``{"image", "mask"}`` through the library's own joint call
    (``Adapter.with_mask``: AlbumentationsX ``transform(image=..., mask=...)``, Kornia
    ``AugmentationSequential(..., data_keys=["input", "mask"])``), so geometry moves the mask
    with the image; steps without a mask meaning (Normalize, Sleep) pass the mask through."""

    def __init__(self, adapter: Any, fn: Callable[[Any], Any]) -> None:
        self.fn = fn
        self.joint = adapter.with_mask(fn)

    def __call__(self, sample: dict[str, Any]) -> dict[str, Any]:
        if self.joint is not None:
            image, mask = self.joint(sample["image"], sample["mask"])
            return {"image": image, "mask": mask}
        return {"image": self.fn(sample["image"]), "mask": sample["mask"]}


def _call_with_image_keyword(transform: Any, image: Any) -> Any:
    return transform(image=image)["image"]


def _call_positional(transform: Any, image: Any) -> Any:
    return transform(image)


# How a user calls an object of each native format, and how rows name the whole.
NATIVE_CALLS: dict[str, tuple[Callable[[Any, Any], Any], str]] = {
    "albumentations": (
        _call_with_image_keyword,
        "the user's own A.Compose (as A.save wrote it)(image=image)['image']",
    ),
    "module": (_call_positional, "the user's own torchvision v2.Compose object(image)"),
}


class NativeStep:
    """One of the user's own step objects, called as its library is called (a unit of the
    breakdown of a pipeline written in the library's format)."""

    def __init__(self, transform: Any, fmt: str) -> None:
        self.transform, self.call = transform, NATIVE_CALLS[fmt][0]
        if fmt == "albumentations":  # seeded like the catalog's AlbumentationsX steps
            self.albumentations_transform = transform

    def __call__(self, image: Any) -> Any:
        return self.call(self.transform, image)


def materialize(adapter: Any, output: Any, source: Any) -> Any:
    """``Adapter.materialize`` on the image, and on each target of a sample."""
    if isinstance(output, dict):
        return {k: adapter.materialize(v, source[k]) for k, v in output.items()}
    return adapter.materialize(output, source)


def prepare(adapter: Any, pipeline: Pipeline, image: Any) -> Any:
    """The input of the first step: the image, or the image with its targets."""
    if "mask" in pipeline.targets:
        return {"image": image, "mask": adapter.make_mask(image)}
    return image


class ImageOf:
    """Last step of a DataLoader recipe with targets: the image goes to collation (the targets
    were transformed with it; their transfer to the main process is not part of the row)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, sample: Any) -> Any:
        out = self.fn(sample)
        return out["image"] if isinstance(out, dict) else out


class Prepare:
    """First step of a DataLoader recipe with targets: builds the sample (inside the timed
    window: the dataset holds images only)."""

    def __init__(self, adapter: Any, pipeline: Pipeline) -> None:
        self.adapter, self.pipeline = adapter, pipeline

    def __call__(self, image: Any) -> Any:
        return prepare(self.adapter, self.pipeline, image)


def scaled_policy(policy: Any, pipeline: Pipeline) -> Any:
    """The slow-transform policy of a pipeline: its per-item limit is per step, so a pipeline of
    n steps stops early at n times the single-transform limit (recorded with the row)."""
    from dataclasses import replace

    steps = len(pipeline.units())
    return replace(policy, max_seconds_per_item=policy.max_seconds_per_item * steps)


def row_fields(pipeline: Pipeline, adapter: Any | None = None, gpu: bool = False) -> dict[str, Any]:
    """What every row of a pipeline carries, whatever its status or regime (``gpu``: a GPU
    regime's row, which records ``mask_call`` only where the GPU path carries the mask).
    ``work_contract`` names what each library may do differently for the same step (today:
    whether a resampling step antialiases); rows with different work contracts or output
    contracts are never ranked against each other (augbench.analysis.pipelines)."""
    fields: dict[str, Any] = {
        "pipeline": pipeline.name,
        "transform": pipeline.name,
        "variant": VARIANT,
        "recipe": pipeline.recipe,
        "pipeline_steps": [s.to_dict() for s in pipeline.steps],
        "pipeline_targets": list(pipeline.targets),
        "pipeline_source": pipeline.source,
    }
    if pipeline.native:
        fields["pipeline_native"] = {k: v for k, v in pipeline.native.items() if k != "spec"}
    if adapter is not None:
        own = runs_native(adapter, pipeline, gpu)
        fields["recipe_calls"] = mapping_calls(adapter, pipeline)
        fields["compose_call"] = (
            NATIVE_CALLS[pipeline.native["format"]][1] if own else adapter.compose_call
        )
        antialias = [
            None if s.unmapped else adapter.antialias(s.name, s.options) for s in pipeline.steps
        ]
        fields["step_antialias"] = antialias
        fields["work_contract"] = work_contract(pipeline, antialias)
        if "mask" in pipeline.targets and "mask" in driven_targets(adapter, gpu):
            fields["mask_call"] = adapter.mask_call
    return fields


def work_contract(pipeline: Pipeline, antialias: Sequence[bool | None]) -> str:
    """The settings a library chooses for the same steps, e.g. ``RandomResizedCrop
    antialias=True`` ("" where none applies)."""
    return "; ".join(
        f"{step.name} antialias={value}"
        for step, value in zip(pipeline.steps, antialias, strict=True)
        if value is not None
    )


def describe_output(output: Any) -> dict[str, str]:
    """``output_contract`` (container, dtype and shape of one output image, e.g.
    ``torch.Tensor float32 3x224x224``) and ``output_memory`` (contiguous, channels-last or
    strided) of a pipeline's output; a sample with targets is described by its image."""
    if isinstance(output, dict):
        output = output["image"]
    shape = getattr(output, "shape", None)
    if shape is None:  # a PIL image
        width, height = output.size
        return {
            "output_contract": f"PIL.Image {output.mode} {height}x{width}",
            "output_memory": "PIL",
        }
    dims = "x".join(str(int(d)) for d in shape)
    if hasattr(output, "is_contiguous"):  # a torch tensor
        dtype = str(output.dtype).removeprefix("torch.")
        strides = output.stride()
        if output.is_contiguous():
            memory = "contiguous"
        elif len(shape) >= 3 and strides[-3] == 1:
            memory = "channels-last"
        else:
            memory = "strided"
        return {"output_contract": f"torch.Tensor {dtype} {dims}", "output_memory": memory}
    contiguous = bool(output.flags["C_CONTIGUOUS"])
    return {
        "output_contract": f"numpy.ndarray {output.dtype} {dims}",
        "output_memory": "contiguous" if contiguous else "strided",
    }
