# Image-augmentation throughput benchmark. See README.md; design in docs/architecture.md.
from pathlib import Path

from snakemake.utils import min_version

# 9.19: workflow/profiles/default/profile.yaml is read automatically (docs/architecture.md).
min_version("9.19")


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
include: "workflow/rules/cost.smk"
include: "workflow/rules/plan.smk"


rule all:
    default_target: True
    input:
        final_targets(),


# On a SLURM cluster only the timed jobs are submitted; env builds, dataset staging and the tables
# run where snakemake runs, on the shared file system (augbench/slurm.py).
if SUBMITTING_TO_SLURM:
    workflow.localrules(*slurm.local_rules(rule.name for rule in workflow.rules))


# The answer, in a few lines, at the end of every run that has one (results/analysis/summary.md
# and the report have the intervals).
onsuccess:
    print_recommendation()
