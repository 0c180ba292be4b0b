# Image-augmentation throughput benchmark. See README.md; design in docs/architecture.md.
import os
import platform
import sys
import tomllib
from pathlib import Path

from packaging.specifiers import SpecifierSet
from snakemake.utils import min_version

# The Python versions the workflow runs under are pyproject.toml's requires-python (uv picks an
# interpreter that fits). Under any other the run ends here, in one line, before the workflow
# imports anything that may not work there.
with open(Path(workflow.basedir) / "pyproject.toml", "rb") as _pyproject:
    _REQUIRES_PYTHON = tomllib.load(_pyproject)["project"]["requires-python"]
if platform.python_version() not in SpecifierSet(_REQUIRES_PYTHON):
    print(
        f"augbench: needs Python {_REQUIRES_PYTHON} (pyproject.toml), not "
        f"{platform.python_version()} ({sys.executable}); run it as README.md says: "
        ".uv/bin/uv run --locked snakemake ...",
        file=sys.stderr,
        flush=True,
    )
    raise SystemExit(1)

# 9.19: workflow/profiles/default/profile.yaml is read automatically (docs/architecture.md).
min_version("9.19")

# `--executor googlebatch` with no profile is the googlebatch profile's run: Snakemake starts again
# with it, before the workflow reads anything (augbench/planning/launch.py).
from augbench.planning import launch
from augbench.logs import exit_with

try:
    _with_profile = launch.with_profile(
        sys.argv, Path(workflow.basedir), sys.executable
    )
except launch.LaunchError as _exc:
    exit_with(f"augbench: {_exc}")
if _with_profile:
    print(launch.note(_with_profile), file=sys.stderr, flush=True)
    sys.stdout.flush()
    os.execv(_with_profile[0], _with_profile)


# One timed job at a time per machine: bench_slot counts per node or VM, never across them (a
# local run is one machine; under a cluster or cloud executor jobs on separate machines never
# wait for each other, whichever profile is loaded, profiles/default's bench_slot=1 included).
resource_scopes:
    bench_slot="local",


# Resolved against the repository, so --directory runs elsewhere still find it.
configfile: str(Path(workflow.basedir) / "config" / "config.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/envs.smk"
include: "workflow/rules/timed.smk"
include: "workflow/rules/cpu_dataloader.smk"
include: "workflow/rules/pipelines.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/lazy_outputs.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/recommendation.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/cost.smk"
include: "workflow/rules/plan.smk"
include: "workflow/rules/calibration.smk"


rule all:
    default_target: True
    input:
        final_targets(),


# On a SLURM cluster only the timed jobs are submitted; env builds, dataset staging and the tables
# run where snakemake runs, on the shared file system (augbench/planning/slurm.py).
if SUBMITTING_TO_SLURM:
    workflow.localrules(*slurm.local_rules(rule.name for rule in workflow.rules))


# The answer, in a few lines, at the end of every run that has one (results/analysis/summary.md
# and the report have the intervals); then, where an env build kept a measurement from running
# again, one line saying which (envs.smk).
onsuccess:
    print_recommendation()
    report_left_behind()
