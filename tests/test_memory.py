"""The memory model of planned jobs (augbench/planning/memory.py) and what feeds it: the pixel
budget shared by the micro engine and the plan, the prediction formula, the image sizes known before
staging, the footprints the regime declarations give (augbench/planning/regimes/) and the plan's
refusal of a job that cannot fit its machine (augbench/planning/sweep.py). No Snakemake, no
benchmarked library."""

from __future__ import annotations

import ast
import functools
import io
import json
import math
import os
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from augbench import policy
from augbench.measuring import media
from augbench.measuring.engines import micro
from augbench.planning import dataset, memory, regimes, resize, sweep
from augbench.planning.config import deep_merge, resolve
from augbench.workload import adapters
from augbench.workload.adapters.base import CPU_TRANSFORMS

EVERYTHING = {
    "machine": "m",
    "libraries": ["albumentationsx", "torchvision", "kornia", "pillow", "dali"],
    "regimes": ["micro", "cpu_dataloader", "gpu_dataloader", "dali"],
}
MP = 1_000_000


def config(preset: str, **extra: object) -> dict:
    """config/config.yaml with ``preset``, every library and regime, and ``extra``, resolved."""
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    return resolve(deep_merge(base, {"preset": preset, **EVERYTHING, **extra}), REPO)


def write_manifest(path: Path, sizes: list[tuple[int, int]]) -> Path:
    """A staged dataset's manifest.json listing images of ``sizes`` (width, height)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    files = [{"path": f"{i:05d}.jpg", "width": w, "height": h} for i, (w, h) in enumerate(sizes)]
    path.write_text(json.dumps({"images_dir": "images", "files": files}))
    return path


# -- 1. the pixel budget ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("pixels", "wanted", "max_megapixels", "held"),
    [
        pytest.param([1 * MP] * 5, 3, None, 3, id="no-budget-all-wanted"),
        pytest.param([1 * MP] * 5, 3, 0, 3, id="zero-is-no-budget"),
        pytest.param([2 * MP] * 5, 5, 5.0, 2, id="binding-largest-prefix"),
        pytest.param([2 * MP] * 3, 3, 6.0, 3, id="budget-reached-exactly-holds-all"),
        pytest.param([1 * MP, 9 * MP, 1 * MP], 3, 5.0, 1, id="a-prefix-never-skips-an-image"),
        pytest.param([10 * MP, 1 * MP], 2, 5.0, 1, id="first-image-over-budget-still-one"),
        pytest.param([1 * MP] * 3, 10, None, 3, id="wanted-beyond-the-list-no-budget"),
        pytest.param([1 * MP] * 3, 10, 2.5, 2, id="wanted-beyond-the-list-binding"),
    ],
)
def test_images_within_budget(
    pixels: list[int], wanted: int, max_megapixels: float | None, held: int
) -> None:
    """Protects the one rule the micro engine (on the manifest) and the plan (on plan-time sizes)
    share: the first images whose pixels stay within the budget, at least one, all without one."""
    assert media.images_within_budget(pixels, wanted, max_megapixels) == held


# -- 2. the prediction --------------------------------------------------------------------------
def expected(fp: memory.Footprint) -> tuple[int, int, float]:
    """(mem_mb, rss_mb, process_mb) by the formula of augbench/planning/memory.py's docstring, from
    the policy constants: shared pages once (a further interpreter of the env adds its anonymous
    pages) plus each forked worker's private pages, the batches in flight and the job's memory
    sampler (mem_mb); the same plus each further interpreter's file pages and each forked
    worker's copy of the main process's anonymous pages, the images among them, and of the
    library files' pages it touches (rss_mb); both times the headroom factor plus its MB."""
    alone, with_torch = memory.measured()["import_rss_mb"][fp.library]
    anonymous = memory.measured()["import_anonymous_mb"][fp.library][1 if fp.torch else 0]
    context = policy.CUDA_CONTEXT_HOST_MB if fp.gpu else 0
    base = (with_torch if fp.torch else alone) + context
    image = fp.images * fp.pixels * fp.channels * fp.value_bytes * fp.copies / 2**20
    main = base + image + fp.extra_mb + fp.working_mb
    others = (fp.processes - 1) * (anonymous + context)
    own = (fp.forked - fp.loader_workers - fp.floor_processes) * fp.worker_private_mb
    own += fp.loader_workers * fp.loader_worker_mb + fp.floor_processes * fp.floor_mb
    needed = main + others + own + fp.batches_mb
    needed += policy.JOB_MEMORY_SAMPLER_MB  # the job's memory sampler, a process of its own
    # A forked process maps its parent's anonymous pages and the library files' pages it touches.
    worker = memory.measured()["loader_worker"].get(fp.library)
    inherited = anonymous + worker["file_mb"] + context if worker else base
    rss = needed - others + (fp.processes - 1) * base + fp.forked * (inherited + image)
    room = policy.MEMORY_HEADROOM
    return math.ceil(needed * room.factor + room.mb), math.ceil(rss * room.factor + room.mb), base


def test_image_mb_is_images_times_pixels_channels_bytes_and_copies() -> None:
    """Protects the resident pixel data of a footprint: 8 images of 2**20 RGB 8-bit pixels, held
    once, are 24 MiB; float32 values in two copies make it 8 times that."""
    fp = memory.Footprint("pillow", images=8, pixels=2**20)
    assert fp.image_mb == 24.0
    assert memory.Footprint("kornia", images=8, pixels=2**20, value_bytes=4, copies=2).image_mb == (
        24.0 * 8
    )


@pytest.mark.parametrize("library", ["pillow", "albumentations_mit"])
@pytest.mark.parametrize("torch", [False, True])
def test_predict_follows_the_documented_formula(torch: bool, library: str) -> None:
    """Protects mem_mb (what the rule requests) and rss_mb (what Snakemake's max_rss reports) for
    a job with several processes, forked workers (two of them loader workers, one a decode
    floor's process), resident images and an extra process; for a library with a measured
    loader worker and one without."""
    assert ("albumentations_mit" in memory.measured()["loader_worker"]) is False
    fp = memory.Footprint(
        library, torch=torch, processes=2, forked=4, images=10, pixels=1.5 * MP,
        channels=3, value_bytes=1, copies=2.0, extra_mb=policy.MANAGER_RSS_MB, working_mb=50.0,
        batches_mb=120.0, loader_workers=2, loader_worker_mb=33.0, floor_processes=1,
        floor_mb=7.0,
    )  # fmt: skip
    mem_mb, rss_mb, process_mb = expected(fp)
    got = memory.predict(fp)
    assert (got.mem_mb, got.rss_mb, got.process_mb) == (mem_mb, rss_mb, process_mb)
    assert got.image_mb == fp.image_mb
    assert got.process_mb == memory.measured()["import_rss_mb"][library][1 if torch else 0]


def test_forked_workers_count_the_parent_again_only_in_the_rss_sum() -> None:
    """Protects the difference of the two numbers: a forked worker shares its parent's pages
    (mem_mb adds only its private MB) but Snakemake's max_rss sums them again; without forked
    workers the two agree."""
    alone = memory.Footprint("torchvision", torch=True, images=100, pixels=0.2 * MP)
    forked = memory.Footprint("torchvision", torch=True, images=100, pixels=0.2 * MP, forked=4)
    assert memory.predict(alone).rss_mb == memory.predict(alone).mem_mb
    assert memory.predict(forked).rss_mb > memory.predict(forked).mem_mb
    assert memory.predict(forked).mem_mb > memory.predict(alone).mem_mb
    assert (memory.predict(forked).mem_mb, memory.predict(forked).rss_mb) == expected(forked)[:2]


def test_a_gpu_job_adds_the_cuda_context_to_its_process() -> None:
    """Protects the host memory of a CUDA context in a GPU job's prediction."""
    cpu = memory.Footprint("torchvision", torch=True, forked=2)
    gpu = memory.Footprint("torchvision", torch=True, forked=2, gpu=True)
    assert memory.predict(gpu).process_mb == (
        memory.predict(cpu).process_mb + policy.CUDA_CONTEXT_HOST_MB
    )
    assert (memory.predict(gpu).mem_mb, memory.predict(gpu).rss_mb) == expected(gpu)[:2]


def test_every_library_has_its_measured_memory() -> None:
    """Protects the plan of every shipped library: each has its measured process size, and each
    that transforms images on the CPU its transforms' working copies."""
    found = memory.measured()
    shipped = {name for name in adapters.names() if not adapters.is_alias(name)}
    assert set(found["import_rss_mb"]) == shipped == set(found["import_anonymous_mb"])
    for library, anonymous in found["import_anonymous_mb"].items():
        assert 0 < anonymous[0] <= found["import_rss_mb"][library][0]
        assert 0 < anonymous[1] <= found["import_rss_mb"][library][1]
    cpu = {name for name in adapters.with_capability(CPU_TRANSFORMS) if name in shipped}
    assert set(found["working_copies"]) == cpu


def test_a_library_without_a_measurement_gets_the_largest_one() -> None:
    """Protects a registered extension's prediction: the unknown-library constant."""
    assert memory.process_mb("not-a-library", False) == policy.UNKNOWN_LIBRARY_RSS_MB[0]
    assert memory.process_mb("not-a-library", True) == policy.UNKNOWN_LIBRARY_RSS_MB[1]
    assert memory.anonymous_mb("not-a-library", True) == policy.UNKNOWN_LIBRARY_RSS_MB[1]


def _kib(pid: int, field: str, name: str) -> int:
    for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/{name}")


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="needs Linux /proc")
def test_a_further_interpreter_of_the_same_env_adds_its_anonymous_pages_only() -> None:
    """Protects the premise of ``further`` processes in memory.predict: two interpreters that
    import the same modules share the modules' file pages, so the proportional sets' sum grows by
    the second one's anonymous pages, not by its resident set."""
    code = "import numpy, json, sys; print('ready', flush=True); sys.stdin.read()"
    started = []
    try:
        for _ in range(2):
            child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)  # fmt: skip
            started.append(child)
            assert child.stdout is not None and child.stdout.readline() == "ready\n"
            if len(started) == 1:
                alone = _kib(child.pid, "Pss", "smaps_rollup")
        both = sum(_kib(c.pid, "Pss", "smaps_rollup") for c in started)
        second = started[1].pid
        resident, anonymous = _kib(second, "VmRSS", "status"), _kib(second, "RssAnon", "status")
    finally:
        for child in started:
            child.kill()
            child.wait()
    assert resident - anonymous > 5 * 1024  # numpy's file pages, what the two share
    grown = both - alone
    assert anonymous * 0.8 <= grown <= anonymous + 0.25 * (resident - anonymous)


# -- 3. the default archive's sizes without building it ------------------------------------------
def test_default_image_sizes_are_those_of_the_built_archive(tmp_path: Path) -> None:
    """Protects the plan-time sizes of the embedded default archive: the same (width, height), in
    member order, as the images build_default_archive writes."""
    pytest.importorskip("skimage")
    from PIL import Image

    archive = tmp_path / "default.tar"
    dataset.build_default_archive(archive, 6)
    with tarfile.open(archive) as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile()), key=lambda m: m.name)
        assert [m.name.split("_")[0] for m in members] == [f"images/{i:05d}" for i in range(6)]
        written = []
        for member in members:
            with Image.open(io.BytesIO(tar.extractfile(member).read())) as img:
                written.append(img.size)
    assert dataset.default_image_sizes(6) == written


# -- 4. image sizes at plan time -----------------------------------------------------------------
def dataset_block(archive: str | None = None, default_images: int = 5) -> dict:
    """The ``dataset`` block plan_sizes reads (the schema's assumed size)."""
    return {
        "dataset": {
            "archive": archive,
            "default_images": default_images,
            "assumed_image_size": [4032, 3024],
        }
    }


def test_a_staged_manifest_gives_the_sizes(tmp_path: Path) -> None:
    """Protects the first source of sizes: a manifest already staged under data_dir wins over the
    default archive and over the assumed size of a configured archive."""
    write_manifest(tmp_path / "base" / "manifest.json", [(640, 480), (300, 200)])
    want = memory.ImageSizes(((640, 480), (300, 200)), "manifest")
    for block in (dataset_block(), dataset_block(archive="photos.tar")):
        assert memory.plan_sizes(block, "base", {}, tmp_path) == {"base": want}


def test_without_a_manifest_the_default_archive_sizes_are_used(tmp_path: Path) -> None:
    """Protects the default archive's sizes before it is built (dataset.default_images of them);
    an unreadable manifest counts as none."""
    expected_sizes = memory.ImageSizes(tuple(dataset.default_image_sizes(5)), "default archive")
    assert memory.plan_sizes(dataset_block(), "base", {}, tmp_path) == {"base": expected_sizes}
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "manifest.json").write_text("{not json")
    assert memory.plan_sizes(dataset_block(), "base", {}, tmp_path) == {"base": expected_sizes}


def test_an_archive_not_staged_yet_has_the_assumed_size(tmp_path: Path) -> None:
    """Protects the conservative assumption for a configured archive with no manifest yet: one
    assumed size standing for any number of images."""
    sizes = memory.plan_sizes(dataset_block(archive="photos.tar"), "base", {}, tmp_path)["base"]
    assert sizes == memory.ImageSizes(((4032, 3024),), "assumed")
    assert sizes.first(3) == [4032 * 3024] * 3
    assert sizes.mean_pixels(3) == 4032 * 3024


def test_a_derived_dataset_has_its_base_sizes_resized(tmp_path: Path) -> None:
    """Protects the sizes of a resolution-sweep dataset before it is resized: its base's, through
    ResizeSpec.target_size, with the base's source; its own staged manifest wins."""
    spec = resize.ResizeSpec(512)
    got = memory.plan_sizes(dataset_block(), "base", {"r512": spec}, tmp_path)
    resized = tuple(spec.target_size(w, h) for w, h in dataset.default_image_sizes(5))
    assert got["r512"] == memory.ImageSizes(resized, "default archive")
    assert all(min(w, h) == 512 for w, h in got["r512"].sizes)
    assumed = memory.plan_sizes(dataset_block(archive="p.tar"), "base", {"r512": spec}, tmp_path)
    assert assumed["r512"] == memory.ImageSizes(((683, 512),), "assumed")
    write_manifest(tmp_path / "r512" / "manifest.json", [(700, 512)])
    staged = memory.plan_sizes(dataset_block(), "base", {"r512": spec}, tmp_path)
    assert staged["r512"] == memory.ImageSizes(((700, 512),), "manifest")


# -- 5. the micro engine's pixel budget on a manifest --------------------------------------------
@pytest.fixture
def two_megapixel_manifest(tmp_path: Path) -> Path:
    """A staged manifest of four 2000 x 1000 images (2 MP each)."""
    return write_manifest(tmp_path / "data" / "manifest.json", [(2000, 1000)] * 4)


@pytest.mark.parametrize(
    ("wanted", "max_megapixels", "held"),
    [(4, 0.0, 4), (4, 100.0, 4), (4, 5.0, 2), (4, 1.0, 1), (10, 100.0, 10), (10, 5.0, 2)],
)
def test_images_within_pixel_budget_on_a_manifest(
    two_megapixel_manifest: Path, wanted: int, max_megapixels: float, held: int
) -> None:
    """Protects what the micro engine asks of the staged manifest: fewer images only where the
    budget binds; otherwise the number asked for, even beyond the dataset (select_files and
    dataset.allow_fewer decide that case)."""
    assert media.images_within_pixel_budget(two_megapixel_manifest, wanted, max_megapixels) == held


def micro_args(manifest: Path, num_images: int, *budget: str) -> micro.MicroSettings:
    return micro.parse_args(
        ["--library", "pillow", "--transforms", "HorizontalFlip", "--manifest", str(manifest),
         "--num-images", str(num_images), "--machine", "m", "--output",
         str(manifest.parent / "out.json"), *budget]
    )  # fmt: skip


@pytest.mark.parametrize(
    ("budget", "record"),
    [
        ([], {"max_megapixels": None, "configured_images": 4, "images": 4, "binding": False}),
        (["--max-megapixels", "100"],
         {"max_megapixels": 100.0, "configured_images": 4, "images": 4, "binding": False}),
        (["--max-megapixels", "5"],
         {"max_megapixels": 5.0, "configured_images": 4, "images": 2, "binding": True}),
    ],
)  # fmt: skip
def test_apply_pixel_budget_lowers_num_images_only_where_it_binds(
    two_megapixel_manifest: Path, budget: list[str], record: dict
) -> None:
    """Protects the micro job's images: --num-images lowered to what the budget holds (so workers,
    the row's dataset record and the cost model see it), and the record of both counts."""
    settings, held = micro.apply_pixel_budget(micro_args(two_megapixel_manifest, 4, *budget))
    assert held == record
    assert settings.num_images == record["images"]


# -- 6. the paper preset against its cloud machines ----------------------------------------------
def paper_sweep(tmp: Path, **extra: object) -> sweep.Sweep:
    """The paper preset as common.smk plans it: the dataset's identity and its derived datasets,
    their plan-time sizes and resolutions (nothing staged under ``tmp``)."""
    cfg = config("paper", **extra)
    base, derived = resize.configured_datasets(cfg, tmp / "dataset-ids.json")
    sizes, resolutions = sweep.dataset_facts(cfg, base.key, derived, tmp / "data")
    return sweep.Sweep(cfg, base.key, tuple(derived), sizes, resolutions)


@pytest.fixture(scope="module")
def paper(tmp_path_factory: pytest.TempPathFactory) -> sweep.Sweep:
    return paper_sweep(tmp_path_factory.mktemp("paper"))


def test_every_paper_job_fits_its_cloud_placement(paper: sweep.Sweep) -> None:
    """Protects the paper sweep on its configured machines: no planned job predicts more memory
    than its placement's memory_mb, so the plan refuses nothing."""
    assert {s.source for s in paper.sizes.values()} == {"default archive"}
    assert sorted(paper.resolutions.values()) == config("paper")["resolutions"]
    checks = paper.memory_checks(functools.partial(paper.placement_memory, "cloud.regimes"))
    assert len(checks) == len(paper.jobs())
    too_big = [c for c in checks if c.predicted_mb > c.available_mb]
    assert not too_big, too_big[:3]
    assert paper.memory_refusals("cloud") == []


def test_a_rules_mem_mb_resource_is_its_prediction(paper: sweep.Sweep) -> None:
    """Protects what Snakemake schedules by: the rule's mem_mb equals the job's prediction."""
    for rule in ("micro", "cpu_dataloader", "gpu_dataloader", "dali"):
        job = next(j for j in paper.jobs() if j.rule == rule)
        resources = paper.resources(job.kind, paper.wildcards_of(job))
        assert resources["mem_mb"] == paper.memory(job).mem_mb


def test_a_micro_machine_too_small_is_refused_with_the_fix(tmp_path: Path) -> None:
    """Protects the refusal before any job starts: one line for the rule that does not fit, with
    its need, the machine's MB and what to change. (2500 MB holds the pipeline breakdown's round
    interpreter with torch, its fork and its manager, which share the micro placement.)"""
    small = paper_sweep(tmp_path, cloud={"regimes": {"micro": {"memory_mb": 2500}}})
    refusals = small.memory_refusals("cloud")
    assert len(refusals) == 1, refusals
    line = refusals[0]
    for part in ("rule micro", "MB", "2500", "micro.max_megapixels"):
        assert part in line, (part, line)


def test_micro_at_2048_px_holds_fewer_images_within_the_budget(paper: sweep.Sweep) -> None:
    """Protects the pixel budget at plan time: at the 2048 px resolution a micro job holds the
    largest prefix of images within micro.max_megapixels, fewer than num_images."""
    key = next(k for k, r in paper.resolutions.items() if r == 2048)
    wanted = paper.num_images_for(regimes.KINDS["micro"])
    held = paper.micro_images(key)
    assert 1 <= held < wanted
    budget = paper.config["micro"]["max_megapixels"] * 1e6
    pixels = paper.sizes[key].first(held + 1)
    assert sum(pixels[:held]) <= budget < sum(pixels)


# -- 7. the footprints of the DataLoader regime ---------------------------------------------------
def dataloader_footprint(s: sweep.Sweep, scope: str, workers: int) -> memory.Footprint:
    kind = regimes.KINDS["cpu_dataloader"]
    wildcards = {"machine": "m", "dataset": "d", "library": "pillow", "scope": scope,
                 "workers": str(workers), "shard": "s000"}  # fmt: skip
    return kind.memory(s, kind, wildcards)


def test_a_dataloader_job_grows_with_its_workers() -> None:
    """Protects the forked workers of every live DataLoader (the regime's, the bare loop's and,
    in the decode scope, the memory-scope companion's) in a cpu_dataloader job's memory, the
    decode scope's decode-floor processes (one per worker), and the fresh fork of the job
    process each row runs in."""
    s = sweep.Sweep(config("smoke", cpu_dataloader={"job_per": "setting"}), "d")
    assert s.config["cpu_dataloader"]["baseline_runs"] > 0
    for scope, loaders, floor in (("memory", 2, 0), ("decode", 3, 4)):
        none, four = dataloader_footprint(s, scope, 0), dataloader_footprint(s, scope, 4)
        assert (none.forked, four.forked) == (1, 1 + 4 * loaders + floor)
        assert (none.floor_processes, four.floor_processes) == (0, floor)
        grown = memory.predict(four).mem_mb - memory.predict(none).mem_mb
        factor = policy.MEMORY_HEADROOM.factor
        # Each forked worker's private pages, and 4 x prefetch_factor more batches in flight.
        batches = four.batches_mb - none.batches_mb
        assert batches == pytest.approx(4 * s.config["cpu_dataloader"]["prefetch_factor"]
                                        * s.config["cpu_dataloader"]["batch_size"] * 224**2
                                        * 12 / 2**20)  # fmt: skip
        assert (none.loader_workers, four.loader_workers) == (0, 4 * loaders)
        own = 4 * loaders * four.loader_worker_mb + floor * four.floor_mb + batches
        assert grown == pytest.approx(own * factor, abs=1)
        assert four.worker_private_mb > policy.WORKER_PRIVATE_MB  # and its transforms' temporaries
        assert memory.predict(four).rss_mb > memory.predict(four).mem_mb


def test_a_deeper_prefetch_queue_adds_no_batches_a_workers_main_process_takes_at_once() -> None:
    """The regime's main process takes each batch as it arrives: a worker holds the batch it
    builds and one ready, so a prefetch_factor past two plans no more batches in flight, and
    one plans one per worker."""
    batches = {}
    for prefetch in (1, 2, 6):
        dl = {"job_per": "setting", "prefetch_factor": prefetch}
        s = sweep.Sweep(config("smoke", cpu_dataloader=dl), "d")
        batches[prefetch] = dataloader_footprint(s, "memory", 2).batches_mb
    per_batch = s.config["cpu_dataloader"]["batch_size"] * 224**2 * 12 / 2**20
    assert policy.BATCHES_HELD_PER_WORKER == 2
    assert batches[6] == batches[2] == pytest.approx((2 * 2 + 1) * per_batch)
    assert batches[1] == pytest.approx((2 * 1 + 1) * per_batch)


def test_a_dataloader_job_whose_every_row_is_unsupported_is_planned_as_its_baselines() -> None:
    """A job whose recipes its library does not map (Pillow has no Erasing) still loads its
    images and runs its baselines (the hand-over probe, then the transport loop: one loader at a
    time, in a fork of their own) before its rows say unsupported
    (augbench.measuring.engines.dataloader.job): planned as that fork and one loader's workers,
    with no row's loaders, decode floor (a process per worker) or memory-scope companion (the
    decode scope's images)."""
    kind = regimes.KINDS["cpu_dataloader"]
    dl = {"job_per": "setting", "transforms": ["Erasing", "HorizontalFlip"], "shard_size": 1}
    s = sweep.Sweep(config("smoke", cpu_dataloader=dl), "d")
    assert s.dataloader_shards["s000"] == ["Erasing"]
    for scope, loaders in (("memory", 2), ("decode", 3 + 1)):
        planned = {
            shard: kind.memory(s, kind, {"machine": "m", "dataset": "d", "library": "pillow",
                                         "scope": scope, "workers": "2", "shard": shard})
            for shard in ("s000", "s001")
        }  # fmt: skip
        unsupported, mapped = planned["s000"], planned["s001"]
        assert (unsupported.forked, mapped.forked) == (1 + 2, 1 + 2 * loaders)
        assert unsupported.batches_mb == mapped.batches_mb > 0
        assert (unsupported.images > 0) == (scope == "memory") and mapped.images > 0
        alone = memory.predict(memory.Footprint("pillow", torch=True)).mem_mb
        assert alone < memory.predict(unsupported).mem_mb < memory.predict(mapped).mem_mb


def test_a_decoder_or_loader_setting_counts_its_own_rows_and_threads_fork_nothing() -> None:
    """Another decoder or loader runs its rows only (no baselines: one live loader, no images
    kept); a loader of threads runs its workers in the row's process (no forked workers), its
    batches in flight as many as worker processes would have."""
    s = sweep.Sweep(config("smoke", cpu_dataloader={"job_per": "setting"}), "d")
    kind = regimes.KINDS["cpu_dataloader"]

    def footprint(decoder: str, loader: str) -> memory.Footprint:
        setting = {"scope": "decode", "workers": "4", "decoder": decoder, "loader": loader}
        wildcards = {"machine": "m", "dataset": "d", "library": "pillow", "shard": "s000"}
        return kind.memory(s, kind, {**wildcards, **setting})

    native = footprint("", "")
    other = footprint("-simplejpeg", "")
    threads = footprint("-simplejpeg", "-thread")
    assert (native.forked, native.images > 0) == (1 + 4 * 3 + 4, True)  # and a decode floor
    assert (other.forked, other.images) == (1 + 4, 0)
    assert (threads.forked, threads.images) == (1, 0)
    assert threads.batches_mb == other.batches_mb == native.batches_mb
    assert memory.predict(threads).mem_mb < memory.predict(other).mem_mb


def test_only_a_job_that_keeps_images_in_memory_holds_them() -> None:
    """Protects the resident images of a cpu_dataloader job: the memory scope holds its decoded
    images; the decode scope without baselines (no memory-scope companion) holds none."""
    s = sweep.Sweep(config("smoke", cpu_dataloader={"job_per": "setting", "baseline_runs": 0}), "d")
    images = s.num_images_for(regimes.KINDS["cpu_dataloader"])
    in_memory, decoded = dataloader_footprint(s, "memory", 2), dataloader_footprint(s, "decode", 2)
    assert (in_memory.images, in_memory.forked) == (images, 1 + 2)
    assert in_memory.pixels == 4032 * 3024  # the assumed size (no sizes given)
    assert (decoded.images, decoded.image_mb, decoded.forked) == (0, 0.0, 1 + 2)
    assert memory.predict(in_memory).mem_mb > memory.predict(decoded).mem_mb


def test_a_micro_job_counts_the_temporaries_of_its_own_transforms(paper: sweep.Sweep) -> None:
    """The working copies are the most demanding transform of the job's shard, not of the
    library: AlbumentationsX's ThinPlateSpline needs far more than a flip."""
    fitted = json.loads(memory.LIBRARY_MEMORY_FILE.read_text())
    copies = fitted["working_copies"]
    assert fitted["image_px"] >= 1024 and set(copies) >= {"albumentationsx", "pillow"}
    albx = copies["albumentationsx"]
    assert memory.working_copies("albumentationsx") == max(albx.values())
    assert memory.working_copies("albumentationsx", ["HorizontalFlip"]) == albx["HorizontalFlip"]
    assert memory.working_copies("albumentationsx", ["HorizontalFlip", "ThinPlateSpline"]) == max(
        albx["HorizontalFlip"], albx["ThinPlateSpline"]
    )
    # A transform the fit lacks counts as the library's largest; a library it lacks, as anyone's.
    assert memory.working_copies("albumentationsx", ["NotFitted"]) == max(albx.values())
    largest = max(c for found in copies.values() for c in found.values())
    assert memory.working_copies("not-fitted") == largest
    # In the plan: two micro jobs of one library at 2048 px differ by their shards' transforms.
    kind = regimes.KINDS["micro"]
    jobs = [
        j for j in paper.jobs()
        if j.rule == "micro" and j.library == "albumentationsx" and "r2048" in j.dataset
    ]  # fmt: skip
    working = {
        j.transforms: kind.memory(paper, kind, paper.wildcards_of(j)).working_mb for j in jobs
    }
    with_spline = [mb for names, mb in working.items() if "ThinPlateSpline" in names]
    without = [mb for names, mb in working.items() if "ThinPlateSpline" not in names]
    assert with_spline and without and max(without) < min(with_spline)


def test_a_training_job_counts_a_cuda_context_only_where_it_can_have_a_gpu() -> None:
    """A training job picks its device when it runs: on its cloud placement the placement's GPU
    decides; where the workflow runs it, this machine's NVIDIA driver does (host_gpu)."""
    s = sweep.Sweep(config("smoke", regimes=["cpu_dataloader", "training"]), "d")
    kind = regimes.KINDS["training"]
    w = {"machine": "m", "dataset": "d", "library": "torchvision", "workers": "2"}
    placed = "gpu" in s.config["cloud"]["regimes"].get(kind.placement, {})
    assert kind.memory(s, kind, w).gpu is placed
    cuda = policy.CUDA_CONTEXT_HOST_MB * policy.MEMORY_HEADROOM.factor
    for host in (False, True):
        s.host_gpu = host
        footprint = kind.memory(s, kind, w)
        assert footprint.gpu is host
    s.host_gpu = False
    without = memory.predict(kind.memory(s, kind, w)).mem_mb
    s.host_gpu = True
    assert memory.predict(kind.memory(s, kind, w)).mem_mb == pytest.approx(without + cuda, abs=1)


def test_the_job_sampler_sees_a_childs_peak_that_is_gone_before_the_job_ends(
    tmp_path: Path,
) -> None:
    """A child process that holds 300 MB for a second and exits: its peak is in the job's
    record although nothing holds it when the job writes its results, and the sampler removes
    its file once the sampled process has ended."""
    script = textwrap.dedent(
        """
        import os, subprocess, sys, time
        from augbench.measuring import memory_peak
        os.environ.update(memory_peak.start())
        child = "b = bytearray(300 * 2**20)\\nfor i in range(0, len(b), 4096): b[i] = 1\\n"
        subprocess.run([sys.executable, "-c", child + "import time; time.sleep(1)"], check=True)
        time.sleep(0.6)
        print(os.environ[memory_peak.FILE_ENV_VAR])
        print(memory_peak.recorded())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    name, record = done.stdout.strip().splitlines()
    peak = ast.literal_eval(record)
    assert peak["peak_rss_mb"] > 300 and peak["peak_pss_mb"] > 290, peak
    assert peak["samples"] >= 4 and peak["interval_s"] == policy.JOB_MEMORY_SAMPLE_SECONDS
    deadline = time.monotonic() + 10
    while Path(name).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(name).exists()


def test_between_reads_the_proportional_set_follows_each_read_process_resident_growth() -> None:
    """Protects the sampler's estimate between two smaps reads: a process read at (600 MB
    resident, 200 MB proportional) that has grown by 250 MB of its own pages holds 450 MB; one
    that has shrunk by 50 MB holds 50 MB less; one that has ended since holds nothing; one
    started since counts from the next read (a fork shares its parent's pages)."""
    from augbench.measuring.memory_peak import pss_between_reads

    mb = 1024
    last_read = {1: (600 * mb, 200 * mb), 2: (300 * mb, 100 * mb), 3: (400 * mb, 150 * mb)}
    now = {1: 850 * mb, 2: 250 * mb, 4: 700 * mb}  # 3 has ended, 4 is new
    assert pss_between_reads(last_read, now) == (200 + 250 + 100 - 50) * mb
    assert pss_between_reads(last_read, {pid: r for pid, (r, _) in last_read.items()}) == 450 * mb
    assert pss_between_reads({}, now) == 0


@pytest.mark.skipif(sys.platform != "linux", reason="kcmp(2) is Linux's")
def test_the_sampler_counts_an_address_space_once() -> None:
    """A command started by vfork is its parent's pages until it executes: the sampler leaves out
    a child that shares its parent's address space (kcmp), as a thread of the parent does, and
    keeps a forked child, whose pages are its own copy."""
    import threading

    from augbench.measuring import memory_peak

    me = os.getpid()
    assert memory_peak.shares_address_space(me, me)
    seen: list[bool] = []
    thread = threading.Thread(
        target=lambda: seen.append(memory_peak.shares_address_space(threading.get_native_id(), me))
    )
    thread.start()
    thread.join()
    assert seen == [True]
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        time.sleep(0.2)
        assert not memory_peak.shares_address_space(child.pid, me)
        assert child.pid in memory_peak.tree(me, skip=-1)
    finally:
        child.kill()
        child.wait()


def test_a_dataloader_worker_holds_its_most_demanding_steps_temporaries() -> None:
    """Each worker transforms one image at a time: beside its fixed private pages it holds the
    temporaries of its most demanding step (memory.working_copies) in the library's working dtype,
    on the image that step gets: a recipe's transform runs on the base crop's 224 px output, a
    crop on the whole image. A library working in float also keeps about a batch of float
    outputs per worker (what its allocator keeps of the float images each step frees)."""
    dl = {"job_per": "setting", "transforms": ["GaussianBlur"]}
    s = sweep.Sweep(config("smoke", cpu_dataloader=dl), "d")
    found = {}
    for library in ("pillow", "kornia"):
        kind = regimes.KINDS["cpu_dataloader"]
        wildcards = {"machine": "m", "dataset": "d", "library": library, "scope": "memory",
                     "workers": "2", "shard": "s000"}  # fmt: skip
        found[library] = kind.memory(s, kind, wildcards).worker_private_mb
        value = adapters.declared(library).working_value_bytes
        own = memory.working_copies(library, ["GaussianBlur"]) * value * 3 * 224**2 / 2**20
        # A batch of the recipes' 224 px float32 outputs, for the library that works in float.
        kept = s.config["cpu_dataloader"]["batch_size"] * 224**2 * 12 / 2**20 if value > 1 else 0
        assert found[library] == pytest.approx(policy.WORKER_PRIVATE_MB + own + kept)
    assert found["kornia"] > found["pillow"]  # float32 temporaries against uint8 ones


def test_a_decode_floor_process_holds_its_librarys_measured_pages() -> None:
    """A decode-floor process holds the library's measured pages (library_memory.json's
    ``floor_process``: ``private_mb`` plus ``image_copies`` decoded images of the job's largest
    input); a library the file lacks: what its loader worker holds without a transform's
    temporaries. A decode-scope job at two workers forks two of them."""
    s = sweep.Sweep(config("smoke", cpu_dataloader={"job_per": "setting"}), "d")
    fits = json.loads(memory.LIBRARY_MEMORY_FILE.read_text())["floor_process"]
    kind = regimes.KINDS["cpu_dataloader"]
    largest = max(s.sizes["d"].first(min(s.num_images_for(kind), s.dataset_images("d"))))
    assert "albumentations_mit" not in fits
    for library in ("pillow", "kornia", "albumentations_mit"):
        wildcards = {"machine": "m", "dataset": "d", "library": library, "scope": "decode",
                     "workers": "2", "shard": "s000"}  # fmt: skip
        fp = kind.memory(s, kind, wildcards)
        assert fp.floor_processes == 2
        fit = fits.get(library)
        expected = (
            fit["private_mb"] + fit["image_copies"] * largest * 3 / 2**20
            if fit else memory.loader_worker_mb(library, largest, 3, 0.0)
        )  # fmt: skip
        assert fp.floor_mb == pytest.approx(expected)
    assert memory.floor_process_mb("kornia", largest, 3) > memory.floor_process_mb("pillow", 0, 3)


def test_a_dataloader_worker_holds_its_librarys_measured_pages() -> None:
    """A forked loader worker holds the library's measured private pages
    (library_memory.json's ``loader_worker``: ``private_mb`` plus ``image_copies`` decoded images of
    the job's largest input, or its most demanding step's temporaries where those are larger);
    the row's own fork keeps policy.WORKER_PRIVATE_MB; a library the file lacks: that constant
    for its workers too. A float-working library's workers keep a batch of outputs besides."""
    s = sweep.Sweep(config("smoke", cpu_dataloader={"job_per": "setting"}), "d")
    fits = json.loads(memory.LIBRARY_MEMORY_FILE.read_text())["loader_worker"]
    kind = regimes.KINDS["cpu_dataloader"]
    largest = max(s.sizes["d"].first(min(s.num_images_for(kind), s.dataset_images("d"))))
    batch = s.config["cpu_dataloader"]["batch_size"]
    assert "albumentations_mit" not in fits
    for library in ("pillow", "kornia", "albumentations_mit"):
        wildcards = {"machine": "m", "dataset": "d", "library": library, "scope": "decode",
                     "workers": "2", "shard": "s000"}  # fmt: skip
        fp = kind.memory(s, kind, wildcards)
        floats = adapters.declared(library).working_value_bytes > 1
        kept = batch * 224**2 * 12 / 2**20 if floats else 0.0
        working = fp.worker_private_mb - policy.WORKER_PRIVATE_MB - kept
        assert working >= 0
        fit = fits.get(library)
        if fit is None:
            assert fp.loader_worker_mb == pytest.approx(fp.worker_private_mb)
            continue
        image = fit["image_copies"] * largest * 3 / 2**20
        assert fp.loader_worker_mb == pytest.approx(fit["private_mb"] + max(image, working) + kept)
