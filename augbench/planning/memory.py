"""Memory a planned job needs, predicted while the job graph is built (docs/cloud.md#memory).

Every timed job kind declares what one of its jobs holds (``JobKind.memory``, a function of the
:class:`augbench.planning.sweep.Sweep` returning a :class:`Footprint`): which library's environment
it imports, how many processes import it, how many images stay resident and at which size and
dtype. :func:`predict` turns a footprint into two numbers:

- ``mem_mb``: what the job takes from its machine (shared pages counted once, i.e. the sum of
  the processes' proportional set sizes, Snakemake's ``max_pss``), plus headroom. It is the
  rule's ``resources: mem_mb``: ``snakemake --resources mem_mb=N`` schedules by it, and the plan
  refuses a job whose ``mem_mb`` exceeds its machine (:func:`refusals`).
- ``rss_mb``: what Snakemake's benchmark file reports as ``max_rss``: the *sum* of the processes'
  resident sets, so a forked DataLoader worker counts the parent's pages it maps again (all its
  anonymous pages, of its files' pages only those the worker touches). It is predicted
  so that the validation run (tools/checks/cost_validation.py) can check it too; it is not what
  a machine must have.

Image sizes are known before anything is staged: from the staged manifest where it already
exists, from the embedded default archive's deterministic sizes, or (an archive not staged yet)
from ``dataset.assumed_image_size``, a conservative assumption the plan names.

What each library's processes hold is measured by tools/checks/import_rss.py, in processes of its
own, into ``library_memory.json`` beside this module: a process's resident memory after its
imports (interpreter, augbench, the library, torch where the engine needs it: :func:`process_mb`),
the anonymous part of it, which is all a further interpreter of the same env adds to the
proportional sets (:func:`anonymous_mb`), a transform's temporaries per library and
transform (:func:`working_copies`) and what a forked DataLoader worker holds of its own
(:func:`loader_worker_mb`).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from augbench import paths, policy

MB = 2**20
# Per library, measured by tools/checks/import_rss.py in processes of their own (the file names
# its machine and date), never on the workflow runs the model is checked against:
# ``import_rss_mb``: a process's resident MiB after its imports, [alone, with torch];
# ``working_copies``: a transform's temporaries on one image at their peak, in copies of the image
# at the library's working dtype (adapters' working_value_bytes), per catalog transform (one
# synthetic square image of ``image_px``);
# ``loader_worker``: a forked DataLoader worker's own pages, ``private_mb`` plus ``image_copies``
# decoded (uint8) images of its largest input (JPEGs of two ``worker_px`` sides), and ``file_mb``,
# the pages of the libraries' files it touches.
LIBRARY_MEMORY_FILE = Path(__file__).with_name("library_memory.json")


@functools.cache
def measured() -> dict[str, Any]:
    """The measured per-library memory (LIBRARY_MEMORY_FILE)."""
    return json.loads(LIBRARY_MEMORY_FILE.read_text())


def _fit(key: str, library: str) -> dict[str, float] | None:
    """LIBRARY_MEMORY_FILE's ``key`` measurement of ``library`` (None: not measured)."""
    return measured().get(key, {}).get(library)


def loader_worker_mb(library: str, pixels: float, channels: int, working_mb: float) -> float:
    """What one forked DataLoader worker of ``library`` holds of its own, its largest input
    ``pixels`` large: measured (LIBRARY_MEMORY_FILE's ``loader_worker``: copy-on-write pages and
    its allocator's arenas, plus a decoded image and a crop recipe's temporaries on it; a step
    whose own temporaries, ``working_mb``, are larger stands in for the latter);
    policy.WORKER_PRIVATE_MB and ``working_mb`` for a library it lacks."""
    fit = _fit("loader_worker", library)
    if fit is None:
        return policy.WORKER_PRIVATE_MB + working_mb
    return fit["private_mb"] + max(fit["image_copies"] * pixels * channels / MB, working_mb)


def floor_process_mb(library: str, pixels: float, channels: int) -> float:
    """What one process of a decode floor (it only decodes, forked after the job's process has
    decoded its images) holds of its own, its largest input ``pixels`` large: measured
    (LIBRARY_MEMORY_FILE's ``floor_process``: copy-on-write pages, a decode's buffers and the
    allocator's arenas); for a library it lacks, what its loader worker holds without a
    transform's temporaries (policy.WORKER_PRIVATE_MB where that is not measured either)."""
    fit = _fit("floor_process", library)
    if fit is None:
        return loader_worker_mb(library, pixels, channels, 0.0)
    return fit["private_mb"] + fit["image_copies"] * pixels * channels / MB


def forked_resident_mb(library: str, torch: bool) -> float:
    """What a process forked from one that imported ``library`` has resident of its parent's
    pages: every anonymous page, and only the pages of the libraries' files it touches (fork maps
    none of them; LIBRARY_MEMORY_FILE's ``loader_worker`` ``file_mb``); all of
    :func:`process_mb` for a library without that measurement."""
    fit = _fit("loader_worker", library)
    if fit is None:
        return process_mb(library, torch)
    return anonymous_mb(library, torch) + fit["file_mb"]


def _fitted_copies() -> dict[str, dict[str, float]]:
    return measured()["working_copies"]


def working_copies(library: str, transforms: Iterable[str] | None = None) -> float:
    """Copies of one image a job's transforms need beside it at their peak: the largest over
    ``transforms`` (None: over every transform the fit has for the library). A transform the fit
    lacks counts as the library's largest; a library it lacks, as the largest of any library."""
    fitted = _fitted_copies()
    if library not in fitted:
        return max(copies for found in fitted.values() for copies in found.values())
    table = fitted[library]
    largest = max(table.values())
    if transforms is None:
        return largest
    return max((table.get(name, largest) for name in transforms), default=largest)


@dataclass(frozen=True)
class ImageSizes:
    """(width, height) of a dataset's images in manifest order, known at plan time, and where
    the sizes came from (``manifest``, ``default archive``, ``assumed``)."""

    sizes: tuple[tuple[int, int], ...]
    source: str

    def first(self, count: int) -> list[int]:
        """Pixels of the first ``count`` images (every image where the dataset has fewer; an
        assumed size stands for any number of images)."""
        if self.source == "assumed":
            w, h = self.sizes[0]
            return [w * h] * count
        return [w * h for w, h in self.sizes[:count]]

    def mean_pixels(self, count: int) -> float:
        pixels = self.first(count)
        return sum(pixels) / len(pixels) if pixels else 0.0


@dataclass(frozen=True)
class Footprint:
    """What one job holds at its peak.

    ``processes`` import the library (a pyperf worker, a DataLoader's main process);
    ``forked`` are processes forked from the main process: they share its pages (each counts them
    again in a resident-set sum) and add ``worker_private_mb`` each of their own
    (policy.WORKER_PRIVATE_MB unless the kind knows its workers hold more); of them,
    ``loader_workers`` are DataLoader workers that add ``loader_worker_mb`` each instead, and
    ``floor_processes`` decode-only processes that add ``floor_mb`` each.
    ``images`` x ``pixels`` x ``channels`` x ``value_bytes`` x ``copies`` is the resident pixel
    data of the main process (``copies``: how many forms of the images coexist at the peak, e.g.
    the decoded cache and the library's own tensors while the latter are built)."""

    library: str
    torch: bool = False
    processes: int = 1
    forked: int = 0
    worker_private_mb: float = policy.WORKER_PRIVATE_MB
    loader_workers: int = 0
    loader_worker_mb: float = 0.0
    floor_processes: int = 0
    floor_mb: float = 0.0
    images: int = 0
    pixels: float = 0.0
    channels: int = 3
    value_bytes: int = 1
    copies: float = 1.0
    extra_mb: float = 0.0  # e.g. a light manager process
    # Transient in the main process: a transform's temporaries on its largest image.
    working_mb: float = 0.0
    # DataLoader batches in flight (workers' prefetched batches and the main process's own):
    # made after the workers forked, so never shared with them.
    batches_mb: float = 0.0
    gpu: bool = False

    @property
    def image_mb(self) -> float:
        data = self.images * self.pixels * self.channels * self.value_bytes * self.copies
        return data / MB


@dataclass(frozen=True)
class Prediction:
    mem_mb: int  # requested from the machine (shared pages once, plus headroom)
    rss_mb: int  # Snakemake's max_rss: resident sets summed over the processes
    image_mb: float
    process_mb: float
    forked: int = 0  # forked workers: the machine's view is the PSS sum, not the RSS sum


def process_mb(library: str, torch: bool) -> float:
    """Resident memory of one process after its imports (measured: LIBRARY_MEMORY_FILE's
    ``import_rss_mb``; policy.UNKNOWN_LIBRARY_RSS_MB for a library it lacks)."""
    alone, with_torch = measured()["import_rss_mb"].get(library, policy.UNKNOWN_LIBRARY_RSS_MB)
    return with_torch if torch else alone


def anonymous_mb(library: str, torch: bool) -> float:
    """Of :func:`process_mb`, the anonymous pages (LIBRARY_MEMORY_FILE's ``import_anonymous_mb``;
    all of it for a library the file lacks): what a further process importing the same env adds
    to the job's proportional sets, whose file-backed pages (the libraries' code) count once."""
    found = measured().get("import_anonymous_mb", {}).get(library)
    return found[1 if torch else 0] if found else process_mb(library, torch)


def predict(footprint: Footprint) -> Prediction:
    context = policy.CUDA_CONTEXT_HOST_MB if footprint.gpu else 0.0
    base = process_mb(footprint.library, footprint.torch) + context
    main = base + footprint.image_mb + footprint.extra_mb + footprint.working_mb
    # Another interpreter of the same env shares the libraries' file pages with the first.
    further = footprint.processes - 1
    others = further * (anonymous_mb(footprint.library, footprint.torch) + context)
    fp = footprint
    private = (fp.forked - fp.loader_workers - fp.floor_processes) * fp.worker_private_mb
    private += fp.loader_workers * fp.loader_worker_mb + fp.floor_processes * fp.floor_mb
    # Every timed job runs with its memory sampler (augbench.measuring.memory_peak) beside it.
    needed = main + others + private + footprint.batches_mb + policy.JOB_MEMORY_SAMPLER_MB
    # A forked process's resident set counts the images and its parent's pages it maps again.
    forked = forked_resident_mb(footprint.library, footprint.torch) + context + footprint.image_mb
    rss = needed + further * base - others + footprint.forked * forked
    headroom = policy.MEMORY_HEADROOM
    return Prediction(
        mem_mb=math.ceil(needed * headroom.factor + headroom.mb),
        rss_mb=math.ceil(rss * headroom.factor + headroom.mb),
        image_mb=footprint.image_mb,
        process_mb=base,
        forked=footprint.forked,
    )


# -- image sizes at plan time -----------------------------------------------------------------
def manifest_sizes(manifest: Path) -> ImageSizes | None:
    try:
        files = json.loads(manifest.read_text())["files"]
        return ImageSizes(tuple((int(f["width"]), int(f["height"])) for f in files), "manifest")
    except (OSError, ValueError, KeyError, TypeError):
        return None


def plan_sizes(
    config: Mapping[str, Any],
    base_key: str,
    derived: Mapping[str, Any],
    data_dir: Path = Path(paths.DATA),
) -> dict[str, ImageSizes]:
    """{dataset key: its image sizes} for the staged dataset and each derived one (``derived``:
    key -> ResizeSpec, augbench.planning.resize). A derived dataset's sizes are its base's,
    resized."""
    from augbench.planning import dataset

    base = manifest_sizes(data_dir / base_key / "manifest.json")
    if base is None and not config["dataset"].get("archive"):
        count = int(config["dataset"]["default_images"])
        base = ImageSizes(tuple(dataset.default_image_sizes(count)), "default archive")
    if base is None:
        w, h = config["dataset"]["assumed_image_size"]
        base = ImageSizes(((int(w), int(h)),), "assumed")
    out = {base_key: base}
    for key, spec in derived.items():
        found = manifest_sizes(data_dir / key / "manifest.json")
        out[key] = found or ImageSizes(
            tuple(spec.target_size(w, h) for w, h in base.sizes), base.source
        )
    return out


# -- the refusal before any job starts ----------------------------------------------------------
@dataclass(frozen=True)
class Check:
    """One planned job's prediction against the memory of the machine it runs on."""

    rule: str
    library: str
    dataset: str
    resolution: str
    wildcards: str
    predicted_mb: int
    available_mb: int
    machine: str


def refusals(checks: Iterable[Check], fixes: Mapping[str, str]) -> list[str]:
    """One line per rule with jobs that do not fit: its largest job (library, resolution,
    setting, predicted and available MB), how many of its jobs do not fit, and what to change
    (``fixes``: rule -> advice)."""
    worst: dict[str, Check] = {}
    over: dict[str, int] = {}
    total: dict[str, int] = {}
    for check in checks:
        total[check.rule] = total.get(check.rule, 0) + 1
        if check.predicted_mb <= check.available_mb:
            continue
        over[check.rule] = over.get(check.rule, 0) + 1
        if check.rule not in worst or check.predicted_mb > worst[check.rule].predicted_mb:
            worst[check.rule] = check
    return [
        f"memory: rule {c.rule} needs up to {c.predicted_mb} MB (library {c.library}, resolution "
        f"{c.resolution}{', ' + c.wildcards if c.wildcards else ''}) but {c.machine} has "
        f"{c.available_mb} MB; {over[rule]} of its {total[rule]} jobs do not fit; "
        f"{fixes.get(rule, 'lower num_images')}"
        for rule, c in worst.items()
    ]


def this_machine_mb() -> int:
    """Physical memory of this machine (MiB), for local runs."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    import os

    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // MB)
