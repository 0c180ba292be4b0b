"""The result files of one machine that are on disk: what the tables are made from.

A run's tables hold every result of its machine on disk (every regime, dataset, setting and shard
measured so far), not only the jobs its config plans: a run of one regime keeps the others' rows,
and the tables built from them are rebuilt together. `snakemake --until figures` (and `snakemake
figures`) makes the tables and figures from these files alone and plans no measurement.

A file on disk that the run does not plan is an input of the tables where no rule of the run can
write it (another dataset, a regime the run does not measure: a plain file, as the planned ones),
and a param where one can (a setting or library the configured regime no longer measures): its
path, and its size and mtime as a fingerprint. Snakemake hands an input to the rule that can
produce it, which would re-measure it when a setting or the engine's code changed. Which files are
which depends on the datasets and regimes configured, not on which of them were measured last:
switching a config back and forth rebuilds no table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from augbench import paths

# Where each role's result files sit: (folder, pattern below <folder>/<machine>/).
# results/raw/<machine>/<dataset>/<regime>/<library>/<file>.json and the pipelines' alike;
# results/analysis/lazy_outputs/<machine>/<dataset>/<library>.json.
LAYOUT = {
    "results": (paths.RAW_ROOT, "*/*/*/*.json"),
    "pipelines": (paths.PIPELINE_RAW_ROOT, "*/*/*/*.json"),
    "diagnostic": (paths.LAZY_ROOT, "*/*.json"),
}


def files(role: str, machine: str, base: Path = Path(".")) -> list[str]:
    """Every result file of ``role`` for ``machine`` below ``base``, as paths relative to it."""
    folder, pattern = LAYOUT[role]
    root = base / folder / machine
    if not root.is_dir():
        return []
    return sorted(str(p.relative_to(base)) for p in root.glob(pattern) if p.is_file())


def regime_of(path: str) -> str | None:
    """The regime folder of a raw result path (results/raw/<machine>/<dataset>/<regime>/...)."""
    parts = Path(path).parts
    return parts[4] if len(parts) > 5 and parts[:2] == ("results", "raw") else None


def dataset_and_folder(role: str, path: str) -> tuple[str, str]:
    """(dataset key, the folder below it: a regime, or a library's file for the diagnostic) of a
    result path of ``role``."""
    depth = len(Path(LAYOUT[role][0]).parts)
    parts = Path(path).parts
    return parts[depth + 1], parts[depth + 2]


def regimes_of(paths: Iterable[str]) -> set[str]:
    return {r for r in map(regime_of, paths) if r}


def state(paths: Iterable[str]) -> list[str]:
    """'path size mtime' of each file: a rule param that changes when a result changes."""
    out = []
    for path in paths:
        try:
            st = Path(path).stat()
        except OSError:
            continue
        out.append(f"{path} {st.st_size} {st.st_mtime_ns}")
    return out


def missing_summary(missing: Iterable[str], limit: int = 6) -> str:
    """'micro: 3 (kornia, pillow), cpu_dataloader: 2 (...)': the planned result files not on
    disk, by the folder of their regime and library."""
    by_regime: Counter[str] = Counter()
    libraries: dict[str, set[str]] = {}
    for path in missing:
        group, library = _group(Path(path))
        by_regime[group] += 1
        libraries.setdefault(group, set()).add(library)
    shown = []
    for regime, count in by_regime.most_common(limit):
        names = ", ".join(sorted(libraries[regime]))
        shown.append(f"{regime}: {count} ({names})")
    if len(by_regime) > limit:
        shown.append(f"and {len(by_regime) - limit} more")
    return "; ".join(shown)


def _group(path: Path) -> tuple[str, str]:
    """(what was measured, library) of a result path of any role."""
    parts = path.parts
    if "lazy_outputs" in parts:
        return "lazy_outputs", path.stem
    if len(parts) < 3:
        return str(path), ""
    prefix = "pipeline " if "pipelines" in parts else ""
    return prefix + parts[-3], parts[-2]
