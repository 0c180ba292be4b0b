"""Fit the memory model's numbers (augbench/planning/library_memory.json, augbench.policy) in
processes of their own, never from the workflow runs they are checked against
(tools/checks/cost_validation.py checks the model on a measured run;
docs/results/amd-epyc-2c/2026-11-26-cost-validation-paper-lite/):

- ``import_rss_mb`` of ``augbench/planning/library_memory.json`` (written), and ``MANAGER_RSS_MB``:
  the resident memory of a fresh interpreter in each library's venv after importing augbench and the
  library (its adapter's ``import_library``), and after torch too;
- ``import_anonymous_mb`` (written): of that, the anonymous pages (``RssAnon``), what each further
  process importing the same env adds to a job's proportional sets: the libraries' file-backed
  pages are shared between the processes and count once;
- ``working_copies`` of ``augbench/planning/library_memory.json`` (written): a transform's
  temporaries on one image, in copies of the image at the library's working dtype: per library and
  catalog transform it implements, on one synthetic ``--working-px`` square RGB image, the growth of
  the peak resident memory of a child forked for that transform alone, over the image's size (the
  largest of ``--repeats``);
- ``loader_worker`` of ``augbench/planning/library_memory.json`` (written): what one forked
  DataLoader worker of the cpu_dataloader regime holds, per library: of its own, ``private_mb``
  plus ``image_copies`` decoded images of its largest input, and ``file_mb``, the pages of the
  libraries' files it has touched (a forked process maps none of its parent's until it touches
  them; its parent's anonymous pages it maps all). Measured with the regime's loader
  (augbench.measuring.engines.dataloader.plumbing), two workers decoding ``--worker-images``
  synthetic JPEGs through the library's RandomResizedCrop recipe, read for a few batches, at each
  of the two ``--worker-px`` sides; each worker's private pages (``/proc/<pid>/smaps``, its
  batches in shared memory left out: the memory model counts batches in flight apart) after every
  batch read, the largest of ``--repeats`` runs; the line through the two sizes;
- ``floor_process`` of ``augbench/planning/library_memory.json`` (written): what one process of
  the decode floor (augbench.measuring.engines.dataloader.decode_floor, forked after the job's
  process has decoded its images) holds of its own, per library: ``private_mb`` plus
  ``image_copies`` decoded images of its largest input. Measured with the engine's own
  DecodeFloor, two processes, over the same JPEGs as the worker probe, a few epochs: after each,
  each process's private pages plus what its resident set has dropped from its peak (VmHWM less
  VmRSS: the pages a decode held and gave back), the largest of ``--repeats`` runs; the line
  through the two sizes;
- ``TRAINING_MODEL_MB``: the training regime's model state in the main process at batch 32 (the
  torchvision env): the peak resident memory a fresh process gains from building the model and
  its SGD optimizer and running training steps on a batch, as the training engine does on the CPU
  (ResNet-18 at 112 px, ResNet-50 at 224 px).

    uv run python tools/checks/import_rss.py [--envs-dir .venvs] [--repeats 3] [--output FILE]
        [--imports-only | --working-copies-only | --loader-worker-only | --floor-only]

Writes the per-library numbers (``--libraries``: only those, the others kept) and prints the
others as the policy's literals, with the machine and date, to paste into augbench/policy.py
after a lock change (envs/*.txt). Each value is the largest of ``--repeats``
fresh processes (ru_maxrss, MiB).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import platform
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from augbench.planning.memory import LIBRARY_MEMORY_FILE  # noqa: E402
from augbench.workload import adapters  # noqa: E402
from augbench.workload.adapters.base import CPU_TRANSFORMS  # noqa: E402

PROBE = """
import json, resource, sys
sys.path.insert(0, {root!r})
def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
def anonymous():  # the pages no other process can share (RssAnon, MiB)
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    return rss()
if {manager!r}:
    # The managers of micro and pipeline breakdown jobs: no library import.
    import augbench.measuring.engines.micro, augbench.measuring.engines.pipeline_breakdown
    print(json.dumps({{"manager": rss()}}))
    raise SystemExit
from augbench.workload import adapters
adapters.get({library!r}).import_library()
alone, alone_anonymous = rss(), anonymous()
try:
    import torch  # noqa: F401
except ImportError:  # an env without torch (DALI's): no engine there imports it
    pass
print(json.dumps({{"alone": alone, "torch": rss(), "alone_anonymous": alone_anonymous,
                  "torch_anonymous": anonymous()}}))
"""


WORKING = """
import json, os, resource, sys, tempfile
sys.path.insert(0, {root!r})
from augbench.policy import MICRO_THREADS
MICRO_THREADS.apply_environment()
import numpy as np
from augbench.workload import adapters, catalog
adapter = adapters.get({library!r})
adapter.import_library()
MICRO_THREADS.apply_runtime()
def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
side = {side}
rng = np.random.default_rng(0)
image = adapter.from_array(rng.integers(0, 256, (side, side, 3), dtype=np.uint8))
held = side * side * 3 * adapter.working_value_bytes
# One forked child per transform: a child's peak starts at what it shares with this process
# (the library, the image), so its growth is that transform's temporaries alone, in images.
found = {{}}
for transform in catalog.names():
    if not adapter.supports(transform):
        continue
    spec = catalog.get(transform)
    with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
        pid = os.fork()
        if pid == 0:
            try:
                fn = adapter.build(spec.name, spec.params)
                before = peak()
                result = adapter.materialize(fn(image), image)
                del result
                grew = (peak() - before) / held
            except Exception:
                grew = None
            with open(out.name, "w") as fh:
                json.dump(grew, fh)
            os._exit(0)
        os.waitpid(pid, 0)
        grew = json.loads(open(out.name).read() or "null")
    if grew is not None:
        found[transform] = round(grew, 2)
print(json.dumps(found))
"""

# What both loader probes start with: the library's env as the engine sets it up, the JPEGs,
# and the readers of a process's own pages.
LOADER_PROBE = """
import json, re, sys, tempfile
from pathlib import Path
sys.path.insert(0, {root!r})
from augbench.policy import DATALOADER_THREADS
DATALOADER_THREADS.apply_environment()
from augbench.workload import adapters
adapter = adapters.get({library!r})
adapter.import_library()
import torch  # noqa: F401
from augbench.measuring.engines.dataloader import decode_floor, plumbing
DATALOADER_THREADS.apply_runtime()
files = sorted(str(f) for f in Path({folder!r}).glob("*.jpg"))
HEADER = re.compile(r"^[0-9a-f]+-[0-9a-f]+ ")
def private_mb(pid):  # Private_Clean + Private_Dirty, shared-memory batches left out
    total, counted = 0, True
    for line in open(f"/proc/{{pid}}/smaps"):
        if HEADER.match(line):
            fields = line.split()
            path = fields[5] if len(fields) > 5 else ""
            counted = not (path.startswith("/dev/shm") or "torch_" in path or "memfd:" in path)
        elif counted and line.startswith(("Private_Clean:", "Private_Dirty:")):
            total += int(line.split()[1])
    return total / 1024
def status_mb(pid, field):  # a line of /proc/<pid>/status, in MiB
    for line in open(f"/proc/{{pid}}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0
"""

WORKER = (
    LOADER_PROBE
    + """
dataset = plumbing.RecipeDataset(files, adapter.decode, plumbing.build_recipe(adapter, {recipe!r}))
settings = plumbing.LoaderSettings(workers=2, batch_size={batch}, prefetch_factor=2,
                                   persistent_workers=True, batch_timeout=300)
records = Path(tempfile.mkdtemp())
sampler = plumbing.EpochSampler(len(files), 10**6)
batches = iter(plumbing.regime_loader(settings, dataset, sampler, records))
# A worker's peak is not readable afterwards: its pages after every batch read, the largest.
peak = 0.0
for _ in range({batches}):
    next(batches)
    workers = [json.loads(f.read_text())["pid"] for f in records.glob("worker-*.json")]
    peak = max([peak] + [private_mb(pid) for pid in workers])
# The library files' pages the worker has touched (RssFile): fork maps none of them.
print(json.dumps({{"workers": len(workers), "private_mb": peak,
                  "file_mb": max(status_mb(pid, "RssFile") for pid in workers)}}))
"""
)

FLOOR = (
    LOADER_PROBE
    + """
images = [adapter.decode(f) for f in files]  # the job's process holds them when the floor forks
floor = decode_floor.DecodeFloor(adapter.decode, files, 2)
# After each epoch, each process's pages and what its resident set gave back since its peak.
peak = 0.0
for _ in range({epochs}):
    floor.epoch()
    pids = list(floor.pool._processes)
    peak = max([peak] + [private_mb(pid) + status_mb(pid, "VmHWM") - status_mb(pid, "VmRSS")
                         for pid in pids])
floor.close()
print(json.dumps({{"processes": len(pids), "private_mb": peak}}))
"""
)

# The worker probe's recipe and loader (the regime's defaults: augbench.workload.recipes).
WORKER_RECIPE = "RandomResizedCrop"
WORKER_BATCH = 12
WORKER_BATCHES = 12
FLOOR_EPOCHS = 3


TRAINING = """
import json, resource, sys
sys.path.insert(0, {root!r})
from augbench.policy import DATALOADER_THREADS
DATALOADER_THREADS.apply_environment()
import torch
from augbench.measuring.engines import accelerators
DATALOADER_THREADS.apply_runtime()
def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
batch = torch.zeros(32, 3, {size}, {size})
before = peak()
step = accelerators.model_accelerator("cpu", {size}, {model!r}).step
for _ in range(2):
    step(batch)
print(json.dumps({{"state_mb": peak() - before}}))
"""

# The training models and the CPU input each is fitted at (the engine's CPU step).
TRAINING_INPUTS = {"resnet18": 112, "resnet50": 224}


def run_probe(python: Path, code: str) -> dict[str, float]:
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def probe(python: Path, library: str, manager: bool = False) -> dict[str, float]:
    code = PROBE.format(root=str(ROOT), library=library, manager=manager)
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{library}: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--envs-dir", type=Path, default=ROOT / ".venvs")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--working-px", type=int, default=2048, help="side of the working-copy image")
    p.add_argument(
        "--libraries",
        nargs="+",
        default=adapters.names(),
        choices=adapters.names(),
        help="measure these (a new library); the working copies of the others are kept",
    )
    p.add_argument(
        "--output", type=Path, default=LIBRARY_MEMORY_FILE,
        help="the JSON file to update (default: the one the memory model reads)",
    )  # fmt: skip
    only = p.add_mutually_exclusive_group()
    only.add_argument("--working-copies-only", action="store_true",
                      help="fit and write the working copies, nothing else")  # fmt: skip
    only.add_argument("--imports-only", action="store_true",
                      help="measure the processes after their imports, nothing else")  # fmt: skip
    only.add_argument("--loader-worker-only", action="store_true",
                      help="measure the DataLoader workers' own memory, nothing else")  # fmt: skip
    only.add_argument("--floor-only", action="store_true",
                      help="measure a decode floor's processes' memory, nothing else")  # fmt: skip
    p.add_argument("--worker-px", type=int, nargs=2, default=[512, 2048],
                   help="the two sides of the worker probe's JPEGs")  # fmt: skip
    p.add_argument("--worker-images", type=int, default=48, help="JPEGs the worker probe decodes")
    args = p.parse_args()
    modes = (args.imports_only, args.working_copies_only, args.loader_worker_only, args.floor_only)
    everything = not any(modes)
    if everything or args.imports_only:
        print_process_constants(args)
    if everything or args.working_copies_only:
        fit_working_copies(args)
    if everything or args.loader_worker_only:
        measure_loader_worker(args)
    if everything or args.floor_only:
        measure_floor_process(args)
    if everything:
        print_training_state(args)
    return 0


def print_process_constants(args: argparse.Namespace) -> None:
    found: dict[str, tuple[float, float]] = {}
    anonymous: dict[str, tuple[float, float]] = {}
    manager = 0.0
    for library in args.libraries:
        python = args.envs_dir / library / "bin" / "python"
        if not python.exists():
            print(f"# {library}: no venv at {python}; skipped")
            continue
        runs = [probe(python, library) for _ in range(args.repeats)]
        found[library] = (max(r["alone"] for r in runs), max(r["torch"] for r in runs))
        anonymous[library] = (
            max(r["alone_anonymous"] for r in runs), max(r["torch_anonymous"] for r in runs)
        )  # fmt: skip
        if library == "albumentationsx":
            manager = max(probe(python, library, manager=True)["manager"] for _ in range(2))
    for key, measured in (("import_rss_mb", found), ("import_anonymous_mb", anonymous)):
        whole = {lib: [float(round(v)) for v in pair] for lib, pair in measured.items()}
        write_measured(key, whole, args)
    print(f"# {platform.node()} ({platform.processor() or platform.machine()}), "
          f"{datetime.date.today().isoformat()}, tools/checks/import_rss.py")  # fmt: skip
    if manager:  # measured in AlbumentationsX's env, the micro engine's
        print(f"MANAGER_RSS_MB = {manager:.0f}.0")


def write_measured(key: str, found: dict[str, Any], args: argparse.Namespace) -> None:
    """Put ``found`` (per library) under ``key`` of augbench/planning/library_memory.json, keeping
    what the file holds for the libraries not measured now, in the libraries' order."""
    target: Path = args.output
    doc = json.loads(target.read_text()) if target.exists() else {}
    merged = {**{k: v for k, v in doc.get(key, {}).items() if k not in found}, **found}
    doc[key] = {lib: merged[lib] for lib in adapters.names() if lib in merged}
    doc.update(
        machine=platform.node(), processor=platform.processor() or platform.machine(),
        date=datetime.date.today().isoformat(), tool="tools/checks/import_rss.py",
    )  # fmt: skip
    if key == "working_copies":
        doc.update(image_px=args.working_px, repeats=args.repeats)
    if key in ("loader_worker", "floor_process"):
        doc.update(worker_px=args.worker_px, worker_images=args.worker_images)
    target.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"# wrote {key} of {target}")


def transforming_envs(args: argparse.Namespace) -> Iterator[tuple[str, Path]]:
    """(library, its env's interpreter) of each ``--libraries`` library that transforms images on
    the CPU and has an env under ``--envs-dir``."""
    for library in args.libraries:
        python = args.envs_dir / library / "bin" / "python"
        if CPU_TRANSFORMS in adapters.declared(library).capabilities and python.exists():
            yield library, python


def fit_working_copies(args: argparse.Namespace) -> None:
    copies: dict[str, dict[str, float]] = {}
    for library, python in transforming_envs(args):
        code = WORKING.format(root=str(ROOT), library=library, side=args.working_px)
        runs = [run_probe(python, code) for _ in range(args.repeats)]
        copies[library] = {name: max(r[name] for r in runs) for name in runs[0]}
        worst = max(copies[library], key=copies[library].get)
        print(f"# {library}: {len(copies[library])} transforms, up to "
              f"{copies[library][worst]:.2f} copies ({worst}, {args.working_px} px)")  # fmt: skip
    if copies:
        write_measured("working_copies", copies, args)


def measure_loader_worker(args: argparse.Namespace) -> None:
    found: dict[str, dict[str, float]] = {}
    for library, python in transforming_envs(args):
        runs = [loader_probes(python, WORKER, side, args, library=library, recipe=WORKER_RECIPE,
                              batch=WORKER_BATCH, batches=WORKER_BATCHES)
                for side in args.worker_px]  # fmt: skip
        held, found[library] = private_line(runs, args.worker_px)
        touched = max(r["file_mb"] for probes in runs for r in probes)
        found[library]["file_mb"] = float(math.ceil(touched))
        print(f"# {library}: a DataLoader worker holds {held[0]:.0f} MB of its own at "
              f"{args.worker_px[0]} px, {held[1]:.0f} MB at {args.worker_px[1]} px: "
              f"{found[library]['private_mb']:.0f} MB and "
              f"{found[library]['image_copies']:.2f} images; "
              f"it touches {touched:.0f} MB of the libraries' files")  # fmt: skip
    if found:
        write_measured("loader_worker", found, args)


def measure_floor_process(args: argparse.Namespace) -> None:
    found: dict[str, dict[str, float]] = {}
    for library, python in transforming_envs(args):
        runs = [loader_probes(python, FLOOR, side, args, library=library, epochs=FLOOR_EPOCHS)
                for side in args.worker_px]  # fmt: skip
        held, found[library] = private_line(runs, args.worker_px)
        print(f"# {library}: a decode-floor process holds {held[0]:.0f} MB of its own at "
              f"{args.worker_px[0]} px, {held[1]:.0f} MB at {args.worker_px[1]} px: "
              f"{found[library]['private_mb']:.0f} MB and "
              f"{found[library]['image_copies']:.2f} images")  # fmt: skip
    if found:
        write_measured("floor_process", found, args)


def private_line(
    runs: list[list[dict[str, float]]], sides: list[int]
) -> tuple[list[float], dict[str, float]]:
    """The largest ``private_mb`` of the probes at each of the two ``sides``, and the line through
    them: MB of the process's own (never below 0) plus copies of a decoded RGB image."""
    held = [max(r["private_mb"] for r in probes) for probes in runs]
    small, large = (side * side * 3 / 2**20 for side in sides)  # MiB per image
    copies = max(0.0, (held[1] - held[0]) / (large - small))
    own = float(math.ceil(max(0.0, held[0] - copies * small)))
    return held, {"private_mb": own, "image_copies": round(copies, 2)}


@contextlib.contextmanager
def synthetic_jpegs(side: int, count: int) -> Iterator[str]:
    """A folder of ``count`` ``side`` px JPEGs of smooth noise (a photo's JPEG size)."""
    import tempfile

    import numpy as np
    from PIL import Image

    with tempfile.TemporaryDirectory() as folder:
        rng = np.random.default_rng(0)
        for i in range(count):
            small = rng.integers(0, 256, (max(1, side // 16), max(1, side // 16), 3), np.uint8)
            Image.fromarray(small).resize((side, side)).save(Path(folder) / f"{i:03d}.jpg")
        yield folder


def loader_probes(
    python: Path, program: str, side: int, args: argparse.Namespace, **fields: Any
) -> list[dict[str, float]]:
    """``--repeats`` runs of a loader probe's ``program`` (WORKER, FLOOR) on ``side`` px JPEGs."""
    with synthetic_jpegs(side, args.worker_images) as folder:
        code = program.format(root=str(ROOT), folder=folder, **fields)
        return [run_probe(python, code) for _ in range(args.repeats)]


def print_training_state(args: argparse.Namespace) -> None:
    python = args.envs_dir / "torchvision" / "bin" / "python"
    if python.exists():
        states = {}
        for model, size in TRAINING_INPUTS.items():
            code = TRAINING.format(root=str(ROOT), model=model, size=size)
            states[model] = max(run_probe(python, code)["state_mb"] for _ in range(args.repeats))
        inputs = ", ".join(f"{m} at {px} px" for m, px in TRAINING_INPUTS.items())
        print(f"# training state at batch 32 on the CPU: {inputs}")
        fitted = ", ".join(f'"{m}": {v:.0f}.0' for m, v in states.items())
        print(f'TRAINING_MODEL_MB: dict[str, float] = {{{fitted}, "sleep": 0.0}}')


if __name__ == "__main__":
    sys.exit(main())
