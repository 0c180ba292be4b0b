"""The offline GPU node kit reads its libraries from their declarations (augbench.gpu_node.
libraries): which libraries the node runs, what the bundle brings for them and pins by which
lock, what it does not bring and why, and which rows each mode plans. A library registered with
``gpu_batches`` joins the kit's plan without a change to the kit; one without it does not, nor
does one whose packages the node lacks and cannot be brought."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from conftest import REPO

from augbench.gpu_node import bundle, libraries, plan, summary
from augbench.planning import provision
from augbench.workload import adapters
from augbench.workload.adapters.base import CPU_TRANSFORMS, GPU_BATCHES, TRAINING_FEED
from augbench.workload.adapters.pillow import PillowAdapter
from augbench.workload.adapters.torchvision import TorchvisionAdapter


class GpuLibAdapter(TorchvisionAdapter):
    """A library beside the shipped ones that transforms batches on the GPU (torchvision's
    operations), with one package of its own that the node lacks and whose wheel travels."""

    name = "gpulib"
    title = "GpuLib"
    color = "#117733"
    capabilities = frozenset({GPU_BATCHES})
    gpu_randomness = ("per-sample",)
    distribution = "gpulib"
    node_packages: ClassVar[dict[str, str]] = {"gpulib": "gpulib", "torchvision": "torchvision"}
    node_unfit = ""


class CpuLibAdapter(PillowAdapter):
    """A library without the GPU capability."""

    name = "cpulib"
    title = "CpuLib"
    color = "#999933"
    capabilities = frozenset({CPU_TRANSFORMS, TRAINING_FEED})


class StuckAdapter(TorchvisionAdapter):
    """A GPU library whose package the node lacks and whose wheels cannot travel."""

    name = "stucklib"
    title = "StuckLib"
    color = "#AA4499"
    capabilities = frozenset({GPU_BATCHES})
    gpu_randomness = ("per-sample",)
    distribution = "stucklib"
    node_packages: ClassVar[dict[str, str]] = {"stucklib": "stucklib"}
    node_unfit = "its wheels carry a CUDA stack of their own"


@pytest.fixture
def registered() -> Iterator[None]:
    for cls in (GpuLibAdapter, CpuLibAdapter, StuckAdapter):
        adapters.register(cls)
    yield
    for cls in (GpuLibAdapter, CpuLibAdapter, StuckAdapter):
        adapters.unregister(cls.name)


def test_the_shipped_declarations_give_the_kits_libraries_and_packages() -> None:
    assert libraries.libraries() == ("torchvision", "kornia")
    assert libraries.training_library() == "torchvision"
    assert libraries.calibration_pairs() == (
        ("torchvision", "torchvision~b", None),
        ("torchvision", "kornia", "Identity"),
    )
    # Kornia's packages and the engines' tqdm, pinned by Kornia's lock; torchvision is the node's.
    assert libraries.requirements() == [
        ("kornia", "envs/kornia.txt"),
        ("kornia-rs", "envs/kornia.txt"),
        ("tqdm", "envs/kornia.txt"),
    ]
    reqs = bundle.requirements(REPO, [])
    assert [r.name for r in reqs] == ["kornia", "kornia-rs", "tqdm", "pip"]
    missing = libraries.not_brought()
    assert list(missing) == ["nvidia-dali-cuda120", "albumentationsx", "pyperf"]
    assert "1.1 GB" in missing["nvidia-dali-cuda120"]
    assert (
        missing["albumentationsx"]
        == "not imported by the GPU regimes' torchvision and Kornia paths"
    )
    facts = libraries.facts()
    assert set(facts["modules"]) == {
        "torch",
        "torchvision",
        "kornia",
        "kornia_rs",
        "tqdm",
        "numpy",
        "PIL",
    }
    assert set(facts["key_packages"]) == {
        "torch", "torchvision", "kornia", "kornia-rs", "numpy", "pillow", "tqdm"
    }  # fmt: skip
    assert {"kornia", "kornia-rs", "tqdm", "nvidia-dali-cuda120"} <= set(facts["distributions"])
    assert [lib["name"] for lib in facts["libraries"]] == ["torchvision", "kornia"]
    assert facts["cpu_reference"] == "AlbumentationsX"


def test_a_registered_gpu_library_joins_the_kits_plan_and_bundle_without_a_change_to_the_kit(
    registered: None, tmp_path: Path
) -> None:
    # Which libraries: the GPU one that can travel joins after the shipped ones; the one without
    # the capability does not, nor the GPU one whose packages cannot come.
    assert libraries.libraries() == ("torchvision", "kornia", "gpulib")
    missing = libraries.not_brought()
    assert missing["stucklib"] == StuckAdapter.node_unfit
    assert "gpulib" not in missing and "cpulib" not in missing
    # What the bundle brings: its package, pinned by its own lock (torchvision is the node's).
    assert ("gpulib", "envs/gpulib.txt") in libraries.requirements()
    repo = tmp_path / "repo"
    (repo / "envs").mkdir(parents=True)
    shutil.copyfile(REPO / "envs/kornia.txt", repo / "envs/kornia.txt")
    (repo / "envs/gpulib.txt").write_text("gpulib==1.2.3    # via -r envs/gpulib.in\n")
    reqs = {r.name: r for r in bundle.requirements(repo, [])}
    assert (reqs["gpulib"].version, reqs["gpulib"].pinned_by) == ("1.2.3", "envs/gpulib.txt")
    assert reqs["tqdm"].pinned_by == "envs/kornia.txt"
    assert "stucklib" not in reqs and "cpulib" not in reqs
    assert provision.lock_pins(repo / "envs/gpulib.txt") == {"gpulib": "1.2.3"}
    facts = libraries.facts()
    assert "gpulib" in facts["modules"] and "gpulib" in facts["key_packages"]
    assert "stucklib" not in facts["modules"]

    # Which rows: its GPU DataLoader and pipeline jobs in the node run, after the shipped ones.
    node = plan.mode_plan("node", REPO)
    planned = {j["library"] for jobs in node["steps"].values() for j in jobs}
    assert planned == {"torchvision", "kornia", "gpulib"}
    gpu = node["steps"]["gpu_dataloader"]
    assert {j["wildcards"]["scope"] for j in gpu if j["library"] == "gpulib"} == {
        "memory", "decode"
    }  # fmt: skip
    assert [j["label"] for j in gpu[:3]] == [
        "torchvision memory w0 per-sample", "kornia memory w0 per-sample",
        "gpulib memory w0 per-sample",
    ]  # fmt: skip
    assert any(j["library"] == "gpulib" for j in node["steps"]["pipeline"])
    # The supply and the training stay the first library's.
    assert {j["library"] for j in node["steps"]["training"]} == {"torchvision"}
    # The A/A pairs: paired with the reference on Identity in the calibration mode (the dry mode
    # runs the reference pair only).
    calibration = plan.mode_plan("calibration", REPO)["steps"]["calibration"]
    recipes = {
        j["library"]: j["engine"][j["engine"].index("--transforms") + 1] for j in calibration
    }
    assert set(recipes) == {"torchvision", "torchvision~b", "kornia", "gpulib"}
    assert recipes["gpulib"] == "Identity"
    dry = plan.mode_plan("dry", REPO)["steps"]
    assert {(j["library"], j["wildcards"]["scope"]) for j in dry["gpu_dataloader"]} == {
        ("kornia", "decode"), ("gpulib", "decode")
    }  # fmt: skip
    assert {j["library"] for j in dry["calibration"]} == {"torchvision", "torchvision~b"}
    for steps in (node["steps"], dry):
        assert not {j["library"] for jobs in steps.values() for j in jobs} & {"cpulib", "stucklib"}
    # The summary names it and orders its columns after the shipped libraries'.
    facts_doc = summary.summarize(
        mode="node", machine="m", elapsed_s=1.0, budget_s=570.0, steps=[],
        results=tmp_path / "none", environment={"packages": {"gpulib": "1.2.3"}}, bundle={},
        plan={}, node=facts,
    )  # fmt: skip
    assert [lib["name"] for lib in facts_doc["libraries"]] == ["torchvision", "kornia", "gpulib"]
    assert "GpuLib 1.2.3" in summary.markdown({**facts_doc, "bundle": {
        "python_version": "3.12", "built_at": "x", "built_from": None}})  # fmt: skip


def test_without_a_library_that_can_run_there_the_bundle_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(libraries, "NODE_PROVIDES", ("numpy",))  # neither torchvision nor Kornia?
    assert libraries.libraries() == ("kornia",)  # Kornia's wheels travel; torchvision's do not
    monkeypatch.setattr(adapters.declared("kornia"), "node_unfit", "no wheels")
    assert libraries.libraries() == ()
    with pytest.raises(bundle.BundleError, match="no library declares gpu_batches"):
        bundle.requirements(REPO, [])
