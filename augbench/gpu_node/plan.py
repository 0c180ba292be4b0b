"""What the offline GPU node runs: the steps, their time budgets and the engine jobs in them.

The engine command lines come from this checkout's own planning code
(augbench.planning.config.resolve and augbench.planning.sweep, which plan a Snakemake run), so every
job gets exactly the flags the workflow's rule for it would pass. They are computed where the bundle
is built and carried in it as ``plan.json``: the node has neither Snakemake nor jsonschema, and runs
these command lines as they are, with its own machine label in place of :data:`MACHINE`.

The libraries come from their declarations (augbench.gpu_node.libraries): the GPU DataLoader
measures every library with ``gpu_batches`` whose packages the node has or the bundle brings
(of the shipped ones torchvision and Kornia), the supply and the training regime the first of
them that feeds training and transforms on the CPU (torchvision), and the A/A pairs compare the
first with its second name and with each of the others on Identity. A library registered with
``gpu_batches`` joins every mode below without a change here.

Two modes:

- ``node``: a GPU node of the H100 class with 16 cores; the whole run, installation included,
  within :data:`TOTAL_BUDGET_S`. First what predicts and measures training out of sample: the
  cpu_dataloader rows the training rows' predictions need (the recipe's decode scope at the
  same workers and batch), then the training regime (ResNet-50, AMP, channels_last, random
  weights) for one recipe at 4, 8 and 16 workers with both feeds. Then the GPU DataLoader on
  the default transforms (every node library, both scopes, per-sample randomness) and one
  shipped pipeline through the same engine; last, as time allows, the batch-shared mode of the
  libraries that have one (torchvision). A run cut short is completed by a second one
  (``prove.sh --resume``).
- ``training_check``: the starvation answer checked out of sample on the node, with each job in
  :data:`CHECK_RUNS` runs: the supply (the recipe's cpu_dataloader rows) and ResNet-50 training
  fed from the CPU along a worker curve, 1, 2, 4, 8 and 12 workers (12 workers and the training
  process still fit 16 cores; the curve runs from data-bound to fed, where the answer could
  fail), in run order (every job's run k before any run k + 1, a supply before the training it
  predicts), so the tables pool each setting's runs as processes. The summary reads the curve as
  the cores one GPU needs (augbench.gpu_node.summary.cores_per_gpu). No sync check, no GPU
  DataLoader: ``node`` measures those.
- ``calibration``: the GPU DataLoader's A/A pairs (docs/calibration.md), equal work under two
  names in separate jobs, each job in :data:`CALIBRATION_RUNS` runs so that a row's interval spans
  that many processes: the first node library against its second name (``torchvision~b``: the
  same adapter and env) on every recipe, and against each other node library (Kornia) on
  Identity in the decode scope (the same torchvision.io decode in the workers, a float
  conversion and Normalize on the device). The summary decides every pair as the answer decides
  a margin (augbench.decision) and counts the false "faster"/"slower" calls.
- ``dry``: the same steps as ``node`` with tiny sizes on a CPU: the GPU DataLoader's and the
  training GPU feed's device-side code on CPU tensors (the engines' test switches), ResNet-18 at
  ``DRY_CPU_INPUT_SIZE`` px: the pipeline with the first node library in the memory scope, the
  GPU DataLoader with each other one in the decode scope; and the calibration step on
  Identity, one run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

# A label the config schema accepts; replaced on the node by the node's own label.
MACHINE = "gpu-node-machine-label"
# The node command's whole wall time (installation, every step, the archive), and what the
# steps leave for writing the archive and the summary: a 10-minute scheduler slot with half a
# minute to spare.
TOTAL_BUDGET_S = 570.0
FINISH_RESERVE_S = 12.0
# The one shipped pipeline the node runs: every step of it maps on torchvision and Kornia
# (imagenet_train needs an antialiased crop Kornia lacks; highres_segmentation a PadIfNeeded
# torchvision lacks).
PIPELINE = "config/pipelines/train_medium.yaml"
# Steps that take what the others left, up to the overall deadline (their budget is a ceiling,
# not a share of TOTAL_BUDGET_S); what they leave out, a resumed run measures.
AS_TIME_ALLOWS = ("nvjpeg", "batch_shared")
# The GPU DataLoader's nvJPEG rows on the node (gpu_dataloader.decoders): the decode scope's
# Identity (read, decode, crop, Normalize), beside the same recipe decoded in the workers, per
# library and per-sample, and the training's GPU feed decoded on the device at its fewest
# workers. Each recipe is a process start with its CUDA context (8-10 s on the first H100 run).
NVJPEG_GPU_DATALOADER = {"decoders": ["native", "nvjpeg"], "decoder_transforms": ["Identity"]}
NVJPEG = "-nvjpeg"  # the decoder's part of a gpu_dataloader result's name
# Runs of each job in the training check: the fewest that give an interval over processes.
CHECK_RUNS = 3
# The training check's whole wall time, within a 10-minute scheduler slot: at 4, 8 and
# 12 workers its 18 jobs took 227-270 s on H100 nodes (supply jobs 13-25 s, training jobs
# 9-14 s; 2026-11-27), the installation, environment and dataset 20-25 s; the curve's 1 and 2
# workers add 12 jobs of at most twice the 4 workers' time. A job the deadline cannot hold is not
# started, and a resumed run measures it.
CHECK_BUDGET_S = 560.0
# The GPU DataLoader's A/A pairs are augbench.gpu_node.libraries.calibration_pairs. Runs of each
# A/A job: three processes a side are the fewest whose ratio interval reaches the decision level
# (90 %, augbench.decision). Their result files go below this folder, apart from the workflow's
# (the summary's tables of the GPU regimes do not read them).
CALIBRATION_RUNS = 3
CALIBRATION_DIR = "results/calibration/"
# The dry mode's A/A jobs measure Identity only, in one run: a check of the code path (each
# recipe is a process start; the runs' decision is checked by the tests on CPU tensors).
CALIBRATION_DRY_RECIPES = "Identity"
CALIBRATION_DRY_RUNS = 1
# The decode scope's recipes of the node's A/A jobs: Identity and five light transforms, each
# recipe a process start (8-10 s with its CUDA context on the first H100 run, 2026-11-27): the
# reference's two names' jobs and the Identity job of each other library, three runs each (for
# torchvision and Kornia: three jobs), fit the budget.
CALIBRATION_TRANSFORMS = ["HorizontalFlip", "Grayscale", "Brightness", "GaussianBlur", "Resize"]

# Seconds per step. Node: sized from the first H100 run (Intel Xeon, 16 cores, 2026-11-27:
# a GPU DataLoader job of 11 recipes took 52 s in memory scope and 84-107 s in decode scope,
# each recipe a process start with its CUDA context; a supply job 14-27 s; a training job
# 13-16 s; a pipeline job 8-15 s), so that their sum, the installation (3-4 s there) and the
# finish stay within TOTAL_BUDGET_S.
STEP_BUDGETS_S: dict[str, dict[str, float]] = {
    "node": {
        "environment": 20,
        "dataset": 15,
        "sync_check": 20,
        # The training recipe's cpu_dataloader rows at the training's workers and batch (three
        # short jobs on 16 cores): what predicts the training rows out of sample.
        "supply": 60,
        "training": 55,
        # 4 jobs of 11 recipes, each recipe in a process of its own (imports, CUDA context).
        "gpu_dataloader": 300,
        "pipeline": 50,
        "nvjpeg": 60,
        "batch_shared": 200,
    },
    "training_check": {
        "environment": 20,
        "dataset": 15,
        "supply_and_training": 480,
    },
    "dry": {
        "environment": 60,
        "dataset": 60,
        "sync_check": 60,
        "supply": 60,
        "training": 150,
        "gpu_dataloader": 150,
        "pipeline": 90,
        "nvjpeg": 60,
        "batch_shared": 90,
        # A/A jobs of one recipe each, every one a fresh process importing torch: slow on a
        # 2-core machine beside other work (the dry mode leaves no job out for a prediction).
        "calibration": 180,
    },
    "calibration": {
        "environment": 20,
        "dataset": 15,
        "calibration": 480,
    },
}

# The node run's supply (the training recipe's cpu_dataloader rows at the training's workers and
# batch) and its training (ResNet-50 fed by the same loader configuration, both feeds).
NODE_SUPPLY: dict[str, Any] = {
    "job_per": "setting",
    "transforms": ["RandomResizedCrop"],
    "scopes": ["decode"],
    "workers": [4, 8, 16],
    "batch_size": 64,
    "batches_per_run": 16,
    "num_runs": 3,
    "baseline_runs": 0,
}
NODE_TRAINING: dict[str, Any] = {
    "transforms": ["RandomResizedCrop"],
    "feeds": ["cpu", "gpu"],
    "workers": [4, 8, 16],
    "accelerator": "model",
    "model": "auto",  # ResNet-50 with AMP and channels_last on CUDA
    "batch_size": 64,
    "steps": 40,
    "warmup_steps": 5,
    "model_steps": 10,
    "blocks": 5,
}
# The training check's worker curve: 12 workers and the training process still fit 16 cores.
CHECK_WORKERS = [1, 2, 4, 8, 12]

# The modes, in plan.json's order.
MODES = ("node", "training_check", "calibration", "dry")


def mode_config(mode: str) -> dict[str, Any]:
    """The configuration a mode plans from (merged over its preset by
    augbench.planning.config.resolve), its libraries read from their declarations
    (augbench.gpu_node.libraries)."""
    from augbench.gpu_node import libraries as node_libraries

    gpu = list(node_libraries.libraries())
    paired = [node_libraries.reference(), node_libraries.second_name(), *gpu[1:]]
    return {
        "node": _node_config(gpu),
        "training_check": _check_config(node_libraries.training_library()),
        "calibration": _calibration_config(paired),
        "dry": _dry_config(paired),
    }[mode]


def _node_config(libraries: list[str]) -> dict[str, Any]:
    return {
        "preset": "default",
        "dataset": {"archive": None, "default_images": 300},
        "libraries": libraries,
        "regimes": ["gpu_dataloader", "cpu_dataloader", "training"],
        # A GPU job where CUDA is not usable fails instead of writing skipped rows.
        "gpu": "required",
        "pipelines": [PIPELINE],
        # One job (one engine start) per library x scope x decoder x randomness mode.
        "gpu_dataloader": {"shard_size": 11, **NVJPEG_GPU_DATALOADER},
        "cpu_dataloader": NODE_SUPPLY,
        "training": NODE_TRAINING,
    }


def _check_config(library: str) -> dict[str, Any]:
    return {
        "preset": "default",
        "dataset": {"archive": None, "default_images": 300},
        "libraries": [library],
        "regimes": ["cpu_dataloader", "training"],
        "gpu": "required",
        # The node run's supply and training, at workers that leave the training process a core,
        # the CPU feed only (the one another regime predicts), every job in runs.
        "cpu_dataloader": {**NODE_SUPPLY, "workers": CHECK_WORKERS, "runs": CHECK_RUNS},
        "training": {
            **NODE_TRAINING,
            "feeds": ["cpu"],
            "workers": CHECK_WORKERS,
            "model_steps": 30,  # the step alone on a GPU: 10 steps spread 28-38 ms per process
            "runs": CHECK_RUNS,
        },
    }


def _calibration_config(libraries: list[str]) -> dict[str, Any]:
    return {
        "preset": "default",
        "dataset": {"archive": None, "default_images": 300},
        "libraries": libraries,
        "regimes": ["gpu_dataloader"],
        "gpu": "required",
        "pipelines": [],
        "transforms": CALIBRATION_TRANSFORMS,
        "gpu_dataloader": {
            "shard_size": 11,
            "scopes": ["decode"],
            "torchvision_randomness": ["per-sample"],
        },
    }


def _dry_config(libraries: list[str]) -> dict[str, Any]:
    return {
        "preset": "smoke",
        "dataset": {"archive": None, "default_images": 12},
        "libraries": libraries,
        "regimes": ["gpu_dataloader", "cpu_dataloader", "training"],
        "gpu": "optional",
        "transforms": ["HorizontalFlip"],
        "num_images": 8,
        "pipelines": [PIPELINE],
        "gpu_dataloader": {
            "batch_size": 4,
            "workers": [1],
            **NVJPEG_GPU_DATALOADER,
            "torchvision_randomness": ["per-sample"],
            "values": 2,
            "warmups": 0,
            "shard_size": 11,
        },
        "cpu_dataloader": {
            "job_per": "setting",
            "transforms": ["RandomResizedCrop"],
            "scopes": ["decode"],
            "workers": [1],
            "batch_size": 4,
            "batches_per_run": 2,
            "num_runs": 2,
            "baseline_runs": 0,
        },
        "training": {
            "transforms": ["RandomResizedCrop"],
            "feeds": ["cpu", "gpu"],
            "workers": [1],
            "accelerator": "model",
            "model": "auto",
            "cpu_input_size": DRY_CPU_INPUT_SIZE,
            "batch_size": 4,
            "steps": 4,
            "warmup_steps": 1,
            "model_steps": 2,
            "blocks": 2,
        },
    }


# The dry mode's ResNet-18 input side on the CPU, the smallest the config takes: the dry mode
# checks the model step's code path, and at the default 112 px its training steps took a third
# of the whole dry run.
DRY_CPU_INPUT_SIZE = 32


# Flags the dry mode adds: the engines' switches that run the GPU code path on CPU tensors.
DRY_FLAGS: dict[str, list[str]] = {
    "gpu_dataloader": ["--allow-cpu-device", "true"],
    "pipeline_gpu_dataloader": ["--allow-cpu-device", "true"],
    "training": ["--allow-cpu-device-feed", "true"],
}

# Which step runs which jobs, in run order: (the rules, which randomness mode; None: any).
ENGINE_STEPS: dict[str, tuple[tuple[str, ...], str | None]] = {
    "supply": (("cpu_dataloader",), None),
    "training": (("training",), None),
    "gpu_dataloader": (("gpu_dataloader",), "per-sample"),
    "pipeline": (("pipeline_gpu_dataloader",), "per-sample"),
    "nvjpeg": (("gpu_dataloader", "training"), "per-sample"),
    "batch_shared": (("gpu_dataloader", "pipeline_gpu_dataloader"), "batch-shared"),
}
# The A/A step: the GPU DataLoader's decode-scope jobs of the pairs' names (calibration_jobs).
CALIBRATION_STEP: dict[str, tuple[tuple[str, ...], str | None]] = {
    "calibration": (("gpu_dataloader",), "per-sample")
}
# Each mode's engine steps (the training check: supply and training runs interleaved in one).
MODE_STEPS: dict[str, dict[str, tuple[tuple[str, ...], str | None]]] = {
    "node": ENGINE_STEPS,
    "dry": {**ENGINE_STEPS, **CALIBRATION_STEP},
    "training_check": {"supply_and_training": (("cpu_dataloader", "training"), None)},
    "calibration": CALIBRATION_STEP,
}
# The whole run's wall time per mode.
MODE_BUDGETS_S = {
    "node": TOTAL_BUDGET_S,
    "dry": TOTAL_BUDGET_S,
    "training_check": CHECK_BUDGET_S,
    "calibration": TOTAL_BUDGET_S,
}


def gpu_priority(w: Mapping[str, str], order: Sequence[str]) -> tuple[bool, bool, bool, int]:
    """Node order of GPU DataLoader jobs: per-sample randomness (the like-for-like comparison
    of the libraries) before batch-shared, memory scope before decode, the workers' decoder
    before nvJPEG, then the libraries in ``order`` (the node's, augbench.gpu_node.libraries:
    torchvision before Kornia); a name not in it (a second name) after them."""
    library = w["library"]
    rank = order.index(library) if library in order else len(order)
    nvjpeg = bool(w.get("decoder"))
    return (w["randomness"] == "batch-shared", w["scope"] == "decode", nvjpeg, rank)


def _pick(pairs: set[tuple[str, str]]) -> Callable[[Mapping[str, str]], bool]:
    return lambda w: (w["library"], w["scope"]) in pairs


def select(mode: str) -> dict[str, Callable[[Mapping[str, str]], bool]]:
    """The jobs a mode runs of each rule (a rule not named: all), in the order given by
    gpu_priority: the supply and the training of the training library only; in the dry mode
    every library and both scopes in as few jobs as that takes, each recipe a process start: the
    pipeline with the first library in the memory scope, the GPU DataLoader with each other one
    in the decode scope (the first one there too where it is the only one)."""
    from augbench.gpu_node import libraries as node_libraries

    first, *others = node_libraries.libraries()
    training = node_libraries.training_library()

    def trains(w: Mapping[str, str]) -> bool:
        return w["library"] == training

    def trains_once_on_nvjpeg(w: Mapping[str, str]) -> bool:
        """The node's training with nvJPEG: at its fewest workers, where the CPU feed starves
        most (the others as the configuration plans them)."""
        fewest = str(min(NODE_TRAINING["workers"]))
        return trains(w) and (w.get("decoder") != NVJPEG or w["workers"] == fewest)

    runs_training = {"cpu_dataloader": trains, "training": trains}
    return {
        "node": {**runs_training, "training": trains_once_on_nvjpeg},
        "training_check": runs_training,
        "dry": {
            "gpu_dataloader": _pick({(lib, "decode") for lib in others or [first]}),
            "pipeline_gpu_dataloader": _pick({(first, "memory")}),
            **runs_training,
        },
        "calibration": {},
    }[mode]


def dataset_facts(config: Mapping[str, Any]) -> dict[str, Any]:
    """The embedded default dataset a mode builds on the node, and its key (the workflow's)."""
    from augbench.planning.dataset import dataset_name, default_identity

    images = int(config["dataset"]["default_images"])
    name = dataset_name(dict(config["dataset"]))
    return {"name": name, "images": images, "key": default_identity(name, images).key}


def mode_plan(mode: str, repo: Path) -> dict[str, Any]:
    """One mode's steps: budgets, the dataset, and per engine step its jobs in run order."""
    from augbench.gpu_node import libraries as node_libraries
    from augbench.planning.config import resolve
    from augbench.planning.regimes import run_number
    from augbench.planning.sweep import THREAD_POLICIES, Sweep, flag_words

    planned = mode_config(mode)
    config = resolve({**planned, "machine": MACHINE, "envs": {}}, repo)
    data = dataset_facts(config)
    sweep = Sweep(config, data["key"])
    chosen_by = select(mode)
    order = node_libraries.libraries()
    engine_steps = MODE_STEPS[mode]
    rules = {rule for step_rules, _ in engine_steps.values() for rule in step_rules}
    jobs: dict[str, list[dict[str, Any]]] = {rule: [] for rule in rules}
    # Every job of the rules, selected or not: the A/A step takes its own (calibration_jobs).
    every: dict[str, list[dict[str, Any]]] = {rule: [] for rule in rules}
    for job in sweep.jobs():
        if job.rule not in jobs:
            continue
        wildcards = sweep.wildcards_of(job)
        selected = job.rule not in chosen_by or chosen_by[job.rule](wildcards)
        kind = job.kind
        policy = THREAD_POLICIES.get(kind.thread_policy)
        engine = ["-m", kind.engine, *flag_words(kind.args(sweep, kind, wildcards))]
        if mode == "dry":
            engine += DRY_FLAGS.get(job.rule, [])
        (output,) = job.outputs
        (jobs[job.rule] if selected else every[job.rule]).append(
            {
                "rule": job.rule,
                "library": job.library,
                "wildcards": {k: v for k, v in wildcards.items() if k not in ("machine",)},
                "label": job_label(job.rule, wildcards),
                "engine": engine,
                # Set before the interpreter starts, as the rule's shell prefix does.
                "env": policy.environment() if policy is not None else {},
                "output": output,
                "recipes": len(job.transforms),
            }
        )
    for rule in ("gpu_dataloader", "pipeline_gpu_dataloader"):
        if rule in jobs:
            jobs[rule].sort(
                key=lambda j: gpu_priority({**j["wildcards"], "library": j["library"]}, order)
            )
    for rule in ("cpu_dataloader", "training"):
        if rule in jobs:
            jobs[rule].sort(key=lambda j: int(j["wildcards"]["workers"]))
    steps: dict[str, list[dict[str, Any]]] = {}
    for step, (step_rules, randomness) in engine_steps.items():
        if step in CALIBRATION_STEP:
            dry = mode == "dry"
            pairs = node_libraries.calibration_pairs()
            steps[step] = calibration_jobs(
                [*jobs["gpu_dataloader"], *every["gpu_dataloader"]],
                CALIBRATION_DRY_RUNS if dry else CALIBRATION_RUNS,
                CALIBRATION_DRY_RECIPES if dry else None,
                # The dry mode's other pairs would time the Identity jobs its GPU DataLoader
                # step has just run: the reference pair alone checks the step's code path.
                pairs[:1] if dry else pairs,
            )
            continue
        candidates = [j for rule in step_rules for j in jobs[rule]]
        # A step's randomness mode picks among the jobs that have one (training has none).
        chosen = [
            j
            for j in candidates
            if randomness in (None, j["wildcards"].get("randomness", randomness))
        ]
        # The nvJPEG rows are their own step.
        chosen = [
            j for j in chosen if (j["wildcards"].get("decoder") == NVJPEG) == (step == "nvjpeg")
        ]
        if step in AS_TIME_ALLOWS:  # shortest first: memory scope, then one recipe before 11
            chosen.sort(key=lambda j: (j["wildcards"].get("scope") == "decode", j["recipes"]))
        # Runs in order (stable: within a run, the rules' order, then the workers'), so a
        # setting's runs lie a pass over the step apart.
        chosen.sort(key=lambda j: run_number(j["wildcards"].get("run", "")))
        steps[step] = chosen
    return {
        "mode": mode,
        "preset": config["preset"],
        "config": planned,
        "dataset": data,
        "budgets_s": STEP_BUDGETS_S[mode],
        "total_budget_s": MODE_BUDGETS_S[mode],
        "steps": steps,
    }


def calibration_jobs(
    jobs: list[dict[str, Any]],
    runs: int,
    recipes: str | None,
    pairs: Sequence[tuple[str, str, str | None]],
) -> list[dict[str, Any]]:
    """The A/A step's jobs: the decode-scope, per-sample GPU DataLoader jobs (decoded in the
    workers) of the ``pairs``' names (augbench.gpu_node.libraries.calibration_pairs; a name
    paired only on one recipe measures that one; ``recipes``: every name only these), each in
    ``runs`` runs, every job's run k before any run k + 1, each run a result file of its own
    below :data:`CALIBRATION_DIR`."""
    names = {name for a, b, _ in pairs for name in (a, b)}
    only = {b: recipe for _, b, recipe in pairs if recipe}
    chosen = [
        j
        for j in jobs
        if j["library"] in names
        and j["wildcards"].get("scope") == "decode"
        and not j["wildcards"].get("decoder")
        and j["wildcards"].get("randomness") == "per-sample"
    ]
    chosen.sort(key=lambda j: (j["library"] != pairs[0][0], j["library"]))
    out = []
    for run in range(1, runs + 1):
        for job in chosen:
            engine = list(job["engine"])
            at = engine.index("--transforms") + 1
            engine[at] = recipes or only.get(job["library"], engine[at])
            stem = job["output"].removeprefix("results/").removesuffix(".json")
            out.append(
                {
                    **job,
                    "engine": engine,
                    "output": f"{CALIBRATION_DIR}{stem}-run{run}.json",
                    "wildcards": {**job["wildcards"], "run": f"-run{run}"},
                    "label": f"A/A {job['label']} run {run}",
                    "recipes": len(engine[at].split(",")),
                }
            )
    return out


def job_label(rule: str, w: Mapping[str, str]) -> str:
    """A job's name in progress lines and the summary, e.g. ``kornia decode w2 per-sample``."""
    from augbench.planning.regimes import run_number

    run = f" run {run_number(w['run'])}" if w.get("run") else ""
    feed = f"{w.get('decoder', '')}{w.get('loader', '')}"  # another decoder or loader: its name
    if rule == "training":
        return f"{w['library']} w{w['workers']}{feed}{run}"
    if rule == "cpu_dataloader":
        return f"{w['library']} {w['scope']} w{w['workers']}{feed}{run}"
    if rule == "pipeline_gpu_dataloader":
        return f"pipeline {w['library']} {w['scope']} w{w['workers']} {w['randomness']}"
    decoder = " nvjpeg" if w.get("decoder") else ""
    return f"{w['library']} {w['scope']}{decoder} w{w['workers']} {w['randomness']}"


def build_plan(repo: Path) -> dict[str, Any]:
    """Every mode's plan (plan.json of a bundle), and what the node's own code reads of the
    library declarations (``node``: augbench.gpu_node.libraries.facts)."""
    from augbench.gpu_node import libraries as node_libraries

    return {
        "machine_placeholder": MACHINE,
        "total_budget_s": TOTAL_BUDGET_S,
        "finish_reserve_s": FINISH_RESERVE_S,
        "as_time_allows": list(AS_TIME_ALLOWS),
        "node": node_libraries.facts(),
        "modes": {mode: mode_plan(mode, repo) for mode in MODES},
    }
