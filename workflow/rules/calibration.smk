# A/A calibration (docs/calibration.md): the same work measured under two names in separate jobs
# (config calibration.pairs; a library's second name, albumentationsx~b, is a library of its own
# in jobs and rows, augbench/workload/adapters), every row pair decided as the answer page decides a margin;
# a "faster" or "slower" call is a false call (augbench/analysis/calibration.py).
# `snakemake --cores 8 calibration --configfile config/calibration.yaml` measures and counts.

if (
    "calibration" in command_line.targets(sys.argv)
    and not config["calibration"]["pairs"]
):
    exit_with(
        "augbench: the calibration target counts A/A pairs and this config names none "
        "(calibration.pairs): run `snakemake --cores 8 calibration --configfile "
        "config/calibration.yaml` (docs/calibration.md)"
    )

# The run's tidy rows: the transforms' and recipes' (all_results.csv) and the pipelines'.
CALIBRATION_TABLES = {"all": TABLES["all"]}
if SWEEP.pipeline_names:
    CALIBRATION_TABLES["results"] = SWEEP.pipeline_tables()["results"]


rule calibration:
    input:
        **CALIBRATION_TABLES,
    output:
        table="results/tables/calibration.csv",
        pairs="results/tables/calibration_pairs.csv",
    log:
        "logs/analysis/calibration.log",
    benchmark:
        "benchmarks/analysis/calibration.tsv"
    localrule: True
    conda:
        "../../envs/driver.yaml"
    params:
        analysis_code=ANALYSIS_CODE,
        pairs=config["calibration"]["pairs"],
        regimes=config["calibration"]["regimes"],
        machine=MACHINE,
    script:
        "../scripts/calibration.py"
