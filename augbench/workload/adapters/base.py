"""What every library adapter provides; the engines talk only to this interface.

Adapters import their library lazily (inside methods), so the driver can read the mapping table
(which transforms a library supports, and how) without the library installed.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from collections.abc import Mapping as EnvMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from augbench.workload import layout

Transform = Callable[[Any], Any]
# A pipeline's mask target is derived from its image (the dataset has none): pixels whose first
# channel (8-bit) is above this value. Every adapter's ``make_mask`` and the GPU engine's workers
# use it, so every library gets the same label map.
MASK_THRESHOLD = 127


# The in-memory layouts of a decoded RGB image that decoders deliver and libraries take.
HWC_NUMPY = "hwc_numpy"  # numpy.ndarray HxWx3 uint8, RGB, row-major
CHW_TENSOR = "chw_tensor"  # torch.Tensor 3xHxW uint8, RGB
PIL_IMAGE = "pil_image"  # PIL.Image.Image, mode RGB
BCHW_FLOAT = "bchw_float"  # torch.Tensor 1x3xHxW float32 in [0, 1] (kornia.io's RGB32)
DECODED_LAYOUTS: dict[str, str] = {
    HWC_NUMPY: "numpy HxWx3 uint8 (RGB)",
    CHW_TENSOR: "torch.Tensor 3xHxW uint8 (RGB)",
    PIL_IMAGE: "PIL.Image RGB",
    BCHW_FLOAT: "torch.Tensor 1x3xHxW float32 in [0, 1] (RGB)",
}


class Unsupported(Exception):
    """The library has no direct implementation of the transform."""


@dataclass(frozen=True)
class Mapping:
    """How one catalog transform is expressed in one library.

    ``call`` is the human-readable library call (rendered into docs/transforms.md); ``build``
    returns the callable applied to one image in the library's native format; ``note`` states any
    semantic mismatch with the canonical definition. ``multichannel`` declares that the library's
    operation is defined per channel and accepts any channel count (the 9-channel scenario); the
    declaration is verified in the library environments by tests/test_equivalence.py.
    """

    call: str
    build: Callable[[dict[str, Any]], Transform]
    note: str = ""
    multichannel: bool = False


# What a library can be measured doing: each regime takes the libraries with its capability
# (augbench.planning.regimes.Regime.needs), so a library joins a regime by declaring it here,
# nowhere else.
CPU_TRANSFORMS = "cpu_transforms"  # transforms on decoded images in the CPU process (micro, ...)
GPU_BATCHES = "gpu_batches"  # transforms on batches already on the GPU (gpu_dataloader)
DALI_PIPELINE = "dali_pipeline"  # its own pipelines of decode and operators (dali)
TRAINING_FEED = "training_feed"  # a loader that feeds the training regime's step
CAPABILITIES = (CPU_TRANSFORMS, GPU_BATCHES, DALI_PIPELINE, TRAINING_FEED)

# What the engines import beside a library, in every library's env (envs/common.in): every
# engine's progress bar (distribution -> module), and the micro regime's timer, which no other
# regime's engine imports.
ENGINE_PACKAGES: dict[str, str] = {"tqdm": "tqdm"}
MICRO_TIMER = "pyperf"

# How a library's env is locked (Adapter.lock_mode).
LOCK_JOINT, LOCK_SHARED, LOCK_ALONE = "joint", "shared", "alone"
LOCK_MODES = (LOCK_JOINT, LOCK_SHARED, LOCK_ALONE)


def distribution_license(distribution: str) -> str:
    """An installed distribution's licence as its metadata states it (License-Expression, else
    License, else the licence classifiers); "unknown" where it states none or is not installed."""
    try:
        meta = importlib.metadata.metadata(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"
    for key in ("License-Expression", "License"):
        value = (meta.get(key) or "").strip()
        if value and "\n" not in value and len(value) <= 80:
            return value
    classifiers = [
        c.split("::")[-1].strip()
        for c in meta.get_all("Classifier") or []
        if c.startswith("License")
    ]
    return "; ".join(classifiers) or "unknown"


class Adapter:
    """One benchmarked library: its declaration (class attributes, read on the driver without
    importing the library) and its mappings and operations (in the library's env)."""

    # -- the declaration -------------------------------------------------------------------------
    name: str = ""
    title: str = ""  # how tables, figures and docs name it
    color: str = ""  # its color in every figure (Okabe-Ito: colorblind-safe)
    capabilities: frozenset[str] = frozenset()  # of CAPABILITIES: the regimes that measure it
    # Whether micro's input-layout variants apply (augbench.workload.matrix.LAYOUTS): its decoder's
    # memory layout differs from a row-major copy.
    layout_variants: bool = False
    # The GPU DataLoader's randomness modes it can run, its default first.
    gpu_randomness: tuple[str, ...] = ()
    # How its env is locked (envs/<name>.in -> envs/<name>.txt, tools/maintenance/lock_envs.py):
    # LOCK_JOINT: resolved with the other joint libraries, so the packages they share (numpy,
    # torch, pillow) get one version everywhere; LOCK_SHARED: resolved on its own under the joint
    # versions of what every env installs (envs/common.in: numpy, torch, ...), for a library that
    # installs the same module as another library (its requirements conflict with theirs);
    # LOCK_ALONE: on its own, nothing shared (its own CUDA stack, say).
    lock_mode: str = LOCK_JOINT
    # Distributions its env must not install: they provide the same module as the library does
    # (Pillow-SIMD is the PIL module). The lock drops them from its dependencies' requirements,
    # and a lock or a configured env that would hold both is refused before anything runs.
    replaces_distributions: tuple[str, ...] = ()
    # Environment variables that switch its telemetry and update checks off, set in every
    # benchmark process before any library is imported (augbench.measuring.telemetry).
    telemetry_off: ClassVar[dict[str, str]] = {}
    # Debian packages its env build needs beyond Python (a library compiled from source): what the
    # container image and a fresh machine install (container/Dockerfile, .ci/run).
    build_packages: tuple[str, ...] = ()
    # Whether the GPU regimes' tables and the cpu_vs_gpu figure divide every GPU row by this
    # library's cpu_dataloader row of the same recipe (exactly one library declares it).
    cpu_reference: bool = False
    # The library it is a fork or a drop-in replacement of (the summary compares the two).
    sibling: str = ""
    # Whether its env installs torch: a model step and torch's DataLoader (forked workers) run
    # there. A library with its own pipeline loader (DALI: threads) may lack it.
    env_has_torch: bool = True
    distribution: str = ""  # PyPI distribution whose version identifies the library
    # On an offline GPU node (augbench.gpu_node: its own Python with torch preinstalled, no
    # network): what the library's GPU path imports there beyond torch and ENGINE_PACKAGES,
    # distribution (as its lock spells it) -> module. The node kit runs the GPU regimes of every
    # library with gpu_batches whose distributions the node has or its bundle brings.
    node_packages: ClassVar[dict[str, str]] = {}
    # Why those distributions cannot travel in the node's bundle; empty: their wheels install
    # beside the node's own torch, so the bundle brings those the node lacks, pinned by the
    # library's lock (envs/<name>.txt). A library that cannot travel runs on a node only where
    # the node has its distributions already.
    node_unfit: str = ""
    # Distributions whose versions are recorded with every result row.
    recorded_distributions: tuple[str, ...] = ("numpy", "torch", "pillow", "pyperf")
    native_format: str = ""
    decoder: str = ""
    # What its augmentations take on the CPU, as one of DECODED_LAYOUTS: the layout any declared
    # JPEG decoder's output is converted to (augbench.workload.decoders); empty where the library's
    # own pipeline decodes (DALI).
    decoded_layout: str = ""
    # Bytes per pixel value of native_format, and of the temporaries its transforms make at
    # their peak (float32 where they compute in float): the plan's memory model,
    # augbench.planning.memory.
    value_bytes: int = 1
    working_value_bytes: int = 1

    def __init__(self) -> None:
        self.mappings: dict[str, Mapping] = self._mappings()
        self.unsupported_reasons: dict[str, str] = self._unsupported_reasons()

    # -- mapping table -------------------------------------------------------------------------
    def _mappings(self) -> dict[str, Mapping]:
        raise NotImplementedError

    def _unsupported_reasons(self) -> dict[str, str]:
        """Why a catalog transform has no mapping, where there is more to say than 'none'."""
        return {}

    def supports(self, transform: str) -> bool:
        return transform in self.mappings

    def unsupported_reason(self, transform: str) -> str:
        return self.unsupported_reasons.get(
            transform, f"{self.name} has no direct implementation of {transform}"
        )

    def mapping_call(self, transform: str) -> str | None:
        """The library call recorded with a row, or None where the library lacks the transform."""
        mapping = self.mappings.get(transform)
        return mapping.call if mapping else None

    def build(self, transform: str, params: dict[str, Any]) -> Transform:
        if transform not in self.mappings:
            raise Unsupported(self.unsupported_reason(transform))
        return self.mappings[transform].build(params)

    # -- step options (augbench.workload.pipelines.STEP_OPTIONS)
    # ---------------------------------------- The ``antialias`` settings the library's own call
    # offers per resampling step, its default first (a step without the option runs at the default,
    # which rows record), and why a setting it lacks cannot be had.
    antialias_choices: ClassVar[dict[str, tuple[bool, ...]]] = {}
    antialias_reasons: ClassVar[dict[str, str]] = {}

    def antialias(self, transform: str, options: dict[str, Any]) -> bool | None:
        """The antialias setting a step runs with (None: not a resampling step here)."""
        choices = self.antialias_choices.get(transform)
        if not choices:
            return None
        return bool(options.get("antialias", choices[0]))

    def option_problem(self, transform: str, options: dict[str, Any]) -> str | None:
        """Why the library cannot apply a step with these options (None: it can)."""
        if "antialias" in options:
            wanted = bool(options["antialias"])
            if wanted not in self.antialias_choices.get(transform, ()):
                return self.antialias_reasons.get(
                    transform,
                    f"{self.name}'s {transform} has no {'' if wanted else 'non-'}antialiased mode",
                )
        return None

    def build_step(
        self, transform: str, params: dict[str, Any], options: dict[str, Any] | None = None
    ) -> Transform:
        """A pipeline step: the catalog mapping with the step's options applied through the
        library's own API (``antialias`` reaches the mapping as a parameter; ``p`` below 1 goes
        to :meth:`with_probability`). Raises Unsupported where an option cannot be honoured."""
        options = options or {}
        problem = self.option_problem(transform, options)
        if problem is not None:
            raise Unsupported(problem)
        setting = self.antialias(transform, options)
        built = self.build(
            transform, params if setting is None else {**params, "antialias": setting}
        )
        p = float(options.get("p", 1.0))
        return built if p >= 1.0 else self.with_probability(built, p)

    probability_call: str = "RandomApply(step, p) (Python's random.random() < p)"

    def with_probability(self, transform: Transform, p: float) -> Transform:
        """``transform`` applied with probability ``p``, through the library's own mechanism
        where it has one (each adapter overrides); by default a draw from Python's generator."""
        return RandomApply(transform, p)

    # -- composition (the whole pipeline as the library runs it) -------------------------------
    compose_call: str = "a function chain: each step called on the previous step's output"

    def compose_definition(self, obj: Any) -> Any:
        """The composition in the library's own serialized form, recorded with the row so that
        anyone can rebuild the same object outside the harness (None where there is none)."""
        return None

    def compose(self, steps: list[Transform], mask: bool = False) -> Composed:
        """The library's own composition object of built steps (the recipe tail included, as
        built by :meth:`recipe_tail`), called once per sample. The default is a plain chain
        (what a Pillow user writes); libraries with a container override it."""
        return Composed(Chain(steps), self.compose_call, lambda obj, x: obj(x))

    # -- media ---------------------------------------------------------------------------------
    def import_library(self) -> None:
        """Import the library (and apply nothing else); raises ImportError with the cause."""
        raise NotImplementedError

    def decode(self, path: Path) -> Any:
        """Read and decode one file with the library's own decoder, to its native format."""
        raise NotImplementedError

    # Where the library's decoder also converts the 8-bit pixels to the dtype its augmentations
    # take (Kornia: float32 in [0, 1]), a pipeline timed on pre-decoded images would skip work
    # the other libraries do inside their pipeline (their float conversion): the pipeline
    # breakdown then starts from ``decode_8bit`` and times ``input_conversion`` (label, callable
    # on the 8-bit image) as the pipeline's first step. None: the native image is 8-bit already.
    input_conversion: tuple[str, Callable[[Any], Any]] | None = None

    def decode_8bit(self, path: Path) -> Any:
        """The library's decode before any dtype conversion (see ``input_conversion``)."""
        return self.decode(path)

    def to_array(self, image: Any) -> np.ndarray:
        """Native image -> HWC uint8 numpy array (for caching decoded media)."""
        raise NotImplementedError

    def from_array(self, array: np.ndarray) -> Any:
        """HWC uint8 numpy array -> native image exactly as ``decode`` would have produced it:
        same type, dtype, shape and strides (tests/test_layout_envs.py compares with a fresh
        decode)."""
        raise NotImplementedError

    def with_layout(self, image: Any, layout: str = "native") -> Any:
        """The native image (``native``) or a row-major copy of it (``contiguous``: the harness
        convention before inputs were native; the micro regime's layout variant shows its
        effect on the tensor libraries)."""
        if layout == "native":
            return image
        if layout != "contiguous":
            raise ValueError(f"unknown input layout {layout!r}; known: native, contiguous")
        if isinstance(image, np.ndarray):
            return np.ascontiguousarray(image)
        if hasattr(image, "contiguous"):  # torch tensor
            return image.contiguous()
        return image  # PIL keeps its own storage: no other layout exists

    def materialize(self, output: Any, source: Any) -> Any:
        """The timed call's output, owning its memory and fully computed (inside the timed loop).

        One rule for every library (augbench.workload.layout): copied iff it shares memory with
        ``source`` (the call's input) or is not dense; a copy keeps the output's dimension order,
        so no library pays a relayout (a channels-last output is never made row-major). The
        libraries here compute eagerly on the CPU; CUDA engines synchronize before their clock
        stops."""
        return layout.materialize(output, source)

    # -- targets (pipelines with a mask) -------------------------------------------------------
    # Targets this harness passes through the library's own call API (augbench.workload.pipelines
    # reads this; a pipeline with another target gets a `skipped` row for the library).
    driven_targets: frozenset[str] = frozenset()
    # The same in the GPU regimes (gpu_dataloader), where the engine carries targets to the device.
    gpu_driven_targets: frozenset[str] = frozenset()
    # Human-readable form of how a mask travels with the image, recorded with pipeline rows.
    mask_call: str = ""

    def make_mask(self, image: Any) -> Any:
        """The library's mask for a native image: a binary label map (first channel above
        ``MASK_THRESHOLD``), in the form the library's own mask API takes. The dataset has no
        masks; a derived one has the image's size and real structure."""
        raise NotImplementedError(f"augbench does not drive masks through {self.name}")

    def with_mask(self, transform: Transform) -> Callable[[Any, Any], Any] | None:
        """``transform`` applied to (image, mask) through the library's own API, returning the
        pair (a tuple or a list), so geometry moves the mask with the image; None where the
        callable has no mask meaning (the recipe tail, a plain filter function): the mask then
        passes through unchanged."""
        return None

    # -- building its env ----------------------------------------------------------------------
    @classmethod
    def build_variables(cls, environ: EnvMapping[str, str]) -> dict[str, str]:
        """Environment variables its env build compiles with, given the machine's (a library that
        ships no wheels and is built from source: the instruction set a SIMD build targets)."""
        return {}

    @classmethod
    def build_problem(cls) -> str | None:
        """Why its env cannot be built on this machine, in one line naming what to install
        (checked before a build, on the machine that builds); None: nothing is missing. Only a
        library built from source has anything to check."""
        return None

    # -- provenance ----------------------------------------------------------------------------
    def provenance(self) -> dict[str, Any]:
        """What every row records about the library as imported, beyond its version: its
        licence (from the installed distribution's metadata) and, for a library built here, the
        facts that show which build is the one imported (augbench.workload.adapters.pillow_simd)."""
        return {"license": distribution_license(self.distribution)}

    def versions(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for dist in (self.distribution, *self.recorded_distributions):
            try:
                out[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                out[dist] = "not installed"
        return out

    # -- DataLoader recipes (cpu_dataloader regime) --------------------------------------------
    # Human-readable form of recipe_tail, recorded with every DataLoader row.
    recipe_tail_call: str = ""

    def recipe_tail(self, mean: tuple[float, ...], std: tuple[float, ...]) -> Transform:
        """The library's own Normalize + ToTensor: native image -> float32 3xHxW torch tensor,
        ``(x / 255 - mean) / std`` per channel. Built once per recipe, applied per sample."""
        raise NotImplementedError

    # -- GPU batches (capability gpu_batches: gpu_dataloader, the training regime's GPU feed) --
    # Each returns ``(apply, description)``: ``apply(uint8 BCHW batch on the device)`` gives the
    # normalized float32 batch (with a mask target: (images, masks) in and out).
    def gpu_recipe(
        self, built: Transform | None, call: str, randomness: str, device: Any,
        mean: list[float], std: list[float],
    ) -> tuple[Callable[[Any], Any], str]:  # fmt: skip
        """One built catalog transform (None: the identity recipe, Normalize only) on the
        batch, in the ``randomness`` mode (augbench.workload.gpu_recipes), then Normalize."""
        raise NotImplementedError(f"{self.name} transforms no batches on a GPU")

    def gpu_pipeline(
        self, built: list[Transform], calls: str, mask: bool, randomness: str, device: Any,
        mean: list[float], std: list[float],
    ) -> tuple[Callable[[Any], Any], str]:  # fmt: skip
        """A user pipeline's built steps on the batch in the library's own container, then its
        Normalize (``mean``, ``std``)."""
        raise NotImplementedError(f"{self.name} transforms no batches on a GPU")


class RandomApply:
    """A step applied with probability ``p`` (Python's generator; libraries without their own
    probability mechanism)."""

    def __init__(self, transform: Transform, p: float) -> None:
        import random

        self.transform, self.p, self._draw = transform, p, random.random

    def __call__(self, image: Any) -> Any:
        return self.transform(image) if self._draw() < self.p else image


class Chain:
    """Steps called in order, each on the previous one's output: no container, no copies."""

    def __init__(self, steps: list[Transform]) -> None:
        self.steps = list(steps)

    def __call__(self, image: Any) -> Any:
        for step in self.steps:
            image = step(image)
        return image


@dataclass(frozen=True)
class Composed:
    """A whole pipeline as its library runs it: ``obj`` is the library's own object (A.Compose,
    v2.Compose, K.AugmentationSequential, a chain), ``call(obj, sample)`` the one call a user
    makes per sample (a sample is the image, or {"image", "mask"} with a mask target; the
    result has the same form), ``description`` how rows name it."""

    obj: Any
    description: str
    call: Callable[[Any, Any], Any]

    def __call__(self, sample: Any) -> Any:
        return self.call(self.obj, sample)


# The steps of PhotoMetricDistort, each with a canonical factor range (catalog parameters).
PHOTOMETRIC_STEPS: tuple[str, ...] = ("brightness", "contrast", "saturation", "hue")


def photometric_ranges(params: dict[str, Any], suffix: str = "") -> dict[str, tuple[float, ...]]:
    """PhotoMetricDistort's step ranges as keyword arguments ``<step><suffix>`` (torchvision
    takes the bare step names, AlbumentationsX ``<step>_range``), each range a tuple."""
    return {f"{step}{suffix}": tuple(params[step]) for step in PHOTOMETRIC_STEPS}


def uniform(rng_range: tuple[float, float]) -> float:
    import random

    low, high = rng_range
    return random.uniform(low, high)
