"""The package's modules import each other without a circle and only downward through the layers
of what runs where (augbench/__init__.py): no module reaches itself through its
imports, counting the ones inside functions and those only for type checking (a circle hidden in
a function is still two modules that each need the other); no module is longer than a maintainer
reads whole; each regime family is one module."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "augbench"


def module_names() -> dict[str, Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imported(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """The package's modules that ``name`` imports anywhere in its file (``from a import b``
    counts ``a.b`` where that is a module, else ``a``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_package_has_no_import_circle() -> None:
    modules = module_names()
    graph = {name: set(imported(name, path, modules)) for name, path in modules.items()}
    # Imports at the top, inside a function, and of a module from its package are all edges.
    assert "augbench.planning.regimes" in graph["augbench.planning.sweep"]
    assert "augbench.workload.pipeline_sources.configured" in graph["augbench.planning.config"]
    assert (
        "augbench.measuring.engines.dataloader.decode_floor"
        in graph["augbench.measuring.engines.dataloader.timing"]
    )
    assert circles(graph) == []


# What runs where, bottom to top: a module imports only its own layer and those below it.
SHARED = {
    "augbench", "augbench.cuda_env", "augbench.decision", "augbench.intervals", "augbench.logs",
    "augbench.paired", "augbench.paths", "augbench.policy", "augbench.result_format",
    "augbench.results", "augbench.yaml_files",
}  # fmt: skip
LAYERS = (
    "shared",
    "augbench.workload",
    "augbench.measuring",
    "augbench.planning",
    "augbench.analysis",
    "entry",  # augbench.workflow_inputs (the rules' questions) and augbench.gpu_node (the kit)
)
ENTRY = ("augbench.workflow_inputs", "augbench.gpu_node")


def layer(name: str) -> int:
    if name in SHARED:
        return 0
    if name.startswith(ENTRY):
        return len(LAYERS) - 1
    for index, package in enumerate(LAYERS[1:-1], start=1):
        if name == package or name.startswith(f"{package}."):
            return index
    raise AssertionError(f"{name} belongs to no layer: put it in a package of {LAYERS}")


def test_imports_run_only_downward_through_the_layers() -> None:
    modules = module_names()
    upward = sorted(
        f"{name} ({LAYERS[layer(name)]}) imports {target} ({LAYERS[layer(target)]})"
        for name, path in modules.items()
        for target in imported(name, path, modules)
        if layer(target) > layer(name)
    )
    assert upward == []
    # Code that runs in a library's env reaches nothing of the driver's planning or analysis.
    assert layer("augbench.measuring.engines.skeleton") < layer("augbench.planning.cost")


def test_a_circle_hidden_in_a_function_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


# A module a maintainer reads whole; the rules' shared glue stays glue.
MODULE_MAX_LINES = 800
COMMON_SMK_MAX_LINES = 300


def test_no_module_is_over_its_size_limit() -> None:
    """The package's modules, the tools and the rules' scripts."""
    modules = [
        *PACKAGE.rglob("*.py"),
        *(REPO / "tools").rglob("*.py"),
        *(REPO / "workflow" / "scripts").rglob("*.py"),
    ]
    over = {
        str(path.relative_to(REPO)): lines
        for path in sorted(modules)
        if (lines := len(path.read_text().splitlines())) > MODULE_MAX_LINES
    }
    assert over == {}, f"modules over {MODULE_MAX_LINES} lines: {over}"
    common = REPO / "workflow" / "rules" / "common.smk"
    assert len(common.read_text().splitlines()) <= COMMON_SMK_MAX_LINES


def test_each_regime_family_is_one_module_holding_its_declaration_and_pricing() -> None:
    from augbench.planning import regimes

    for regime in regimes.ALL:
        homes = {kind.jobs.__module__ for kind in regime.kinds}
        homes |= {type(kind.pricing).__module__ for kind in regime.kinds}
        homes |= {kind.memory.__module__ for kind in regime.kinds} - {
            "augbench.planning.regimes.records"
        }
        homes -= {"augbench.planning.regimes.pricing"}  # the shared wall-time pricing
        assert len(homes) == 1 and homes.pop().startswith("augbench.planning.regimes."), regime.name
