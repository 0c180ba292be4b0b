"""A library is its declaration (its adapter class): registering one adapter makes the library a
config name, planned in every regime of its capabilities, costed, tabled and drawn in its color,
with no other module told about it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import matplotlib.colors
import matplotlib.figure
import pandas as pd
import pytest
import yaml
from conftest import REPO
from synthetic import row

from augbench.analysis import figures, speedups
from augbench.analysis.figures import style
from augbench.planning import cost, regimes, sweep
from augbench.planning.config import deep_merge, resolve
from augbench.workload import adapters, catalog, gpu_recipes, matrix
from augbench.workload.adapters.base import CAPABILITIES, CPU_TRANSFORMS, TRAINING_FEED
from augbench.workload.adapters.pillow import PillowAdapter


class ExtraAdapter(PillowAdapter):
    """A library beside the shipped ones: Pillow's operations under another declaration."""

    name = "extralib"
    title = "ExtraLib"
    color = "#56B4E9"
    capabilities = frozenset({CPU_TRANSFORMS, TRAINING_FEED})


@pytest.fixture
def extra_library() -> Iterator[str]:
    adapters.register(ExtraAdapter)
    yield ExtraAdapter.name
    adapters.unregister(ExtraAdapter.name)


def config(**extra: object) -> dict:
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    return resolve(deep_merge(base, {"preset": "smoke", "machine": "m", **extra}), REPO)


def figure_colors(figure: matplotlib.figure.Figure) -> set[str]:
    """Every color a figure's bars, lines and markers are drawn in."""
    found: set[str] = set()
    for ax in figure.axes:
        found |= {matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches}
        found |= {matplotlib.colors.to_hex(line.get_color()) for line in ax.get_lines()}
        for collection in ax.collections:
            found |= {matplotlib.colors.to_hex(c) for c in collection.get_facecolors()}
    return found


def test_every_shipped_declaration_is_complete_and_its_capabilities_known() -> None:
    for name in adapters.names():
        declared = adapters.declared(name)
        assert declared.name == name and declared.title and declared.color, name
        assert declared.capabilities and set(declared.capabilities) <= set(CAPABILITIES), name
        assert bool(declared.gpu_randomness) == ("gpu_batches" in declared.capabilities), name
    # Each regime measures the libraries declaring its capability, and no other.
    for regime in regimes.ALL:
        for name in adapters.names():
            wanted = regime.needs in adapters.declared(name).capabilities
            assert (name in regime.libraries) == wanted, (regime.name, name)


def test_a_registered_library_is_planned_costed_tabled_and_drawn(extra_library: str) -> None:
    # A config name: the schema's library names are the declarations'.
    cfg = config(libraries=["pillow", extra_library], regimes=["micro", "cpu_dataloader"])
    assert cfg["libraries"] == ["pillow", extra_library]

    # Planned: every job kind of the regimes of its capabilities, as many jobs as Pillow's.
    plan = sweep.Sweep(cfg, "d")
    jobs = Counter((job.rule, job.library) for job in plan.jobs())
    rules = {rule for rule, _ in jobs}
    assert rules and all(jobs[(r, extra_library)] == jobs[(r, "pillow")] for r in rules), jobs
    training = sweep.Sweep(config(libraries=[extra_library], regimes=["training"]), "d")
    assert {job.library for job in training.jobs()} == {extra_library}
    kind = regimes.KINDS["micro"]
    assert extra_library in kind.wildcard_constraints()["library"].split("|")
    assert matrix.layouts_for(extra_library, ["native", "contiguous"]) == ["native"]
    assert gpu_recipes.randomness_of(extra_library) == ()
    # It counts towards the paper set like every library that transforms images on the CPU (the
    # same mappings as Pillow's: the set is unchanged).
    assert extra_library in catalog.eligibility_libraries()
    assert extra_library in catalog.direct_implementations("HorizontalFlip")

    # Costed: its jobs priced on their placements (here at an assumed rate).
    for regime in ("micro", "cpu_dataloader"):
        cfg["cloud"]["assumed_img_per_s"].setdefault(regime, {})[extra_library] = 100.0
    jobs_to_price = plan.cost_jobs()
    found, basis = cost.estimate_jobs(jobs_to_price, {}, cfg, 1.0, cost.placement_cores(cfg))
    # (A fixed amount of work, the lazy-output diagnostic, is priced from a measured run only.)
    priced = [
        job for job in jobs_to_price
        if job.library == extra_library and job.rule in regimes.KINDS
        and job.kind.cost != "whole_job"
    ]  # fmt: skip
    assert priced and all(found[job] and found[job].expected > 0 for job in priced), [
        (job.rule, basis[job]) for job in priced if not found[job]
    ]

    # Tabled: ranked against the other library in its regime's speedup table.
    tidy = pd.DataFrame(
        [
            row(library=lib, transform=t, runs=[rate, rate * 1.01, rate * 0.99])
            for lib, rate in (("pillow", 500.0), (extra_library, 900.0))
            for t in ("HorizontalFlip", "GaussianBlur")
        ]
    )
    table = speedups.compute(tidy)
    assert set(table.loc[table["library"] == extra_library, "transform"]) == {
        "HorizontalFlip",
        "GaussianBlur",
    }

    # Drawn: in its declared color, named by its name.
    assert style.library_color(extra_library) == ExtraAdapter.color
    drawn = figures.draw("throughput_micro", tidy)
    assert ExtraAdapter.color.lower() in figure_colors(drawn.figure)


def test_a_declaration_without_a_known_capability_is_refused() -> None:
    class Broken(PillowAdapter):
        name = "broken"
        capabilities = frozenset({"teleport"})

    with pytest.raises(ValueError, match="capabilities"):
        adapters.register(Broken)
    assert "broken" not in adapters.names()
