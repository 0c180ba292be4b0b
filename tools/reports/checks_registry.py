"""The project's checks as the ledger (tools/reports/checks_ledger.py) lists them: each check's
rule and its models, every committed run of each (``RUNS``: a new run of a check is one entry
there), and the committed files a run's folder holds that are named but not counted
(``NOT_RUNS``)."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from augbench.policy import TRAINING_PREDICTION_TOLERANCE, TRAINING_WAIT_TOLERANCE  # noqa: E402

VM = "amd-epyc-2c"
INTEL = "intel-xeon-2c"
H100 = "intel-xeon-16c-nvidia-h100-80gb-hbm3"


def _tool(name: str):
    """A module of tools/checks, imported from its file (the tools are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / "checks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


cost_validation = _tool("cost_validation")
workers_to_feed_check = _tool("workers_to_feed_check")


@dataclass(frozen=True)
class Model:
    key: str  # the anchor suffix: <check id>-model-<key>
    commit: str  # the commit that made the change ("" for the first model)
    description: str


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    rule: str
    models: tuple[Model, ...] = ()
    series: tuple[tuple[str, str], ...] = ()  # (key, description): anchors <id>-<key>


@dataclass(frozen=True)
class Run:
    check: str
    machine: str
    folder: str  # under docs/results/<machine>/
    file: str  # in the folder
    date: str
    commit: str  # the code measured
    model: str = ""
    series: str = ""
    what: str = ""
    extends: tuple[str, ...] = field(default=())  # earlier states of this run, not counted


CHECKS = (
    Check(
        "training-check",
        "The starvation answer checked out of sample",
        "A training row passes when measured / predicted throughput is within "
        f"{1 - TRAINING_PREDICTION_TOLERANCE:.2f}-{1 + TRAINING_PREDICTION_TOLERANCE:.2f} and its "
        f"data wait within {100 * TRAINING_WAIT_TOLERANCE:.0f} points of the prediction "
        "(`within_tolerance` of the training table, tools/checks/training_out_of_sample.py). "
        "Every row with a prediction counts (data-bound, crossover and model-bound); a table "
        "that also predicts each run on its own counts its pooled rows, from the steady rate.",
        (
            Model("epochs", "", "the supply's epochs' rate, one run a side"),
            Model(
                "steady",
                "06de92aeacb31d03abb492ce459ba133b1ddacbe",
                "the supply read as a stream (steady rate), runs of a setting pooled on both sides",
            ),
            Model(
                "warmup",
                "fac82a7bb0e52f3d3493576f430b732588be3744",
                "the step alone warmed up as the loop and timed over 30 steps",
            ),
            Model(
                "read-probe",
                "1c231f2e98b2e905e816199f39b5633a897d4f7e",
                "a model that reads its batches pays their first read and the read batch's "
                "hand-over (the read probe); a sleeping stand-in keeps the plain hand-over",
            ),
            Model(
                "cores",
                "b292b20e452e929fdf54fee8bf85b97e7b93055b",
                "a step on the CPU keeps its share of the cores from the loader's workers",
            ),
        ),
        (
            ("one-run", "one run of the supply and of each training job"),
            ("sequential", "several runs a side, every supply run first"),
            ("alternating", "4-6 runs a side, supply and training alternating (side by side)"),
            ("workflow", "4 runs a side through the workflow's own `runs`"),
            ("gpu-node", "ResNet-50 on an H100 node, fed from the CPU"),
            (
                "cpu-step",
                "the default run's supply rows, sleeping and CPU stand-ins near them, after it",
            ),
            (
                "default-pipeline",
                "a default run's ranked pipeline rows (5 processes each) as the supply, sleeping "
                "and CPU stand-ins near them, 3 runs a side alternating",
            ),
        ),
    ),
    Check(
        "pipeline-rows",
        "Pipeline rows against a user's own loop",
        "A whole-pipeline row passes when row / fresh loop is within 10 % of 1, or, where a "
        "process faulted beyond its output, the same ratio at equal faults is "
        "(tools/checks/compose_vs_rows.py: its `within` and `within_at_equal_faults` columns).",
        (
            Model("forked-rounds", "", "the breakdown's later rounds forked from the job"),
            Model(
                "fresh-rounds",
                "5a3e0ab7db82eba3d39b6c1a2e171226480a0256",
                "each breakdown round in a fresh interpreter of its own",
            ),
        ),
    ),
    Check(
        "allocator-effect",
        "Allocator effects beyond the null spread",
        "A pair (a row under a setting against the same row under glibc as shipped) shows an "
        "effect when its ratio's whole interval lies beyond the null spread of the pairs that "
        "do not fault (`effect` of allocator_effect*.csv, augbench.analysis); the outcome is "
        "the pairs with an effect out of the pairs with a ratio: a measurement, not a pass.",
    ),
    Check(
        "cost-validation",
        "The cost and memory models against a measured run",
        "A rule with at least "
        f"{cost_validation.MIN_JOBS} jobs passes when measured / predicted time is within "
        f"{cost_validation.TIME_TARGET[0]}-{cost_validation.TIME_TARGET[1]} and every job's "
        f"predicted memory is {cost_validation.MEMORY_TARGET[0]}-"
        f"{cost_validation.MEMORY_TARGET[1]} times what it held (`mem_mb` against max_pss or "
        "max_rss, `rss_mb` against max_rss; tools/checks/cost_validation.py). Rules with fewer "
        "jobs are not counted.",
        (
            Model(
                "reference-2026-11-26",
                "",
                "reference timings of 2026-11-26, training priced at the reference's wall time",
            ),
            Model(
                "reference-2026-11-27",
                "d9dd7376d25412c27b891c6ec454ba8fb3ef6cd0",
                "reference timings refitted on 2026-11-27, training priced from its passes",
            ),
            Model(
                "reference-2026-11-29",
                "2c41eacbaec1f609d5914be9a5afa4da0c0883b0",
                "a row in fresh processes learned per process; the pipelines' DataLoader jobs "
                "refitted from two default runs",
            ),
            Model(
                "reference-2026-11-29-evening",
                "1318704917b2c816a400ac9e27be428d24baa4e8",
                "reference timings learned the same evening as the runs that check them, every "
                "env built from uv's warm cache as a fresh clone builds it",
            ),
            Model(
                "reference-2026-11-29-night",
                "3bb8a57e8121861c8c0af7db448de3f104d9ff6d",
                "reference timings of ten micro transforms in up to five processes; a DataLoader "
                "recipe the reference never measured costs its base recipe plus its micro time; "
                "pipelines a library cannot run cost nothing; setup jobs at their mean; a job's "
                "held memory includes its own sampled peak",
            ),
            Model(
                "sampler-2026-11-30",
                "fca5f4108fac8714159ce448fcf143e3b6c71973",
                "the same reference timings; every job's planned memory counts its memory "
                "sampler; a job's held proportional set is followed between two reads from each "
                "process's resident growth",
            ),
            Model(
                "transform-costs-2026-11-30",
                "8ea31f13e4d7a361af3468348e370bdb71885014",
                "a transform the reference never measured priced from the shipped transform-cost "
                "prior; a resize pays the staging job's fixed time; each DataLoader worker holds "
                "its most demanding step's temporaries; a resize never runs beside a measurement",
            ),
            Model(
                "loader-starts-2026-11-30",
                "6ca8b9eef7e05e7a23e5522f5203c5e39047783e",
                "env builds import their library and are priced per library (a compiling build "
                "fills uv's cache, in the maximum only); a DataLoader row's rounds from the "
                "engine's stopping rule on its epochs; a setting's fixed time as the hand-over "
                "probe plus its loader starts; the memory sampler counts a vfork child once",
            ),
            Model(
                "first-process-2026-11-30",
                "a1ff04624cc77ca364e60ea130201a8e892951ed",
                "as loader-starts, and a row's later processes repeat only the regime's epochs "
                "(the baselines' are the first process's)",
            ),
            Model(
                "anonymous-pages-2026-11-30",
                "a25203d8cababc27d7a4188413b5322f2efb6cad",
                "as first-process, and a further interpreter of a library's env is planned at its "
                "anonymous pages (import memory measured again on intel-xeon-2c)",
            ),
            Model(
                "rounds-2026-11-30",
                "7d4f10f5f78a3df600b4e0a8b27b5469026fe4bb",
                "as anonymous-pages, and a micro job's time beyond its recorded rounds paid once "
                "per job, its rounds' fixed time per round (learned from a reference that records "
                "them)",
            ),
            Model(
                "later-processes-2026-11-30",
                "65004b1c182163b50867ad72bfef071b0cc2d583",
                "as rounds, and a later DataLoader process of a kind whose reference rows ran in "
                "one process each priced as the pipelines' later process of one row and each "
                "further row's loader start and warm-up (withdrawn after its runs)",
            ),
            Model(
                "rounds-again-2026-11-30",
                "0d071aaa95b92fdd1ac7c6ce7bc08f1dd901993a",
                "the rounds model again (later-processes withdrawn; its predictions reproduce the "
                "rounds model's)",
            ),
            Model(
                "unsupported-rows-2026-11-30",
                "34187351549456437dfb1e217df8d545df37d7cf",
                "as rounds-again, and a DataLoader job whose every row its library cannot run "
                "planned as its process alone (in the decode scope with the hand-over probe's "
                "workers)",
            ),
            Model(
                "unsupported-rows-withdrawn-2026-11-30",
                "a7f077b85bfc19656ee6dcac8c0d211a6366de80",
                "the rounds model again (unsupported-rows withdrawn: a job of unsupported rows "
                "loads its images and runs its baselines, so it is planned whole)",
            ),
            Model(
                "lazy-calls-2026-11-30",
                "a07315e7ba5458672dad1c8625a647df260eaff0",
                "as unsupported-rows-withdrawn, and a lazy-output job priced as its process plus "
                "each transform's calls (the engine's count) at their measured seconds, instead "
                "of the reference's wall time",
            ),
            Model(
                "batch-periods-2026-12-01",
                "bdfc82c54ff032ae16645c2387592ada08471da9",
                "as lazy-calls, and a DataLoader job's hand-over probe priced in the job's own "
                "batch periods (the engine's count); the breakdown's rounds each in a fresh "
                "interpreter, one at a time, and its memory planned as one interpreter, its fork "
                "and a manager",
            ),
            Model(
                "breakdown-stopping-2026-12-01",
                "55b010b548d2d4b53548e54c6af77b2db788cacd",
                "as batch-periods, from a reference whose breakdown rows can stop early (two "
                "values per process, 4-8 values), and a DataLoader worker planned to hold the "
                "batch it builds and one ready, not its whole prefetch queue",
            ),
            Model(
                "two-process-looks-2026-12-01",
                "5c3329bbbd7bfb74cc6a47a788f865ccd33578a0",
                "as breakdown-stopping, with the breakdown's stopping rule first looking at two "
                "processes where its maximum allows (policy.BREAKDOWN_FIRST_LOOK_PROCESSES), never "
                "at one process's values alone",
            ),
            Model(
                "speed-probe-2026-12-01",
                "d67f3cd36f0e6ce6aa347ebe722d6d7e61086636",
                "as two-process-looks, with the reference's seconds scaled by this machine's "
                "speed read before the prediction over its speed read where the reference run "
                "started (augbench/planning/machine_speed.py; withdrawn after its runs)",
            ),
            Model(
                "speed-probe-withdrawn-2026-12-01",
                "588b4d2cd366b54f1b5334551948a8e86d54026e",
                "the two-process-looks model again (speed-probe withdrawn: its reading moved 28 % "
                "while the jobs it priced ran at the reference's pace)",
            ),
            Model(
                "warm-ups-2026-12-01",
                "3ec64a8f9c6faa895ccf5ec1a28f2055e80f0ac1",
                "as speed-probe-withdrawn, with each DataLoader loader's untimed warm-up epoch (a "
                "batch per worker) learned out of its start and later processes and priced per "
                "recipe at the planned batch",
            ),
            Model(
                "transform-rounds-2026-12-01",
                "010cf61eafc5ecbfc7a87d3d08740f5ac24b2c33",
                "as warm-ups, with what each transform adds to a micro round beyond its passes "
                "(its rows' worker_seconds) priced per transform and process, resizes per image "
                "and megapixel, and a compiling env build at its own time less uv's",
            ),
            Model(
                "build-cpu-2026-12-01",
                "446aed4a3035287ceed655c008500632eb152d38",
                "as transform-rounds, with each env build priced at its CPU seconds times the "
                "least wall-to-CPU ratio among the reference's builds",
            ),
            Model(
                "engine-starts-2026-12-01",
                "b6c297e743fe1376765f0906d88c18b9a0901b69",
                "as build-cpu, with a DataLoader job's process start learned from every job that "
                "started the same engine and library, and a float-working library's DataLoader "
                "workers each keeping a batch of float outputs",
            ),
            Model(
                "worker-pages-2026-12-01",
                "baa4f56c44c806a048572c971de78abd215823c6",
                "as engine-starts, with each forked DataLoader worker holding its library's "
                "measured pages (MB plus decoded images of the job's largest input) instead of "
                "60 MB, a forked process's resident set counting its parent's anonymous pages and "
                "the file pages it touches, and a job of unmapped recipes planned as its baselines",
            ),
            Model(
                "decode-floor-2026-12-02",
                "7d191043ce4472eb16f1f6b79ecd49a7e241cfcf",
                "as worker-pages, with each process of a decode-scope DataLoader job's decode "
                "floor (one per worker) planned at its library's measured pages",
            ),
        ),
    ),
    Check(
        "training-memory",
        "Training jobs' memory as planned",
        "A training job passes when its planned memory (`mem_mb`, as planned for the machine "
        f"that ran it) is {cost_validation.MEMORY_TARGET[0]}-{cost_validation.MEMORY_TARGET[1]} "
        "times its Snakemake max_pss (tools/checks/training_memory.py). The fit the constants "
        "come from is in sample and not counted.",
        (
            Model("gpu-context", "", "a CUDA context counted for every training job"),
            Model(
                "host-gpu",
                "1f520e577656e244a098a32f060696174d2a0066",
                "a CUDA context only where the job can have a GPU; a training decode worker's "
                "own memory fitted on the reference run",
            ),
        ),
    ),
    Check(
        "calibration",
        "A/A calibration: equal work under two names",
        "An A/A pair (one row measured under two names of a library in separate jobs) passes "
        "when the decision rule does not call either name faster or slower "
        "(calibration_pairs.csv: `false_call`); every pair decided at policy.DECISION_LEVEL "
        "counts, whatever its kind of row.",
    ),
    Check(
        "default-runs",
        "Two default runs back to back",
        "A ranked row (pipeline x library) passes when the second run's median over the first's "
        "is within 0.85-1.15 or each median lies in the other run's interval "
        "(tools/checks/compare_default_runs.py: its `repeats` column). Every row of both runs "
        "counts.",
        models=(
            Model(
                "one-process", "", "each ranked row one process, two epochs of one batch per worker"
            ),
            Model(
                "five-processes",
                "d1b58c3f3cb690638e16fc606e14eb51aab2a766",
                "each ranked row 5 fresh processes, each an epoch of about half a second",
            ),
        ),
    ),
    Check(
        "workers-to-feed",
        "The scaling behind workers_to_feed on a larger machine",
        "A row passes when its measured supply / the supply the scaling model predicts from "
        "the same run's smaller worker counts is within "
        f"{1 - workers_to_feed_check.TOLERANCE:.2f}-{1 + workers_to_feed_check.TOLERANCE:.2f} "
        "(tools/checks/workers_to_feed_check.py: its `within` column). Every row of a count "
        "above the inputs counts.",
        series=(
            ("one-count", "fitted on a run's smallest count (a 2-core run's case)"),
            ("two-counts", "fitted on a run's two smallest counts (measured gain per worker)"),
        ),
    ),
)

_T = "training-check"
RUNS = (
    Run(_T, VM, "2026-11-26-training-check-standin", "training.csv", "2026-11-26",
        "9dc408f1b1a4878077f39f97e31705ae59d47ccf", "epochs", "one-run", "sleep stand-ins"),
    Run(_T, VM, "2026-11-26-training-check-resnet18-cpu", "training.csv", "2026-11-26",
        "9dc408f1b1a4878077f39f97e31705ae59d47ccf", "epochs", "one-run", "ResNet-18, CPU"),
    Run(_T, VM, "2026-11-27-training-check-databound-allocators", "training.csv", "2026-11-27",
        "003c756072fb6117f69d49338e2f639f2c2036d3", "epochs", "one-run",
        "glibc and glibc-steady"),
    Run(_T, VM, "2026-11-27-training-check-supply-repeats", "training.csv", "2026-11-27",
        "7a35e5c72e8d0b58d88a0ab50177339216885d7f", "epochs", "one-run",
        "4 supply runs, each with its own training runs"),
    Run(_T, H100, "2026-11-27-node-run", "analysis/summary.md", "2026-11-27",
        "bbe35ff296f8ea1e59a3092173bf9218349ac2d6", "epochs", "gpu-node", "one run per job"),
    Run(_T, VM, "2026-11-27-training-check-pooled", "training.csv", "2026-11-27",
        "06de92aeacb31d03abb492ce459ba133b1ddacbe", "steady", "sequential", "3 + 3 runs"),
    Run(_T, VM, "2026-11-27-training-check-side-by-side", "training.csv", "2026-11-27",
        "9ca56a34fe5a77c71ab96f57aed776e9edb61879", "steady", "alternating", "5 + 5 runs",
        ("training-3-rounds.csv",)),
    Run(_T, VM, "2026-11-27-training-check-torchvision-glibc", "training.csv", "2026-11-27",
        "94d340d429e427a43f9f011a2b1bc3d0225a7ddf", "steady", "alternating",
        "4 + 4 runs, torchvision, glibc"),
    Run(_T, VM, "2026-11-27-training-check-torchvision-glibc-steady", "training.csv",
        "2026-11-27", "94d340d429e427a43f9f011a2b1bc3d0225a7ddf", "steady", "alternating",
        "4 + 4 runs, torchvision, glibc-steady"),
    Run(_T, VM, "2026-11-27-training-check-side-by-side-glibc-steady", "training.csv",
        "2026-11-27", "94d340d429e427a43f9f011a2b1bc3d0225a7ddf", "steady", "alternating",
        "6 + 6 runs, glibc-steady", ("training-4-rounds.csv",)),
    Run(_T, VM, "2026-11-27-training-check-side-by-side-glibc", "training.csv", "2026-11-27",
        "94d340d429e427a43f9f011a2b1bc3d0225a7ddf", "steady", "alternating",
        "6 + 6 runs, glibc", ("training-4-rounds.csv",)),
    Run(_T, VM, "2026-11-27-training-check-workflow-1", "training-glibc.csv", "2026-11-27",
        "5f8c520b937519d196aeee7f25a4279a1083f465", "steady", "workflow", "glibc"),
    Run(_T, VM, "2026-11-27-training-check-workflow-1", "training-glibc-steady.csv",
        "2026-11-27", "5f8c520b937519d196aeee7f25a4279a1083f465", "steady", "workflow",
        "glibc-steady"),
    Run(_T, H100, "2026-11-27-training-check-1", "analysis/training.csv", "2026-11-27",
        "f1541fcee92f0341240b3b2d1dff3d30cdbe48e4", "steady", "gpu-node", "3 runs a side"),
    Run(_T, H100, "2026-11-27-training-check-2", "analysis/training.csv", "2026-11-27",
        "fac82a7bb0e52f3d3493576f430b732588be3744", "warmup", "gpu-node", "3 runs a side"),
    Run(_T, H100, "2026-11-27-training-check-3", "analysis/training.csv", "2026-11-27",
        "1c231f2e98b2e905e816199f39b5633a897d4f7e", "read-probe", "gpu-node", "2-3 runs a side"),
    Run(_T, VM, "2026-11-27-training-check-workflow-2", "training-glibc.csv", "2026-11-27",
        "b73977cc64d5c38b9c6d6535b90ddecfbf6761b9", "read-probe", "workflow", "glibc"),
    Run(_T, VM, "2026-11-27-training-check-workflow-2", "training-glibc-steady.csv",
        "2026-11-27", "b73977cc64d5c38b9c6d6535b90ddecfbf6761b9", "read-probe", "workflow",
        "glibc-steady"),
    Run(_T, VM, "2026-11-29-training-check-cpu-step", "training.csv", "2026-11-29",
        "a620069b8f7749c2d6b417f8fed14aeaabd95bc0", "cores", "cpu-step",
        "under load: sleeping and CPU stand-ins, 2 workers"),
    Run(_T, VM, "2026-11-29-training-check-default-pipeline", "training.csv", "2026-11-29",
        "9a7a94c2d3abfbd5e1965c7aa8408f0feed3119c", "cores", "default-pipeline",
        "quiet: imagenet_train, sleeping and CPU stand-ins, 2 workers"),
    *(
        Run("pipeline-rows", VM, f"2026-11-27-pipeline-rows-vs-fresh-loop-{n}",
            "pipeline_rows_vs_fresh_loop.tsv", "2026-11-27", commit, model, "", what)
        for n, commit, model, what in (
            (1, "e731edcc120005440d3b1365fadf8a05c1f9e37e", "forked-rounds", "4 jobs a side"),
            (2, "e731edcc120005440d3b1365fadf8a05c1f9e37e", "forked-rounds",
             "AlbumentationsX, 3 jobs a side"),
            (3, "147eea59b9f19d2b01a478aa287707c7d8ba5ba2", "forked-rounds", "4 jobs a side"),
            (4, "5a3e0ab7db82eba3d39b6c1a2e171226480a0256", "forked-rounds",
             "4 jobs a side, faults recorded"),
            (5, "5a3e0ab7db82eba3d39b6c1a2e171226480a0256", "fresh-rounds",
             "4 jobs a side, faults recorded"),
        )
    ),
    Run("allocator-effect", VM, "2026-11-26-allocator-effect", "allocator_effect.csv",
        "2026-11-26", "9dc408f1b1a4878077f39f97e31705ae59d47ccf", what="single transforms"),
    Run("allocator-effect", VM, "2026-11-26-allocator-effect", "allocator_effect_pipelines.csv",
        "2026-11-26", "9dc408f1b1a4878077f39f97e31705ae59d47ccf", what="pipelines and steps"),
    Run("cost-validation", VM, "2026-11-26-cost-validation-paper-lite", "cost_validation.tsv",
        "2026-11-26", "c57690ea66d63b02509f87b31bf088a57800e535", "reference-2026-11-26",
        what="paper-lite preset"),
    Run("cost-validation", VM, "2026-11-26-cost-validation-shape-check", "cost_validation.tsv",
        "2026-11-26", "f982fac3b32180e4a1fae39d5160d70fb59fa0fd", "reference-2026-11-26",
        what="tools/checks/cost_shape_check.yaml"),
    Run("cost-validation", VM, "2026-11-27-default-run-side-by-side",
        "cost_validation-from-previous-run.tsv", "2026-11-27",
        "0294424f9b27c7980fe367ef408a6b72c2fa2472", "reference-2026-11-26",
        what="default run, predicted from the run before it"),
    Run("cost-validation", VM, "2026-11-27-training-check-workflow-1",
        "cost-validation-glibc.tsv", "2026-11-27", "d9dd7376d25412c27b891c6ec454ba8fb3ef6cd0",
        "reference-2026-11-27", what="training check, glibc"),
    Run("cost-validation", VM, "2026-11-27-training-check-workflow-1",
        "cost-validation-glibc-steady.tsv", "2026-11-27",
        "d9dd7376d25412c27b891c6ec454ba8fb3ef6cd0", "reference-2026-11-27",
        what="training check, glibc-steady"),
    Run("cost-validation", VM, "2026-11-27-default-run-side-by-side", "cost_validation.tsv",
        "2026-11-27", "d9dd7376d25412c27b891c6ec454ba8fb3ef6cd0", "reference-2026-11-27",
        what="default run"),
    Run("cost-validation", VM, "2026-11-27-training-check-workflow-2",
        "cost-validation-glibc.tsv", "2026-11-27", "b73977cc64d5c38b9c6d6535b90ddecfbf6761b9",
        "reference-2026-11-27", what="training check, glibc"),
    Run("cost-validation", VM, "2026-11-27-training-check-workflow-2",
        "cost-validation-glibc-steady.tsv", "2026-11-27",
        "b73977cc64d5c38b9c6d6535b90ddecfbf6761b9", "reference-2026-11-27",
        what="training check, glibc-steady"),
    Run("cost-validation", VM, "2026-11-29-cost-validation-paper-lite-under-load",
        "cost_validation.tsv", "2026-11-29", "05c8bc1cb42e0487d0918c459e4a775a1bee1efc",
        "reference-2026-11-29", what="paper-lite preset, under load (90 of 108 rows)"),
    Run("cost-validation", VM, "2026-11-29-cost-validation-paper-lite", "cost_validation.tsv",
        "2026-11-29", "c90e8ef39d3f594c6b7bcd417ece0b3f9102329a", "reference-2026-11-29",
        what="paper-lite preset"),
    Run("cost-validation", VM, "2026-11-29-cost-validation-shape-check", "cost_validation.tsv",
        "2026-11-29", "c90e8ef39d3f594c6b7bcd417ece0b3f9102329a", "reference-2026-11-29",
        what="tools/checks/cost_shape_check.yaml"),
    Run("cost-validation", VM, "2026-11-29-cost-validation-paper-lite-same-day-reference",
        "cost_validation.tsv", "2026-11-29", "1318704917b2c816a400ac9e27be428d24baa4e8",
        "reference-2026-11-29-evening", what="paper-lite preset"),
    Run("cost-validation", VM, "2026-11-29-cost-validation-shape-check-same-day-reference",
        "cost_validation.tsv", "2026-11-29", "1318704917b2c816a400ac9e27be428d24baa4e8",
        "reference-2026-11-29-evening", what="tools/checks/cost_shape_check.yaml"),
    Run("cost-validation", VM, "2026-11-29-cost-validation-paper-lite-night",
        "cost_validation.tsv", "2026-11-29", "dc35c1b46a6d5f878b5fe43e4132c2d30bb383ef",
        "reference-2026-11-29-night", what="paper-lite preset"),
    Run("cost-validation", VM, "2026-11-29-cost-validation-shape-check-night",
        "cost_validation.tsv", "2026-11-29", "dc35c1b46a6d5f878b5fe43e4132c2d30bb383ef",
        "reference-2026-11-29-night", what="tools/checks/cost_shape_check.yaml"),
    Run("cost-validation", VM, "2026-11-30-cost-validation-paper-lite", "cost_validation.tsv",
        "2026-11-30", "fca5f4108fac8714159ce448fcf143e3b6c71973", "sampler-2026-11-30",
        what="paper-lite preset"),
    Run("cost-validation", VM, "2026-11-30-cost-validation-shape-check", "cost_validation.tsv",
        "2026-11-30", "fca5f4108fac8714159ce448fcf143e3b6c71973", "sampler-2026-11-30",
        what="tools/checks/cost_shape_check.yaml"),
    Run("cost-validation", INTEL, "2026-11-30-cost-validation-paper-lite", "cost_validation.tsv",
        "2026-11-30", "367b83c4f5895990c81d9ace57db14e2c4b27b99", "sampler-2026-11-30",
        what="paper-lite preset, predicted from a reference run on the same machine"),
    Run("cost-validation", INTEL, "2026-11-30-cost-validation-shape-check", "cost_validation.tsv",
        "2026-11-30", "367b83c4f5895990c81d9ace57db14e2c4b27b99", "sampler-2026-11-30",
        what="tools/checks/cost_shape_check.yaml, predicted from a reference run on the same "
        "machine"),
    Run("cost-validation", INTEL, "2026-11-30-cost-validation-paper-lite-transform-costs",
        "cost_validation.tsv", "2026-11-30", "8ea31f13e4d7a361af3468348e370bdb71885014",
        "transform-costs-2026-11-30",
        what="paper-lite preset, predicted from a reference run on the same machine"),
    Run("cost-validation", INTEL, "2026-11-30-cost-validation-shape-check-transform-costs",
        "cost_validation.tsv", "2026-11-30", "8ea31f13e4d7a361af3468348e370bdb71885014",
        "transform-costs-2026-11-30",
        what="tools/checks/cost_shape_check.yaml, predicted from a reference run on the same "
        "machine"),
    Run("cost-validation", INTEL, "2026-11-30-cost-validation-paper-lite-loader-starts",
        "cost_validation.tsv", "2026-11-30", "94a023cfe785e9d42694d35c3c5ad6a2c268c818",
        "loader-starts-2026-11-30",
        what="paper-lite preset, predicted from a reference run on the same machine"),
    Run("cost-validation", INTEL, "2026-11-30-cost-validation-shape-memory-loader-starts",
        "cost_validation.tsv", "2026-11-30", "94a023cfe785e9d42694d35c3c5ad6a2c268c818",
        "loader-starts-2026-11-30",
        what="tools/checks/cost_shape_memory.yaml, predicted from a reference run on the same "
        "machine"),
    Run("cost-validation", INTEL, "2026-11-30-cost-validation-paper-lite-first-process",
        "cost_validation.tsv", "2026-11-30", "a1ff04624cc77ca364e60ea130201a8e892951ed",
        "first-process-2026-11-30",
        what="paper-lite preset, predicted from a reference run on the same machine"),
    Run("cost-validation", INTEL, "2026-11-30-cost-validation-shape-decode-first-process",
        "cost_validation.tsv", "2026-11-30", "a1ff04624cc77ca364e60ea130201a8e892951ed",
        "first-process-2026-11-30",
        what="tools/checks/cost_shape_decode.yaml, predicted from a reference run on the same "
        "machine"),
    Run("cost-validation", INTEL, "2026-11-30-cost-validation-paper-lite-anonymous-pages",
        "cost_validation.tsv", "2026-11-30", "e65811c01ec4b0d578dcc0904e0b87454e152cf0",
        "anonymous-pages-2026-11-30",
        what="paper-lite preset, predicted from a reference run on the same machine"),
    Run("cost-validation", INTEL, "2026-11-30-cost-validation-shape-processes-anonymous-pages",
        "cost_validation.tsv", "2026-11-30", "e65811c01ec4b0d578dcc0904e0b87454e152cf0",
        "anonymous-pages-2026-11-30",
        what="tools/checks/cost_shape_processes.yaml, predicted from a reference run on the same "
        "machine"),
    Run("cost-validation", INTEL, "2026-11-30-cost-validation-shape-default-rounds",
        "cost_validation.tsv", "2026-11-30", "7d4f10f5f78a3df600b4e0a8b27b5469026fe4bb",
        "rounds-2026-11-30",
        what="tools/checks/cost_shape_default.yaml, predicted from a reference run on the same "
        "machine"),
    Run("cost-validation", INTEL, "2026-11-30-cost-validation-paper-lite-rounds",
        "cost_validation.tsv", "2026-11-30", "7d4f10f5f78a3df600b4e0a8b27b5469026fe4bb",
        "rounds-2026-11-30",
        what="paper-lite preset, predicted from a reference run on the same machine"),
    Run("cost-validation", INTEL, "2026-11-30-cost-validation-shape-rows-later-processes",
        "cost_validation.tsv", "2026-11-30", "65004b1c182163b50867ad72bfef071b0cc2d583",
        "later-processes-2026-11-30",
        what="tools/checks/cost_shape_rows.yaml, predicted from a reference run on the same "
        "machine"),
    Run("cost-validation", INTEL, "2026-11-30-cost-validation-paper-lite-later-processes",
        "cost_validation.tsv", "2026-11-30", "65004b1c182163b50867ad72bfef071b0cc2d583",
        "later-processes-2026-11-30",
        what="paper-lite preset, predicted from a reference run on the same machine"),
    Run("cost-validation", INTEL, "2026-11-30-cost-validation-shape-unsupported-rows",
        "cost_validation.tsv", "2026-11-30", "0526e6969fd23faa6ae02ae7977e11086ba5b1fb",
        "unsupported-rows-2026-11-30",
        what="tools/checks/cost_shape_unsupported.yaml, predicted from a reference run on the "
        "same machine"),
    Run("cost-validation", INTEL,
        "2026-11-30-cost-validation-paper-lite-unsupported-rows-withdrawn", "cost_validation.tsv",
        "2026-11-30", "9f845f5563c4cd7c8a8c7060c970184da8f5b2fa",
        "unsupported-rows-withdrawn-2026-11-30",
        what="paper-lite preset, predicted from a reference run made right before it"),
    Run("cost-validation", INTEL,
        "2026-11-30-cost-validation-shape-settings-unsupported-rows-withdrawn",
        "cost_validation.tsv", "2026-11-30", "9f845f5563c4cd7c8a8c7060c970184da8f5b2fa",
        "unsupported-rows-withdrawn-2026-11-30",
        what="tools/checks/cost_shape_settings.yaml, predicted from a reference run made "
        "right before it"),
    Run("cost-validation", INTEL, "2026-11-30-cost-validation-paper-lite-lazy-calls",
        "cost_validation.tsv", "2026-11-30", "a07315e7ba5458672dad1c8625a647df260eaff0",
        "lazy-calls-2026-11-30",
        what="paper-lite preset, predicted from a reference run made right before it"),
    Run("cost-validation", INTEL, "2026-11-30-cost-validation-shape-lazy-lazy-calls",
        "cost_validation.tsv", "2026-11-30", "a07315e7ba5458672dad1c8625a647df260eaff0",
        "lazy-calls-2026-11-30",
        what="tools/checks/cost_shape_lazy.yaml, predicted from a reference run made right "
        "before it"),
    Run("cost-validation", INTEL, "2026-12-01-cost-validation-paper-lite-batch-periods",
        "cost_validation.tsv", "2026-12-01", "bdfc82c54ff032ae16645c2387592ada08471da9",
        "batch-periods-2026-12-01",
        what="paper-lite preset, predicted from a reference run made right before it"),
    Run("cost-validation", INTEL, "2026-12-01-cost-validation-shape-batches-batch-periods",
        "cost_validation.tsv", "2026-12-01", "bdfc82c54ff032ae16645c2387592ada08471da9",
        "batch-periods-2026-12-01",
        what="tools/checks/cost_shape_batches.yaml, predicted from a reference run made right "
        "before it"),
    Run("cost-validation", INTEL, "2026-12-01-cost-validation-paper-lite-breakdown-stopping",
        "cost_validation.tsv", "2026-12-01", "55b010b548d2d4b53548e54c6af77b2db788cacd",
        "breakdown-stopping-2026-12-01",
        what="paper-lite preset, predicted from a reference run made right before it"),
    Run("cost-validation", INTEL, "2026-12-01-cost-validation-shape-prefetch-breakdown-stopping",
        "cost_validation.tsv", "2026-12-01", "55b010b548d2d4b53548e54c6af77b2db788cacd",
        "breakdown-stopping-2026-12-01",
        what="tools/checks/cost_shape_prefetch.yaml, predicted from a reference run made right "
        "before it"),
    Run("cost-validation", INTEL, "2026-12-01-cost-validation-paper-lite-two-process-looks",
        "cost_validation.tsv", "2026-12-01", "5c3329bbbd7bfb74cc6a47a788f865ccd33578a0",
        "two-process-looks-2026-12-01",
        what="paper-lite preset, predicted from a reference run made right before it"),
    Run("cost-validation", INTEL, "2026-12-01-cost-validation-shape-rounds-two-process-looks",
        "cost_validation.tsv", "2026-12-01", "5c3329bbbd7bfb74cc6a47a788f865ccd33578a0",
        "two-process-looks-2026-12-01",
        what="tools/checks/cost_shape_rounds.yaml, predicted from a reference run made right "
        "before it"),
    Run("cost-validation", VM, "2026-12-01-cost-validation-paper-lite-speed-probe",
        "cost_validation.tsv", "2026-12-01", "d67f3cd36f0e6ce6aa347ebe722d6d7e61086636",
        "speed-probe-2026-12-01",
        what="paper-lite preset, predicted from a reference run made right before it"),
    Run("cost-validation", VM, "2026-12-01-cost-validation-paper-lite-speed-probe",
        "cost_validation-two-process-looks.tsv", "2026-12-01",
        "d67f3cd36f0e6ce6aa347ebe722d6d7e61086636", "two-process-looks-2026-12-01",
        what="paper-lite preset, the same run predicted without the speed reading"),
    Run("cost-validation", VM, "2026-12-01-cost-validation-shape-speed-speed-probe",
        "cost_validation.tsv", "2026-12-01", "d67f3cd36f0e6ce6aa347ebe722d6d7e61086636",
        "speed-probe-2026-12-01",
        what="tools/checks/cost_shape_speed.yaml, predicted from a reference run made right "
        "before it"),
    Run("cost-validation", VM, "2026-12-01-cost-validation-shape-speed-speed-probe",
        "cost_validation-two-process-looks.tsv", "2026-12-01",
        "d67f3cd36f0e6ce6aa347ebe722d6d7e61086636", "two-process-looks-2026-12-01",
        what="tools/checks/cost_shape_speed.yaml, the same run predicted without the speed "
        "reading"),
    Run("cost-validation", VM, "2026-12-01-cost-validation-paper-lite-speed-probe-withdrawn",
        "cost_validation.tsv", "2026-12-01", "09badf3f8af60b48066ee9e52dfd57d3fa603e00",
        "speed-probe-withdrawn-2026-12-01",
        what="paper-lite preset, predicted from a reference run made right before it"),
    Run("cost-validation", VM, "2026-12-01-cost-validation-shape-mixed-speed-probe-withdrawn",
        "cost_validation.tsv", "2026-12-01", "09badf3f8af60b48066ee9e52dfd57d3fa603e00",
        "speed-probe-withdrawn-2026-12-01",
        what="tools/checks/cost_shape_mixed.yaml, predicted from a reference run made right "
        "before it"),
    Run("cost-validation", VM, "2026-12-01-cost-validation-paper-lite-warm-ups",
        "cost_validation.tsv", "2026-12-01", "2620ef2df3775db8ed2c57f8b954f762637458ed",
        "warm-ups-2026-12-01",
        what="paper-lite preset, predicted from a reference run made right before it"),
    Run("cost-validation", VM, "2026-12-01-cost-validation-shape-warmups-warm-ups",
        "cost_validation.tsv", "2026-12-01", "2620ef2df3775db8ed2c57f8b954f762637458ed",
        "warm-ups-2026-12-01",
        what="tools/checks/cost_shape_warmups.yaml, predicted from a reference run made right "
        "before it"),
    Run("cost-validation", VM, "2026-12-01-cost-validation-paper-lite-transform-rounds",
        "cost_validation.tsv", "2026-12-01", "010cf61eafc5ecbfc7a87d3d08740f5ac24b2c33",
        "transform-rounds-2026-12-01",
        what="paper-lite preset, predicted from a reference run made right before it"),
    Run("cost-validation", VM, "2026-12-01-cost-validation-shape-transforms-transform-rounds",
        "cost_validation.tsv", "2026-12-01", "010cf61eafc5ecbfc7a87d3d08740f5ac24b2c33",
        "transform-rounds-2026-12-01",
        what="tools/checks/cost_shape_transforms.yaml, predicted from a reference run made right "
        "before it"),
    Run("cost-validation", VM, "2026-12-01-cost-validation-paper-lite-build-cpu",
        "cost_validation.tsv", "2026-12-01", "446aed4a3035287ceed655c008500632eb152d38",
        "build-cpu-2026-12-01",
        what="paper-lite preset, predicted from a reference run made 2 h 40 min before it"),
    Run("cost-validation", VM, "2026-12-01-cost-validation-shape-crops-build-cpu",
        "cost_validation.tsv", "2026-12-01", "446aed4a3035287ceed655c008500632eb152d38",
        "build-cpu-2026-12-01",
        what="tools/checks/cost_shape_crops.yaml, predicted from a reference run made 3 h before "
        "it"),
    Run("cost-validation", VM, "2026-12-01-cost-validation-paper-lite-build-cpu-fresh-reference",
        "cost_validation.tsv", "2026-12-01", "24bdccfd78deaa3b300162fd22323a71bf3aadf7",
        "build-cpu-2026-12-01",
        what="paper-lite preset, predicted from a reference run made right before it"),
    Run("cost-validation", VM, "2026-12-01-cost-validation-paper-lite-engine-starts",
        "cost_validation.tsv", "2026-12-01", "52731001e4ed92338895d47c2f9893a38ee69856",
        "engine-starts-2026-12-01",
        what="paper-lite preset, predicted from a reference run made right before it"),
    Run("cost-validation", VM, "2026-12-01-cost-validation-shape-tones-engine-starts",
        "cost_validation.tsv", "2026-12-01", "52731001e4ed92338895d47c2f9893a38ee69856",
        "engine-starts-2026-12-01",
        what="tools/checks/cost_shape_tones.yaml, predicted from a reference run made 25 min "
        "before it"),
    Run("cost-validation", VM, "2026-12-02-cost-validation-paper-lite-worker-pages",
        "cost_validation.tsv", "2026-12-02", "971c3429cfd654aa33fd9ec689d0af9e4d943e73",
        "worker-pages-2026-12-01",
        what="paper-lite preset, predicted from a reference run made right before it"),
    Run("cost-validation", VM, "2026-12-02-cost-validation-shape-lighting-worker-pages",
        "cost_validation.tsv", "2026-12-02", "971c3429cfd654aa33fd9ec689d0af9e4d943e73",
        "worker-pages-2026-12-01",
        what="tools/checks/cost_shape_lighting.yaml, predicted from a reference run made 24 min "
        "before it"),
    Run("cost-validation", VM, "2026-12-02-cost-validation-paper-lite-floor",
        "cost_validation.tsv", "2026-12-02", "7d191043ce4472eb16f1f6b79ecd49a7e241cfcf",
        "decode-floor-2026-12-02",
        what="paper-lite preset, predicted from the worker-pages reference run (made 2 h before "
        "it, on a model of the same time plan)"),
    Run("cost-validation", VM, "2026-12-02-cost-validation-shape-warps-floor",
        "cost_validation.tsv", "2026-12-02", "7d191043ce4472eb16f1f6b79ecd49a7e241cfcf",
        "decode-floor-2026-12-02",
        what="tools/checks/cost_shape_warps.yaml, predicted from the same reference run"),
    Run("training-memory", VM, "2026-11-25-training-memory-check-resnet18-cpu",
        "training_memory.tsv", "2026-11-25", "287abb80889acebe1531fc213bf13bc0ff372ea8",
        "gpu-context", what="ResNet-18 on the CPU"),
    Run("training-memory", VM, "2026-11-27-training-check-workflow-1",
        "training-memory-glibc.tsv", "2026-11-27", "1f520e577656e244a098a32f060696174d2a0066",
        "host-gpu", what="64 ms stand-in, glibc"),
    Run("training-memory", VM, "2026-11-27-training-check-workflow-1",
        "training-memory-glibc-steady.tsv", "2026-11-27",
        "1f520e577656e244a098a32f060696174d2a0066", "host-gpu",
        what="64 ms stand-in, glibc-steady"),
    Run("training-memory", VM, "2026-11-27-training-check-workflow-2",
        "training-memory-glibc.tsv", "2026-11-27", "b73977cc64d5c38b9c6d6535b90ddecfbf6761b9",
        "host-gpu", what="64 ms stand-in, glibc"),
    Run("training-memory", VM, "2026-11-27-training-check-workflow-2",
        "training-memory-glibc-steady.tsv", "2026-11-27",
        "b73977cc64d5c38b9c6d6535b90ddecfbf6761b9", "host-gpu",
        what="64 ms stand-in, glibc-steady"),
    *(
        Run("default-runs", VM, "2026-11-26-default-runs-compared", f"compare-{pair}.csv",
            "2026-11-26", commit, "one-process", what=f"default runs {pair}")
        for pair, commit in (
            ("2-3", "365d5119a4dda891f3359c5012d6407c16dc776e"),
            ("3-4", "2846abdfe20f1dca89e891adbc50315b008cd7a0"),
            ("4-5", "cbc5e6d54d74d28aec638e711d8fc2388a45af94"),
        )
    ),
    Run("calibration", VM, "", "calibration_pairs.csv", "2026-11-29",
        "b5f77af5a36108c19520674dfc0deb5ef5bc8f0a",
        what="micro, recipes, pipelines (DataLoader, one thread), training; 24 pairs each"),
    Run("default-runs", VM, "2026-11-29-default-runs-compared", "compare.csv", "2026-11-29",
        "b5f77af5a36108c19520674dfc0deb5ef5bc8f0a", "five-processes",
        what="default preset, 5 processes a row"),
    Run("default-runs", VM, "2026-11-29-default-runs-pipelines-only-compared", "compare.csv",
        "2026-11-29", "9a7a94c2d3abfbd5e1965c7aa8408f0feed3119c", "five-processes",
        what="default preset, pipelines' DataLoader rows only, 5 processes a row"),
    *(
        Run("workers-to-feed", H100, "2026-11-29-workers-to-feed-check",
            f"workers_to_feed_{rule}.csv", "2026-11-29",
            "39d48659fb9af115ac47b9d5b2f86af75e2c31d4", series=key, what=what)
        for rule, key, what in (
            ("one_count", "one-count", "node rows at 8-16 workers from 4"),
            ("two_counts", "two-counts", "node rows at 12-16 workers from 4 and 8"),
        )
    ),
)  # fmt: skip

# Committed files of a check's kind that are not runs of it (the fit the model came from).
NOT_RUNS = {
    f"{VM}/2026-11-27-reference-run/training_memory_fit.tsv": "the fit (in sample)",
    f"{INTEL}/2026-11-30-cost-validation-shape-rows-later-processes/"
    "cost_validation-rounds-model.tsv": "the run priced by the model before the one it checked "
    "(a diagnostic)",
    f"{INTEL}/2026-11-30-cost-validation-paper-lite-unsupported-rows-withdrawn/"
    "cost_validation-lazy-calls-model.tsv": "the run priced by the model made after it (a "
    "diagnostic)",
    f"{INTEL}/2026-11-30-cost-validation-shape-settings-unsupported-rows-withdrawn/"
    "cost_validation-lazy-calls-model.tsv": "the run priced by the model made after it (a "
    "diagnostic)",
}
