"""Read whatever results exist: result files and folders of them, from this workflow, a partial
sweep, a folder pulled from a bucket, or JSONs in the common format written by other tools.

Named files must be result files. Inside folders, JSON files that are not result files (env
markers, dataset manifests) are skipped and listed, because a pulled ``results/`` folder holds
them next to the raw results.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from augbench.analysis import tidy


@dataclass
class Collected:
    frame: pd.DataFrame
    files: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)


def _is_result_file(path: Path) -> tuple[bool, str]:
    try:
        payload = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        return False, f"not readable JSON ({exc})"
    if not isinstance(payload, dict) or not isinstance(payload.get("results"), dict):
        return False, "no 'results' object (not a result file)"
    return True, ""


def source_files(sources: list[str | Path]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Result files under ``sources``; missing sources raise naming the path."""
    files: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for source in sources:
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(f"result source {str(source)!r} does not exist")
        if path.is_file():
            ok, why = _is_result_file(path)
            if not ok:
                raise ValueError(f"{path}: {why}")
            files.append(path)
            continue
        for candidate in tidy.find_result_files([path]):
            ok, why = _is_result_file(candidate)
            (files.append(candidate) if ok else skipped.append((candidate, why)))
    if not files:
        raise ValueError(f"no result files found in {[str(s) for s in sources]}")
    return sorted(set(files)), skipped


def collect(sources: list[str | Path]) -> Collected:
    files, skipped = source_files(sources)
    return Collected(tidy.load(files), files, skipped)


def fingerprint(sources: list[str | Path]) -> list[str]:
    """'path size mtime' of every JSON under ``sources``: a rule parameter that changes when the
    results change, so re-plotting follows new files without declaring them as inputs (which
    would hand them to the benchmark rules that produce them)."""
    entries = []
    for source in sources:
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(f"result source {str(source)!r} does not exist")
        for f in tidy.find_result_files([path]):
            st = f.stat()
            entries.append(f"{f} {st.st_size} {st.st_mtime_ns}")
    return sorted(entries)
