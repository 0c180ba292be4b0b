"""Read whatever results exist: result files and folders of them, from this workflow, a partial
sweep, a folder pulled from a bucket, or JSONs in the common format written by other tools
(augbench.result_format reads them: the schema, its versions).

Named files must be result files. Inside folders, JSON files that are not result files (env
markers, dataset manifests) are skipped and listed, because a pulled ``results/`` folder holds
them next to the raw results; a file that cannot be read (broken or truncated JSON, a result file
that breaks the result schema, one whose rows cannot be read) is skipped too, counted and named
with its first field at fault (``Collected.unreadable``), and the other files are still read.
Sources without any result file raise ``NoResultFiles`` saying what they hold.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import pandas as pd

from augbench.analysis import tidy
from augbench.result_format import RESULTS, ResultFormatError


class NoResultFiles(ValueError):
    """The sources hold no readable result file."""


@dataclass
class Collected:
    frame: pd.DataFrame
    files: list[Path] = field(default_factory=list)
    # JSON files that are not result files (env markers, dataset manifests): expected in a
    # pulled results/ folder.
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    # Files that look broken: not readable as JSON, or a result file whose rows cannot be read.
    unreadable: list[tuple[Path, str]] = field(default_factory=list)


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _check(path: Path) -> tuple[str, str]:
    """("ok" | "not_result" | "unreadable", why) for one JSON file: a file with a 'results'
    object is a result file, and unreadable where it breaks the result schema
    (augbench.result_format: the first field at fault) or its rows cannot be read."""
    try:
        payload = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return "unreadable", f"not readable JSON ({_one_line(exc)})"
    if not isinstance(payload, dict) or not isinstance(payload.get(RESULTS), dict):
        return "not_result", f"no {RESULTS!r} object"
    try:
        tidy.rows_from_file(path)
    except ResultFormatError as exc:
        return "unreadable", f"not a valid result file ({_one_line(exc).removeprefix(f'{path}: ')})"
    except Exception as exc:  # any failure to read its rows: skip the file and name it
        return "unreadable", f"result rows not readable ({type(exc).__name__}: {_one_line(exc)})"
    return "ok", ""


def _is_result_file(path: Path) -> tuple[bool, str]:
    kind, why = _check(path)
    return kind == "ok", why


def source_files(
    sources: list[str | Path],
) -> tuple[list[Path], list[tuple[Path, str]], list[tuple[Path, str]]]:
    """(result files, JSON files that are not result files, unreadable files) under ``sources``;
    a missing source raises naming the path, a named file must be a readable result file."""
    files: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    unreadable: list[tuple[Path, str]] = []
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
            kind, why = _check(candidate)
            if kind == "ok":
                files.append(candidate)
            else:
                (skipped if kind == "not_result" else unreadable).append((candidate, why))
    if not files:
        raise NoResultFiles(_nothing_found(sources, skipped, unreadable))
    return sorted(set(files)), skipped, unreadable


def _nothing_found(
    sources: list[str | Path],
    skipped: list[tuple[Path, str]],
    unreadable: list[tuple[Path, str]],
) -> str:
    where = ", ".join(repr(str(s)) for s in sources)
    if not skipped and not unreadable:
        return f"no result files in {where}: no JSON files there"
    parts = []
    if unreadable:
        parts.append(f"{len(unreadable)} unreadable ({describe(unreadable)})")
    if skipped:
        parts.append(f"{len(skipped)} not a result file ({describe(skipped)})")
    total = len(skipped) + len(unreadable)
    return f"no result files in {where}: of its {total} JSON file(s), " + " and ".join(parts)


def describe(entries: list[tuple[Path, str]], limit: int = 3) -> str:
    """'path: why; ...' of the first ``limit`` entries, then how many more."""
    text = "; ".join(f"{path}: {why}" for path, why in entries[:limit])
    if len(entries) > limit:
        text += f"; and {len(entries) - limit} more"
    return text


def collect(sources: list[str | Path], warn: TextIO | None = None) -> Collected:
    """Every readable result file under ``sources`` in one tidy frame; with ``warn``, one line
    there per unreadable file skipped (its path and why: the first field at fault)."""
    files, skipped, unreadable = source_files(sources)
    for path, why in unreadable if warn is not None else []:
        print(f"augbench: skipped unreadable result file {path}: {why}", file=warn)
    return Collected(tidy.load(files), files, skipped, unreadable)


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
