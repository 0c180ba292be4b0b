# The answer page (augbench/analysis/recommendation.py): one table per machine, a row per
# pipeline, a column per library, the verdict of the two fastest (augbench.decision), the share
# of the target model's need and the workers that feed it (from the pipelines' starvation table),
# and the cost per million images. Its short form is printed at the end of every run (Snakefile
# onsuccess).


rule recommendation:
    input:
        unpack(recommendation_inputs),
    output:
        table=RECOMMENDATION["table"],
        page=report(
            RECOMMENDATION["page"],
            caption="../report/recommendation.rst",
            category="Answer",
            labels={"table": "recommendation", "results": "results"},
        ),
    log:
        "logs/analysis/recommendation.log",
    benchmark:
        "benchmarks/analysis/recommendation.tsv"
    localrule: True
    conda:
        "../../envs/driver.yaml"
    params:
        analysis_code=ANALYSIS_CODE,
        pipelines=recommendation_pipelines(),
        starvation=config["starvation"],
        throughput_targets=config["cpu_dataloader"]["required_throughput"],
        cloud=CLOUD,
    script:
        "../scripts/recommend.py"


# `snakemake --cores 8 answer --config pipeline=my_pipeline.yaml`: your pipeline's breakdown,
# DataLoader rows and answer page, without the micro and transform DataLoader jobs.
rule answer:
    input:
        **RECOMMENDATION,
    localrule: True
