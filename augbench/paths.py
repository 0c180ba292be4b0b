"""The path scheme of what a run writes, declared once: the rules (workflow/rules/*.smk), the sweep,
the workflow's inputs, the cost model and the analysis build and parse paths through here.

- the staged data: archives, manifests and images per dataset key;
- raw results per role (``results``, ``pipelines``, ``diagnostic``), each timed job kind's own
  pattern below its root (:class:`augbench.planning.regimes.records.JobKind`), with the allocator
  and the run dimensions in a result's or a log's name;
- the tables, the analysis pages and figures the downstream rules write.
"""

from __future__ import annotations

import re

from augbench.policy import DEFAULT_ALLOCATOR

# -- staged data (rules stage_dataset, resize_dataset, build_default_archive) -------------------
DATA = "results/data"
DATASET_MANIFEST = DATA + "/{dataset}/manifest.json"
DATASET_IMAGES = DATA + "/{dataset}/images"
DATASET_ARCHIVE = DATA + "/archives/{dataset}.tar"
# A library's env record (rule build_env).
ENV_RECORD = "results/envs/{library}.json"
# Its log: the build's commands and uv's account of what it installed or compiled.
ENV_LOG = "logs/envs/{library}.log"
# A ``module:attr`` pipeline resolved in the torchvision env (rule resolve_pipeline).
RESOLVED_PIPELINE = "results/pipelines/resolved/{pipeline}.json"

# -- raw results, per role ------------------------------------------------------------------------
RAW_ROOT = "results/raw"
PIPELINE_RAW_ROOT = "results/pipelines/raw"
LAZY_ROOT = "results/analysis/lazy_outputs"
ROLE_ROOTS = {"results": RAW_ROOT, "pipelines": PIPELINE_RAW_ROOT, "diagnostic": LAZY_ROOT}
RAW = RAW_ROOT + "/{machine}/{dataset}"
PIPELINE_RAW = PIPELINE_RAW_ROOT + "/{machine}/{dataset}"
LAZY_RAW = LAZY_ROOT + "/{machine}/{dataset}"

# -- tables, pages and figures -----------------------------------------------------------------
TABLES = "results/tables"
ANALYSIS = "results/analysis"


def table(name: str) -> str:
    """``results/tables/<name>.csv``."""
    return f"{TABLES}/{name}.csv"


# Decode-only rows of the JPEG decoders (augbench.workload.decoders; the cpu_dataloader regime's
# table).
DECODERS_TABLE = table("decoders")
# The cpu_dataloader loaders side by side (augbench.workload.loaders): thread / process, spdl /
# process.
LOADERS_TABLE = table("loaders")
LAZY_TABLES = {"csv": f"{ANALYSIS}/lazy_outputs.csv", "markdown": f"{ANALYSIS}/lazy_outputs.md"}
PIPELINE_FIGURE = f"{ANALYSIS}/pipeline_breakdown.png"
PIPELINE_ALLOCATOR_FIGURE = f"{ANALYSIS}/allocator_effect_pipelines.png"
# With more than one allocator setting: each setting's time / glibc's, per row of the same work.
ALLOCATOR_TABLES = {
    "results": table("allocator_effect"),
    "pipelines": table("allocator_effect_pipelines"),
}
# The answer page (augbench.analysis.recommendation); as HTML, the first screen of
# `snakemake --report` (workflow/rules/report.smk).
RECOMMENDATION = {
    "table": table("recommendation"),
    "page": f"{ANALYSIS}/recommendation.md",
    "html": f"{ANALYSIS}/recommendation.html",
}

# The allocator setting (config ``allocators``, augbench.measuring.allocator) is a dimension of
# every timed job: its result and log paths carry it after the library, ``<library>+<setting>``,
# empty for glibc as shipped (so glibc's paths are the ones a run without the dimension writes).
ALLOCATOR_SEPARATOR = "+"
ALLOCATOR_WILDCARD = "{allocator}"
ALLOCATOR_PATTERN = r"(|\+[a-z][a-z-]*)"  # no "?": a storage query is parsed as a URL
# Roles whose jobs run once per allocator setting (a diagnostic checks outputs, not time).
ALLOCATOR_ROLES = ("results", "pipelines")
# Runs of one job (a kind's ``runs_key``): run 1 writes the paths a run without the dimension
# writes; run k > 1 adds ``-run<k>`` to its result file's and its log's names.
RUN_WILDCARD = "{run}"
RUN_PREFIX = "-run"
RUN_PATTERN = r"(|-run[0-9]+)"


# -- the allocator dimension (config allocators; augbench.measuring.allocator) -------------
def allocator_suffix(setting: str) -> str:
    """The ``{allocator}`` wildcard of a setting: empty for glibc as shipped."""
    return "" if setting == DEFAULT_ALLOCATOR else f"{ALLOCATOR_SEPARATOR}{setting}"


def allocator_setting(suffix: str) -> str:
    """The setting of an ``{allocator}`` wildcard (:func:`allocator_suffix` reversed)."""
    return suffix.removeprefix(ALLOCATOR_SEPARATOR) or DEFAULT_ALLOCATOR


def split_allocator(name: str) -> tuple[str, str]:
    """``albumentationsx+mimalloc`` -> (``albumentationsx``, ``mimalloc``): a path component
    of a library's results, and the allocator setting it was measured under."""
    library, separator, setting = name.partition(ALLOCATOR_SEPARATOR)
    return library, allocator_setting(separator + setting)


# -- the run dimension (a kind's runs_key) -------------------------------------------------------
def run_suffix(run: int) -> str:
    """The ``{run}`` wildcard of run ``run`` (1, 2, ...): empty for the first."""
    if run < 1:
        raise ValueError(f"runs count from 1, got {run}")
    return "" if run == 1 else f"{RUN_PREFIX}{run}"


def run_number(suffix: str) -> int:
    """The run of a ``{run}`` wildcard (:func:`run_suffix` reversed)."""
    return int(suffix.removeprefix(RUN_PREFIX)) if suffix else 1


def without_run(path: str) -> tuple[str, int]:
    """A result or log path of some run -> (the first run's path, the run): what the runs of one
    job share (augbench.analysis.runs pools their rows)."""
    found = re.search(rf"{re.escape(RUN_PREFIX)}([0-9]+)(\.json|\.tsv|\.log)?$", path)
    if found is None:
        return path, 1
    return path[: found.start()] + (found.group(2) or ""), int(found.group(1))
