# The dataset: one archive (local, gs:// or the embedded default), staged once.
from augbench.planning.dataset import check_staged_file
from augbench.logs import exit_with


rule build_default_archive:
    output:
        archive=paths.DATASET_ARCHIVE.format(dataset="default-{n}"),
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


# Fewer usable images than the configured jobs read (Sweep.required_images) stop the workflow in
# one line before any benchmark job: rule stage_dataset checks while it stages, and a dataset
# staged by an earlier run is checked here, while the job graph is built (a changed image count
# does not re-stage it). dataset.allow_fewer: every job uses the usable images (docs/dataset.md).
# A cloud sweep's manifest is in the bucket: staging checks it there. --until figures measures
# nothing, so it reads no dataset.
if not (workflow.storage_settings.default_storage_provider or PLOTS_ONLY):
    _error, _note = check_staged_file(
        Path(MANIFEST),
        SWEEP.required_images(),
        allow_fewer=bool(config["dataset"].get("allow_fewer")),
        add_hint=(
            "add images to the archive"
            if config["dataset"].get("archive")
            else "raise dataset.default_images"
        ),
    )
    if _error:
        exit_with(_error)
    if _note:
        print(f"augbench: {_note}", file=sys.stderr)


# Staged under the dataset key (name + content hash): two archives of the same name never share a
# folder, and the folder of the configured dataset is the only one this rule writes.
rule stage_dataset:
    input:
        archive=dataset_archive,
    output:
        manifest=MANIFEST,
        images=directory(paths.DATASET_IMAGES.format(dataset=DATASET)),
    log:
        f"logs/data/stage_dataset-{DATASET}.log",
    benchmark:
        f"benchmarks/setup/stage_dataset/{DATASET}.tsv"
    conda:
        "../../envs/driver.yaml"
    params:
        name=DATASET_ID.name,
        key=DATASET,
        # A local archive's sha256 as hashed while the job graph was built (else empty): staging
        # refuses an archive that changed since.
        expected_sha256=DATASET_ID.digest if DATASET_ID.kind == "archive-sha256" else "",
        source=config["dataset"].get("archive")
        or "embedded default (scikit-image photographs)",
        # Recorded in the manifest: with it, every engine uses min(asked, usable) images. The
        # counts the jobs ask for are read from the config by the script (no param: a changed
        # count must not re-stage the dataset and re-run every job).
        allow_fewer=bool(config["dataset"].get("allow_fewer")),
    script:
        "../scripts/stage_dataset.py"


# Resolution sweep: the staged dataset resized once per configured resolution into a derived
# dataset (augbench/planning/resize.py): an archive of its own, staged like any archive, under its own key.
# Defined only when a sweep is configured.
if DERIVED:

    rule resize_dataset:
        input:
            manifest=MANIFEST,
            images=paths.DATASET_IMAGES.format(dataset=DATASET),
        output:
            archive=paths.DATASET_ARCHIVE,
            manifest=paths.DATASET_MANIFEST,
            images=directory(paths.DATASET_IMAGES),
        log:
            "logs/data/resize_dataset-{dataset}.log",
        benchmark:
            "benchmarks/setup/resize_dataset/{dataset}.tsv"
        wildcard_constraints:
            dataset=key_pattern(DERIVED),
        conda:
            "../../envs/driver.yaml"
        # The benchmark slot: a resize reads and writes every image on the cores a measurement
        # of another dataset would share (timed jobs wait for env builds and their own dataset).
        resources:
            bench_slot=1,
        params:
            spec=lambda wildcards: DERIVED[wildcards.dataset][1].to_dict(),
            name=lambda wildcards: DERIVED[wildcards.dataset][0].name,
            digest=lambda wildcards: DERIVED[wildcards.dataset][0].digest,
            base_key=DATASET,
        script:
            "../scripts/resize_dataset.py"
