"""Input layouts, row statuses and the DataLoader job naming. The libraries are their
declarations (augbench.workload.adapters); which a regime measures follows from their
capabilities."""

from __future__ import annotations

from augbench import result_format
from augbench.workload import adapters

# Input memory layouts of the micro regime (docs/methodology.md). `native` (what the library's
# own decoder returns) is every library's default; `contiguous` (a row-major copy) is a variant
# only where the two differ: the tensor libraries, whose decoders return channels-last memory.
LAYOUTS: tuple[str, ...] = ("native", "contiguous")


def layouts_for(library: str, configured: list[str]) -> list[str]:
    """Configured micro input layouts that apply to ``library`` (always ``native`` first): the
    variants only where its declaration has them (``Adapter.layout_variants``)."""
    variants = adapters.declared(library).layout_variants
    return [lay for lay in configured if lay == "native" or variants]


# Row statuses, as the result format declares them (augbench.result_format).
STATUSES: tuple[str, ...] = result_format.STATUSES


# How the cpu_dataloader regime's (scope, workers) settings map to jobs (config
# cpu_dataloader.job_per): one job per setting (a cloud sweep runs them on parallel VMs and loses
# one setting to a preemption), or one job per library and shard running
# every setting in turn (a local run imports the library once: 3-8 s saved per setting).
DATALOADER_JOB_PER: tuple[str, ...] = ("setting", "library")


def dataloader_setting(scope: str, workers: int | str, loader: str = "", decoder: str = "") -> str:
    """The name of one cpu_dataloader setting, as its result files are named: ``decode-w2``,
    and with a decoder besides native and a loader besides process their result-name parts
    (augbench.workload.decoders.suffix, augbench.workload.loaders.suffix), decoder first:
    ``decode-w2-simplejpeg``, ``decode-w2-thread``, ``decode-w2-simplejpeg-thread``."""
    return f"{scope}-w{workers}{decoder}{loader}"


def dataloader_library_job(shard: str) -> str:
    """Name (log, benchmark file) of the job that runs every setting of one library and shard."""
    return f"all-settings-{shard}"
