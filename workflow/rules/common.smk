# Configuration, the benchmark matrix and input functions shared by every rule file.
import json
import shlex
import sys
from pathlib import Path

sys.path.insert(0, workflow.basedir)

from augbench import catalog, gpu_recipes, matrix  # noqa: E402
from augbench.config import ConfigError, resolve  # noqa: E402
from augbench.policy import MICRO_THREADS, SlowTransformPolicy  # noqa: E402
from augbench.policy import DATALOADER_THREADS  # noqa: E402

try:
    config.update(resolve(config, Path(workflow.basedir)))
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None

MACHINE = config["machine"]
LIBRARIES = config["libraries"]
REGIMES = config["regimes"]
TRANSFORMS = config["transforms"]
ENV_MANAGER = config["envs"]["manager"]
SLOW_POLICY = SlowTransformPolicy.from_config(config)
IMPLEMENTED_REGIMES = ("micro", "cpu_dataloader", "gpu_dataloader", "dali")

for _regime in REGIMES:
    if _regime not in IMPLEMENTED_REGIMES:
        raise WorkflowError(
            f"config error at regimes: {_regime!r} has no rules in this version; "
            f"implemented: {list(IMPLEMENTED_REGIMES)}"
        )
    if not matrix.libraries_for(_regime, LIBRARIES):
        raise WorkflowError(
            f"config error at regimes: {_regime!r} measures "
            f"{list(matrix.REGIME_LIBRARIES[_regime])}, none of which is in libraries "
            f"{LIBRARIES}; add one to libraries or drop the regime"
        )


wildcard_constraints:
    machine=MACHINE.replace(".", r"\."),
    library="|".join(matrix.LIBRARIES),
    shard=r"(contiguous-)?(c9)?s\d{3}",
    n=r"\d+",


def repo_path(relative):
    """A file shipped with the workflow (not produced by it), independent of --directory.
    local(): with a default storage provider (cloud sweeps) it is read from the deployed
    workflow sources on each node, never looked up in the bucket."""
    return local(str(Path(workflow.basedir) / relative))


# -- dataset ----------------------------------------------------------------------------------
def dataset_name():
    ds = config["dataset"]
    if ds.get("name"):
        return ds["name"]
    if ds.get("archive"):
        stem = Path(ds["archive"]).name
        for suffix in (".tar.gz", ".tgz", ".tar"):
            if stem.endswith(suffix):
                return stem[: -len(suffix)]
    return f"default-{ds['default_images']}"


def dataset_identity():
    """Name + short content hash, known while the job graph is built (augbench.dataset.identity):
    the sha256 of a local archive (cached by path, size and mtime in .augbench/), the build
    parameters of the embedded default, the md5 GCS reports for a gs:// object. A missing archive
    or object stops the workflow here, before any job runs."""
    from augbench.dataset import DatasetError, identity

    try:
        found = identity(
            config["dataset"], dataset_name(), cache=Path(".augbench/dataset-ids.json")
        )
    except DatasetError as exc:
        raise WorkflowError(str(exc)) from None
    if found.note:
        print(f"augbench: {found.note}", file=sys.stderr)
    return found


DATASET_ID = dataset_identity()
# The dataset key (<name>-<12 hex digits>) names the staged folder and every raw result folder:
# results of two datasets sit side by side, and switching back schedules nothing already measured.
DATASET = DATASET_ID.key
MANIFEST = f"results/data/{DATASET}/manifest.json"


# -- resolution sweep (docs/resolution.md) ------------------------------------------------------
def derived_datasets():
    """{derived key: (identity, ResizeSpec)}, one per configured resolution, in config order."""
    from augbench.resize import ResizeSpec, derived_identity

    out = {}
    for resolution in config.get("resolutions") or []:
        spec = ResizeSpec(int(resolution))
        found = derived_identity(DATASET_ID, spec)
        out[found.key] = (found, spec)
    return out


DERIVED = derived_datasets()
RESOLUTION_REGIMES = config.get("resolution_regimes") or ["micro"]
for _regime in RESOLUTION_REGIMES if DERIVED else []:
    if _regime not in REGIMES:
        raise WorkflowError(
            f"config error at resolution_regimes: {_regime!r} is not in regimes {REGIMES}; "
            "add it to regimes or drop it from resolution_regimes"
        )


def key_pattern(keys):
    """A wildcard constraint matching exactly these dataset keys. Keys are [A-Za-z0-9_.-], so
    only the dot needs escaping; no "?" or other URL syntax, since with a default storage
    provider (gs://) output patterns are parsed as URLs."""
    return "|".join(key.replace(".", r"\.") for key in keys)


# Only the datasets this config measures (the staged one and its resolution sweep): a benchmark
# rule never re-creates results measured on another dataset.
wildcard_constraints:
    dataset=key_pattern([DATASET, *DERIVED]),


def resolution_results():
    """Raw results of the resolution sweep: the resolution regimes on every derived dataset."""
    by_regime = {
        "micro": micro_results,
        "cpu_dataloader": cpu_dataloader_results,
        "gpu_dataloader": gpu_dataloader_results,
        "dali": dali_results,
    }
    return [
        path
        for key in DERIVED
        for regime in RESOLUTION_REGIMES
        for path in by_regime[regime](key)
    ]


# The manifest a benchmark job reads: the staged dataset's or a derived one's (wildcard dataset).
DATASET_MANIFEST = "results/data/{dataset}/manifest.json"


def raw_result(regime, name, library="{library}", machine="{machine}", dataset=None):
    """results/raw/<machine>/<dataset key>/<regime>/<library>/<name>.json; with the default
    arguments a rule's output pattern (wildcards machine, dataset, library), with values one file
    of a result list (of the staged dataset unless ``dataset`` names a derived one)."""
    if dataset is None:
        dataset = "{dataset}" if machine == "{machine}" else DATASET
    return f"results/raw/{machine}/{dataset}/{regime}/{library}/{name}.json"


def job_log(regime, name):
    """Log of one benchmark job, beside its result's layout (wildcards machine, dataset,
    library)."""
    return f"logs/{{machine}}/{{dataset}}/{regime}/{{library}}/{name}.log"


def job_benchmark(regime, name):
    return f"benchmarks/{{machine}}/{{dataset}}/{regime}/{{library}}/{name}.tsv"


def other_dataset_results():
    """Raw results of this machine measured on other datasets (other keys under
    results/raw/<machine>/): the tables keep them, each row labelled with its dataset, and no
    rule re-creates them."""
    root = Path("results/raw") / MACHINE
    if not root.is_dir():
        return []
    return sorted(
        str(path)
        for key in root.iterdir()
        if key.is_dir() and key.name not in (DATASET, *DERIVED)
        for regime in REGIMES
        for path in (key / regime).glob("*/*.json")
    )


def dataset_archive(wildcards):
    derived = getattr(wildcards, "dataset", DATASET)
    if derived in DERIVED:
        return f"results/data/archives/{derived}.tar"
    archive = config["dataset"].get("archive")
    if not archive:
        return (
            f"results/data/archives/default-{config['dataset']['default_images']}.tar"
        )
    if archive.startswith("gs://"):
        return storage(archive)
    return archive


# -- environments ------------------------------------------------------------------------------
def venv_dir(library):
    return str(Path(config["envs"]["dir"]) / library)


def env_marker(library):
    return f"results/envs/{library}.json"


def benchmark_env_inputs(wildcards):
    """Every configured env marker as ancient(): timed jobs wait for all env builds to finish (no
    build competes with a measurement), but a rewritten marker (an env rebuilt from the same lock,
    or build_env's own code changing) never forces re-measurement. What does is the job's `lock`
    input: a changed envs/<library>.txt means different library versions. `lock` and `archive`
    also let provision_command() rebuild the env and restage the dataset on a node that lacks
    them (a cloud VM)."""
    inputs = {
        "env": ancient(env_marker(wildcards.library)),
        "lock": repo_path(f"envs/{wildcards.library}.txt"),
        "archive": dataset_archive(wildcards),
    }
    for lib in LIBRARIES:
        if lib != wildcards.library:
            inputs[f"env_{lib}"] = ancient(env_marker(lib))
    return inputs


# -- provisioning and cloud placement -------------------------------------------------------
CLOUD = config["cloud"]


def provision_command(wildcards):
    """Launcher of every benchmark job (augbench.provision): ensures the library venv and the
    staged dataset on the node running the job, then execs the engine in the venv. Use as
    `{params.provision} --lock {input.lock:q} --archive {input.archive:q}
    --manifest {input.manifest:q} -- -m augbench.engines.<regime> <engine args>`; the launcher
    appends --manifest and --env-marker for the engine."""
    args = [
        sys.executable,
        "-m",
        "augbench.provision",
        "--library",
        wildcards.library,
        "--manager",
        ENV_MANAGER,
        "--venv",
        venv_dir(wildcards.library),
        "--python",
        config["envs"].get("python") or sys.executable,
        "--scratch",
        CLOUD["scratch"],
    ]
    return " ".join(shlex.quote(a) for a in args)


def cloud_resources(regime):
    """Google Batch placement of one regime's benchmark jobs (config cloud.regimes.<regime>), as
    resources of its benchmark rules (`resources: bench_slot=1, **cloud_resources("<regime>")`). The googlebatch
    executor reads googlebatch_* and nvidia_gpu; local runs ignore them."""
    spec = CLOUD.get("regimes", {}).get(regime)
    if spec is None:
        raise WorkflowError(
            f"config error at cloud.regimes: no placement for regime {regime!r}; "
            f"configured: {sorted(CLOUD.get('regimes', {}))}"
        )
    resources = {
        "googlebatch_machine_type": spec["machine_type"],
        "googlebatch_cpu_milli": spec["cpus"] * 1000,
        "googlebatch_memory": spec["memory_mb"],
        "googlebatch_boot_disk_gb": CLOUD["boot_disk_gb"],
    }
    if spec.get("gpu"):
        resources["nvidia_gpu"] = spec["gpu"]
    return resources


# -- micro regime ---------------------------------------------------------------------------
def shards(items, size, prefix=""):
    return {
        f"{prefix}s{i:03d}": items[start : start + size]
        for i, start in enumerate(range(0, len(items), size))
    }


# The 9-channel scenario writes its own shards (c9s000, ...) next to the RGB ones.
CHANNELS = config["channels"]
MICRO_SHARDS = shards(
    TRANSFORMS, config["micro"]["shard_size"], "" if CHANNELS == 3 else f"c{CHANNELS}"
)


# Images the micro regime times (micro.num_images, else the top-level num_images).
MICRO_NUM_IMAGES = config["micro"].get("num_images") or config["num_images"]


# Input layouts other than native write their own shards (contiguous-s000, ...).
MICRO_LAYOUTS = config["micro"].get("layouts", ["native"])


def _layout_prefix(layout):
    return "" if layout == "native" else f"{layout}-"


def micro_layout(wildcards):
    for layout in matrix.LAYOUTS:
        if layout != "native" and wildcards.shard.startswith(_layout_prefix(layout)):
            return layout
    return "native"


def micro_transforms(wildcards):
    shard = wildcards.shard.removeprefix(_layout_prefix(micro_layout(wildcards)))
    return ",".join(MICRO_SHARDS[shard])


def micro_results(dataset=None):
    return [
        raw_result("micro", f"{_layout_prefix(layout)}{shard}", lib, MACHINE, dataset)
        for lib in matrix.libraries_for("micro", LIBRARIES)
        for layout in matrix.layouts_for(lib, MICRO_LAYOUTS)
        for shard in MICRO_SHARDS
    ]


# -- lazy-output diagnostic (not a benchmark) -------------------------------------------------
LAZY = {
    "enabled": True,
    "num_images": 10,
    "repeats": 3,
    **config.get("lazy_outputs", {}),
}
LAZY_ENABLED = LAZY["enabled"] and "micro" in REGIMES
LAZY_TABLES = {
    "csv": "results/analysis/lazy_outputs.csv",
    "markdown": "results/analysis/lazy_outputs.md",
}


def lazy_outputs_results():
    return [
        f"results/analysis/lazy_outputs/{MACHINE}/{DATASET}/{lib}.json"
        for lib in matrix.libraries_for("micro", LIBRARIES)
    ]


def lazy_outputs_inputs(wildcards=None):
    """This dataset's diagnostics plus those this machine ran on other datasets (rows carry
    their dataset), so switching datasets back and forth re-runs nothing, as for `aggregate`.
    """
    root = Path("results/analysis/lazy_outputs") / MACHINE
    others = (
        sorted(
            str(path)
            for key in root.iterdir()
            if key.is_dir() and key.name != DATASET
            for path in key.glob("*.json")
        )
        if root.is_dir()
        else []
    )
    return [*lazy_outputs_results(), *others]


def lazy_outputs_num_images():
    return min(LAZY["num_images"], config["num_images"])


def summary_extra_inputs(wildcards):
    """The lazy-output table (its flags), the starvation table (its section) and the user
    pipelines' rows (their breakdown sums), for this workflow's own sweep."""
    extra = {}
    if LAZY_ENABLED and wildcards.root == "results":
        extra["lazy"] = LAZY_TABLES["csv"]
    if wildcards.root == "results":  # the "Will my GPU starve?" section
        extra["starvation"] = "results/tables/starvation.csv"
    if PIPELINES and wildcards.root == "results":
        extra["pipelines"] = "results/tables/pipeline_results.csv"
    return extra


# -- cpu_dataloader regime ---------------------------------------------------------------------
DATALOADER = config["cpu_dataloader"]


def _dataloader_transforms():
    """Recipes to run: the block's own list, "all", or (absent) the top-level transforms."""
    chosen = DATALOADER.get("transforms")
    if chosen is None:
        return TRANSFORMS
    return catalog.names() if chosen == "all" else chosen


DATALOADER_TRANSFORMS = _dataloader_transforms()
DATALOADER_SHARDS = shards(DATALOADER_TRANSFORMS, DATALOADER["shard_size"])


def cpu_dataloader_transforms(wildcards):
    return ",".join(DATALOADER_SHARDS[wildcards.shard])


def cpu_dataloader_num_images():
    return DATALOADER.get("num_images") or config["num_images"]


# Every (scope, workers) setting, in the order a job_per: library job measures them.
DATALOADER_SETTINGS = [
    matrix.dataloader_setting(scope, workers)
    for scope in DATALOADER["scopes"]
    for workers in DATALOADER["workers"]
]


def cpu_dataloader_results(dataset=None):
    return [
        raw_result("cpu_dataloader", f"{setting}-{shard}", lib, MACHINE, dataset)
        for lib in matrix.libraries_for("cpu_dataloader", LIBRARIES)
        for setting in DATALOADER_SETTINGS
        for shard in DATALOADER_SHARDS
    ]


def cpu_dataloader_library_outputs():
    """Output patterns of a job_per: library job (wildcards machine, dataset, library, shard):
    one result file per setting, named as the job_per: setting jobs name theirs."""
    return [raw_result("cpu_dataloader", f"{s}-{{shard}}") for s in DATALOADER_SETTINGS]


def cpu_dataloader_library_threads():
    """The main process plus the most workers any of the job's settings starts."""
    return max(DATALOADER["workers"]) + 1


# The cpu_dataloader rule's shell (workflow/rules/cpu_dataloader.smk), shared by its two forms.
CPU_DATALOADER_ARGS = (
    " --shard {wildcards.shard} --transforms {params.transforms:q}"
    " --num-images {params.num_images}"
    " --machine {wildcards.machine} --batch-size {params.batch_size}"
    " --batches-per-run {params.batches_per_run} --num-runs {params.num_runs}"
    " --prefetch-factor {params.prefetch_factor}"
    " --persistent-workers {params.persistent_workers}"
    " --cap-workers-at-cores {params.cap_workers} --batch-timeout {params.batch_timeout}"
    " --baseline-runs {params.baseline_runs} --policy {params.policy:q}"
)
CPU_DATALOADER_PREFIX = (
    "{params.thread_env} PYTHONPATH={params.root:q} {params.provision}"
    " --lock {input.lock:q} --archive {input.archive:q} --manifest {input.manifest:q}"
    " -- -m augbench.engines.cpu_dataloader --library {wildcards.library}"
)


def cpu_dataloader_params():
    return dict(
        provision=provision_command,
        root=workflow.basedir,
        thread_env=DATALOADER_THREADS.shell_prefix(),
        transforms=cpu_dataloader_transforms,
        num_images=cpu_dataloader_num_images(),
        batch_size=DATALOADER["batch_size"],
        batches_per_run=DATALOADER["batches_per_run"],
        num_runs=DATALOADER["num_runs"],
        prefetch_factor=DATALOADER["prefetch_factor"],
        persistent_workers=DATALOADER["persistent_workers"],
        cap_workers=DATALOADER["cap_workers_at_cores"],
        batch_timeout=DATALOADER["batch_timeout_s"],
        baseline_runs=DATALOADER["baseline_runs"],
        policy=json.dumps(SLOW_POLICY.to_dict()),
    )


# -- GPU regimes: gpu_dataloader and dali ------------------------------------------------------
GPU_DL = config["gpu_dataloader"]
DALI = config["dali"]
# The Identity baseline (crop + Normalize only) leads every GPU regime's recipe list.
GPU_RECIPES = [gpu_recipes.IDENTITY, *TRANSFORMS]
GPU_DL_SHARDS = shards(GPU_RECIPES, GPU_DL["shard_size"])
DALI_SHARDS = shards(GPU_RECIPES, DALI["shard_size"])
GPU_MODE = config["gpu"]


def gpu_dataloader_randomness(library):
    allowed = gpu_recipes.LIBRARY_RANDOMNESS[library]
    return [r for r in GPU_DL["torchvision_randomness"] if r in allowed] or list(
        allowed
    )


def gpu_dataloader_workers(scope):
    """Scope memory times batches already on the GPU: no DataLoader workers, one job."""
    return [0] if scope == "memory" else GPU_DL["workers"]


def gpu_dataloader_transforms(wildcards):
    return ",".join(GPU_DL_SHARDS[wildcards.shard])


def gpu_dataloader_results(dataset=None):
    return [
        raw_result(
            "gpu_dataloader",
            f"{scope}_w{workers}_{randomness}_{shard}",
            lib,
            MACHINE,
            dataset,
        )
        for lib in matrix.libraries_for("gpu_dataloader", LIBRARIES)
        for scope in GPU_DL["scopes"]
        for workers in gpu_dataloader_workers(scope)
        for randomness in gpu_dataloader_randomness(lib)
        for shard in GPU_DL_SHARDS
    ]


def dali_transforms(wildcards):
    return ",".join(DALI_SHARDS[wildcards.shard])


def dali_results(dataset=None):
    return [
        raw_result("dali", f"{variant}_{shard}", lib, MACHINE, dataset)
        for lib in matrix.libraries_for("dali", LIBRARIES)
        for variant in DALI["variants"]
        for shard in DALI_SHARDS
    ]


# -- user pipelines (augbench/pipelines.py; rules in pipelines.smk) ----------------------------
PIPELINES = config["pipeline_definitions"]
PIPELINE_NAMES = [p["name"] for p in PIPELINES]
PIPELINE_RUNS = config["pipeline_runs"]
# Pipeline results sit in their own tree, results/pipelines/raw/<machine>/<dataset>/<regime>/,
# with their own tables: single-transform tables, figures, comparisons never read them.
PIPELINE_ROOT = "results/pipelines/raw"


def pipeline_result(regime, name, library="{library}", machine="{machine}"):
    """As raw_result() (wildcards machine, dataset, library as a rule's pattern), below
    PIPELINE_ROOT; pipelines run on the staged dataset only."""
    dataset = "{dataset}" if machine == "{machine}" else DATASET
    return f"{PIPELINE_ROOT}/{machine}/{dataset}/{regime}/{library}/{name}.json"


def pipelines_json():
    """The resolved pipelines, passed to the engines (a changed pipeline re-runs its jobs)."""
    return json.dumps(PIPELINES, sort_keys=True)


def pipeline_breakdown_results():
    """One breakdown job per library runs every pipeline (micro regime, one thread)."""
    if not PIPELINES or "micro" not in REGIMES:
        return []
    return [
        pipeline_result("micro", "breakdown", lib, MACHINE)
        for lib in matrix.libraries_for("micro", LIBRARIES)
    ]


def pipeline_dataloader_results():
    """One cpu_dataloader job per library x scope x workers runs every pipeline as its recipe."""
    if not PIPELINES or "cpu_dataloader" not in REGIMES:
        return []
    return [
        pipeline_result(
            "cpu_dataloader", matrix.dataloader_setting(scope, workers), lib, MACHINE
        )
        for lib in matrix.libraries_for("cpu_dataloader", LIBRARIES)
        for scope in PIPELINE_RUNS["dataloader_scopes"]
        for workers in PIPELINE_RUNS["dataloader_workers"]
    ]


def pipeline_gpu_dataloader_results():
    """One gpu_dataloader job per library x scope x workers x randomness runs every pipeline
    (the single-transform sweep's settings, config gpu_dataloader)."""
    if not PIPELINES or "gpu_dataloader" not in REGIMES:
        return []
    return [
        pipeline_result(
            "gpu_dataloader", f"{scope}-w{workers}_{randomness}", lib, MACHINE
        )
        for lib in matrix.libraries_for("gpu_dataloader", LIBRARIES)
        for scope in GPU_DL["scopes"]
        for workers in gpu_dataloader_workers(scope)
        for randomness in gpu_dataloader_randomness(lib)
    ]


def pipeline_dali_results():
    """One DALI job per variant (config dali.variants) runs every pipeline."""
    if not PIPELINES or "dali" not in REGIMES:
        return []
    return [
        pipeline_result("dali", variant, lib, MACHINE)
        for lib in matrix.libraries_for("dali", LIBRARIES)
        for variant in DALI["variants"]
    ]


def pipeline_table_inputs(wildcards=None):
    """This sweep's pipeline results plus those this machine measured on other datasets (rows
    carry their dataset), as `aggregate` does for single transforms."""
    root = Path(PIPELINE_ROOT) / MACHINE
    others = (
        sorted(
            str(path)
            for key in root.iterdir()
            if key.is_dir() and key.name not in (DATASET, *DERIVED)
            for path in key.glob("*/*/*.json")
        )
        if root.is_dir()
        else []
    )
    return [
        *pipeline_breakdown_results(),
        *pipeline_dataloader_results(),
        *pipeline_gpu_dataloader_results(),
        *pipeline_dali_results(),
        *others,
    ]


def pipeline_tables():
    """Tidy pipeline rows, the breakdown and one speedup table per pipeline."""
    if not PIPELINES:
        return {}
    return {
        "results": "results/tables/pipeline_results.csv",
        "breakdown": "results/tables/pipeline_breakdown.csv",
        # "Will my GPU starve?" for the pipelines (augbench.analysis.starvation, decode scope).
        "starvation": "results/tables/starvation_pipelines.csv",
        **{
            f"speedups_{name}": f"results/tables/speedups_pipeline_{name}.csv"
            for name in PIPELINE_NAMES
        },
    }


def pipeline_targets():
    """Raw pipeline results (targets in their own right, as result_files()), tables, figure."""
    if not PIPELINES:
        return []
    return [
        *pipeline_breakdown_results(),
        *pipeline_dataloader_results(),
        *pipeline_gpu_dataloader_results(),
        *pipeline_dali_results(),
        *pipeline_tables().values(),
        "results/analysis/pipeline_breakdown.png",
    ]


# -- aggregation -----------------------------------------------------------------------------
def result_files(wildcards=None):
    """Raw results of the configured sweep (the current dataset): targets of `all`."""
    files = []
    if "micro" in REGIMES:
        files += micro_results()
    if "cpu_dataloader" in REGIMES:
        files += cpu_dataloader_results()
    if "gpu_dataloader" in REGIMES:
        files += gpu_dataloader_results()
    if "dali" in REGIMES:
        files += dali_results()
    return files + resolution_results()


GPU_TABLES = (
    {
        "gpu_vs_cpu_ratio": "results/tables/gpu_vs_cpu_ratio.csv",
        "gpu_memory": "results/tables/gpu_throughput_memory.csv",
    }
    if {"gpu_dataloader", "dali"} & set(REGIMES)
    else {}
)


def table_outputs():
    return {
        "all": "results/tables/all_results.csv",
        "coverage": "results/tables/coverage.csv",
        **{f"speedups_{r}": f"results/tables/speedups_{r}.csv" for r in REGIMES},
        **{f"throughputs_{r}": f"results/tables/throughputs_{r}.csv" for r in REGIMES},
        **(
            {
                "worker_scaling_cpu_dataloader": "results/tables/worker_scaling_cpu_dataloader.csv",
                "starvation_cpu_dataloader": "results/tables/starvation_cpu_dataloader.csv",
            }
            if "cpu_dataloader" in REGIMES
            else {}
        ),
        **GPU_TABLES,
        "resolution_scaling": "results/tables/resolution_scaling.csv",
        "starvation": "results/tables/starvation.csv",
    }


def final_targets():
    # Raw result files are targets in their own right: a deleted or killed shard is re-run
    # even when the tables built from it still exist.
    lazy = list(LAZY_TABLES.values()) if LAZY_ENABLED else []
    return [
        *result_files(),
        *table_outputs().values(),
        *figure_targets(),
        *lazy,
        *pipeline_targets(),
    ]


def after_timed_jobs(wildcards=None):
    """Every timed job's output (benchmark results, the user pipelines' jobs and the lazy-output
    diagnostic) as ancient() inputs of the untimed jobs that could otherwise start while a
    measurement still runs (aggregate, lazy_outputs_table, pipeline_tables): they wait for the
    last timed job instead of sharing its cores. ancient(): a rewritten file never re-runs them
    by itself; their own inputs do.
    """
    # Every dataset's files, as aggregate's and lazy_outputs_table's own inputs are: switching
    # datasets back and forth leaves the input sets unchanged, so nothing re-runs.
    lazy = lazy_outputs_inputs() if LAZY_ENABLED else []
    return ancient([*aggregate_inputs(), *lazy, *pipeline_table_inputs()])


def aggregate_inputs(wildcards=None):
    """The sweep's results plus what this machine measured on other datasets."""
    return [*result_files(), *other_dataset_results()]


# -- figures, report and analysis (downstream of the tidy table only) ------------------------

PLOT_FROM = config.get("plot_from") or {}


def figure_targets(root="results"):
    """The figures folder (PNG, PDF and caption of every family), the report tables and the
    summary of one output root."""
    return [
        f"{root}/figures",
        f"{root}/analysis/speedups.html",
        f"{root}/analysis/summary.md",
    ]


def tidy_table(wildcards):
    return f"{wildcards.root}/tables/all_results.csv"


def plot_from_sources(name):
    if name not in PLOT_FROM:
        raise WorkflowError(
            f"config error at plot_from: no entry {name!r}; configured: {sorted(PLOT_FROM)}"
        )
    return PLOT_FROM[name]


def plot_from_fingerprint(wildcards):
    from augbench.analysis.collect import fingerprint

    try:
        return fingerprint(plot_from_sources(wildcards.name))
    except FileNotFoundError as exc:
        raise WorkflowError(
            f"config error at plot_from.{wildcards.name}: {exc}"
        ) from None


def plot_targets():
    return [f for name in PLOT_FROM for f in figure_targets(f"results/plots/{name}")]


# -- cost estimate (rule cost) ---------------------------------------------------------------
def regime_shards():
    """Shard name -> transforms, per regime (what the cost model and the plan read)."""
    return {
        "micro": MICRO_SHARDS,
        "cpu_dataloader": DATALOADER_SHARDS,
        "gpu_dataloader": GPU_DL_SHARDS,
        "dali": DALI_SHARDS,
    }


def cost_plan():
    """Every job the configured sweep plans, as the cost model needs it: benchmark jobs from the
    same result paths `aggregate` collects, setup jobs from the configured libraries and dataset;
    plus what the invocation says about placement (the profile's preemptible rules and jobs).
    """
    shards_by_regime = regime_shards()
    remote = getattr(workflow, "remote_execution_settings", None)
    preemptible = getattr(remote, "preemptible_rules", None)
    executor = getattr(workflow, "executor_settings", None)
    rules = ["build_env", "build_default_archive", "stage_dataset", "micro"]
    rules += ["cpu_dataloader", "gpu_dataloader", "dali", "dali_cpu", "lazy_outputs"]
    return {
        "results": result_files(),
        "lazy_outputs": (
            matrix.libraries_for("micro", LIBRARIES) if LAZY_ENABLED else []
        ),
        "shards": shards_by_regime,
        "libraries": LIBRARIES,
        "default_archive": not config["dataset"].get("archive"),
        "regimes": REGIMES,
        "preemptible": [
            r
            for r in rules
            if preemptible is not None and preemptible.is_preemptible(r)
        ],
        "default_machine": getattr(executor, "machine_type", None) or "e2-standard-2",
        "jobs_at_once": getattr(workflow.resource_settings, "nodes", None) or 1,
    }


def measured_run_fingerprint():
    """Changes when the local run's timings change, so `cost` reruns (they are not inputs: the
    run's result paths are outputs of benchmark rules, which `cost` must never plan)."""
    root = Path(CLOUD["estimate_from"])
    files = sorted(root.glob("benchmarks/**/*.tsv"))
    return f"{len(files)}:{max((f.stat().st_mtime_ns for f in files), default=0)}"
