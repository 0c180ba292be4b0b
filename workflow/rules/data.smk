# The dataset: one archive (local, gs:// or the embedded default), staged once.


rule build_default_archive:
    output:
        archive="results/data/archives/default-{n}.tar",
    log:
        "logs/data/build_default_archive-{n}.log",
    benchmark:
        "benchmarks/setup/build_default_archive/default-{n}.tsv"
    conda:
        "../../envs/driver.yaml"
    params:
        seed=0,
    script:
        "../scripts/build_default_archive.py"


rule stage_dataset:
    input:
        archive=dataset_archive,
    output:
        manifest="results/data/{dataset}/manifest.json",
        images=directory("results/data/{dataset}/images"),
    log:
        "logs/data/stage_dataset-{dataset}.log",
    benchmark:
        "benchmarks/setup/stage_dataset/{dataset}.tsv"
    conda:
        "../../envs/driver.yaml"
    params:
        source=config["dataset"].get("archive")
        or "embedded default (scikit-image photographs)",
    script:
        "../scripts/stage_dataset.py"
