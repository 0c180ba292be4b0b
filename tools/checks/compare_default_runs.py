"""Do two default runs give the same answer? The answer page's rows and margins, run against run.

    python tools/checks/compare_default_runs.py RUN_A RUN_B [--out compare_default_runs.csv]

RUN_A and RUN_B are each a run's ``results/`` folder or a committed run folder. From the tidy
pipeline rows where the folder has them (tables/pipeline_results.csv, pipeline_results.csv,
all_results.csv), both runs rank the setting the answer page ranks
(augbench.analysis.recommendation: the end-to-end DataLoader rows at the largest worker count
measured ok, else the next setting) and the tool computes every median over processes with its
interval and achieved level (augbench.analysis.runs.process_interval) and every margin
(augbench.analysis.speedups.margin_fields: augbench.decision). A folder with only the answer's
table (recommendation.csv, tables/recommendation.csv) is read as the page wrote it: each
library's interval where the table lists it (its ``libraries`` column; older tables: the winner's
interval and the runner-up's rate), the winner's margin and verdict (older tables' "tie" is "no
clear winner", "undecided" is "not decided").

Per pipeline x library it prints and writes (``--out``, CSV, ``kind`` = ``row``) both medians with
their intervals and levels, and per pipeline (``kind`` = ``margin``) each run's winner over its
runner-up with the margin's interval and verdict. The checks, each a column and a line at the
end:

1. ``level_ok``: every ranked row's interval reaches policy.DECISION_LEVEL in both runs;
2. ``margin_decided``: every margin of 1.3x or more in both runs is decided, with the same winner;
3. ``no_contradiction``: the two runs never decide different winners, and no winner one run
   decided is decided the other way in the other run (the same two libraries' margin there,
   where the other run has their rows);
4. ``repeats``: every ranked row is within 15 % of the other run's, or each run's median lies in
   the other's interval.

Exit status 0 when all four hold, 1 when one fails, 2 for input it cannot read (one line).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from augbench import decision  # noqa: E402
from augbench.analysis import recommendation, runs, speedups  # noqa: E402
from augbench.analysis.cells import decoded, is_true  # noqa: E402
from augbench.analysis.groups import read_table  # noqa: E402
from augbench.analysis.pipelines import pipeline_rows  # noqa: E402

# Where a run's tidy pipeline rows are, first found wins.
TABLES = (
    "tables/pipeline_results.csv",
    "pipeline_results.csv",
    "all_results.csv",
    "tables/all_results.csv",
)
ANSWER_TABLES = ("tables/recommendation.csv", "recommendation.csv")
MARGIN = 1.3
MARGIN_FIELDS = ("margin", "margin_low", "margin_high", "margin_level", "verdict")
REPEAT_WITHIN = 0.15
KEYS = ("machine", "dataset", "pipeline")
CHECKS = ("level_ok", "margin_decided", "no_contradiction", "repeats")
COLUMNS = (
    "kind",
    *KEYS,
    "library",
    "setting",
    *(f"{side}_{c}" for side in "ab" for c in ("median", "low", "high", "level", "processes")),
    "a_under_load",
    "b_under_load",
    "b_over_a",
    "level_ok",
    "repeats",
    *(
        f"{side}_{c}"
        for side in "ab"
        for c in ("winner", "runner_up", "margin", "margin_low", "margin_high", "margin_level")
    ),
    "a_verdict",
    "b_verdict",
    "a_note",
    "b_note",
    "margin_decided",
    "no_contradiction",
    "why",
)


class BadRun(ValueError):
    """A run folder without pipeline rows or an answer table."""


# A run as the comparison needs it, per (machine, dataset, pipeline): the ranked setting, each
# library's interval, the winner's margin, and the ranked rows themselves where the folder has them.
View = dict[tuple[str, ...], dict[str, Any]]
OLD_VERDICTS = {"tie": decision.NO_CLEAR_WINNER, "undecided": decision.NOT_DECIDED}


def _found(run: Path, names: tuple[str, ...]) -> Path | None:
    return next((run / n for n in names if (run / n).is_file()), None)


def load(run: Path) -> View:
    """The run's view: from its tidy pipeline rows where it has them, else its answer table."""
    if not run.is_dir():
        raise BadRun(f"{run}: not a folder")
    path = _found(run, TABLES)
    if path is not None:
        rows = read_table(path)
        if len(rows) and "pipeline" in rows.columns and rows["pipeline"].notna().any():
            return from_rows(pipeline_rows(rows))
    answer = _found(run, ANSWER_TABLES)
    if answer is None:
        raise BadRun(
            f"{run}: no tidy pipeline rows ({', '.join(TABLES)}) and no answer table "
            f"({', '.join(ANSWER_TABLES)})"
        )
    view = from_answer(pd.read_csv(answer))
    if not view:
        raise BadRun(f"{answer}: no measured pipeline")
    return view


def _interval(row: pd.Series) -> dict[str, Any]:
    found = runs.process_interval(row)
    return {
        "median": found.median,
        "low": found.low,
        "high": found.high,
        "level": found.level,
        "processes": found.n,
        "under_load": is_true(row.get("under_load")),
    }


def from_rows(rows: pd.DataFrame) -> View:
    view: View = {}
    for key, part in rows.groupby(list(KEYS), sort=True):
        regime, ok, _ = recommendation._ranked_rows(recommendation._one_allocator(part))
        if not regime:
            continue
        ok = ok.drop_duplicates("library").set_index("library", drop=False)
        libraries = {str(lib): _interval(row) for lib, row in ok.iterrows()}
        order = sorted(libraries, key=lambda lib: _sort_key(libraries[lib]["median"]))
        margin: dict[str, Any] = {"winner": order[0], "runner_up": None}
        if len(order) > 1:
            found = speedups.margin_fields(ok.loc[order[0]], ok.loc[order[1]])
            margin.update(
                runner_up=order[1],
                **{k: found[k] for k in MARGIN_FIELDS},
                note=found["margin_note"],
            )
        view[tuple(str(k) for k in key)] = {
            "setting": recommendation._setting_label(regime, ok.iloc[0]),
            "libraries": libraries,
            "margin": margin,
            "rows": ok,
        }
    return view


def _sort_key(median: float) -> float:
    return -median if isinstance(median, float) and math.isfinite(median) else math.inf


def _num(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def from_answer(answer: pd.DataFrame) -> View:
    view: View = {}
    measured = answer[answer["status"] == "measured"] if "status" in answer else answer
    for _, r in measured.iterrows():
        key = tuple(str(r.get(k)) for k in KEYS)
        libraries: dict[str, dict[str, Any]] = {}
        listed = decoded(r.get("libraries"))
        if isinstance(listed, dict):
            for lib, cell in listed.items():
                if isinstance(cell, dict) and cell.get("status", "ok") == "ok":
                    libraries[str(lib)] = {
                        "median": _num(cell.get("img_per_s")),
                        "low": _num(cell.get("low")),
                        "high": _num(cell.get("high")),
                        "level": _num(cell.get("level")),
                        "processes": cell.get("processes"),
                        "under_load": bool(cell.get("under_load")),
                    }
        for prefix, name in (("", "library"), ("runner_up_", "runner_up")):
            lib = r.get(name)
            if isinstance(lib, str) and lib and lib not in libraries:
                rate = "img_per_s" if not prefix else "runner_up_img_per_s"
                libraries[lib] = {
                    "median": _num(r.get(rate)),
                    "low": _num(r.get(f"{prefix}ci_low")),
                    "high": _num(r.get(f"{prefix}ci_high")),
                    "level": _num(r.get(f"{prefix}ci_level")),
                    "processes": r.get(f"{prefix}processes"),
                    "under_load": is_true(r.get(f"{prefix}under_load")),
                }
        said = r.get("verdict") if isinstance(r.get("verdict"), str) else r.get("versus_runner_up")
        said = OLD_VERDICTS.get(str(said), str(said)) if isinstance(said, str) else ""
        runner = r.get("runner_up") if isinstance(r.get("runner_up"), str) else None
        margin = {"winner": r.get("library"), "runner_up": runner}
        if runner:
            margin.update({k: _num(r.get(k)) for k in MARGIN_FIELDS if k != "verdict"})
            margin.update(verdict=said, note="")
        view[key] = {
            "setting": str(r.get("setting") or ""),
            "libraries": libraries,
            "margin": margin,
            "rows": None,
        }
    return view


def _repeats(a: dict[str, Any] | None, b: dict[str, Any] | None) -> tuple[bool, str]:
    if a is None or b is None:
        return False, f"measured in run {'b' if a is None else 'a'} only"
    ratio = b["median"] / a["median"] if a["median"] > 0 else math.nan
    if abs(ratio - 1.0) <= REPEAT_WITHIN:
        return True, ""
    if a["low"] <= b["median"] <= a["high"] and b["low"] <= a["median"] <= b["high"]:
        return True, ""
    return False, f"b / a = {ratio:.2f}, each outside the other's interval"


def _reverse_decided(rows: pd.DataFrame | None, winner: str, runner: str) -> bool:
    """Whether ``rows`` decide ``runner`` faster than ``winner``."""
    if rows is None or winner not in rows.index or runner not in rows.index:
        return False
    verdict = speedups.margin_fields(rows.loc[winner], rows.loc[runner])["verdict"]
    return verdict == decision.SLOWER


def _decided(margin: dict[str, Any]) -> bool:
    return margin.get("verdict") == decision.FASTER


EMPTY: dict[str, Any] = {"setting": "", "libraries": {}, "margin": {"winner": None}, "rows": None}


def compare(run_a: Path, run_b: Path) -> pd.DataFrame:
    a_view, b_view = load(run_a), load(run_b)
    records: list[dict[str, Any]] = []
    for key in sorted(set(a_view) | set(b_view)):
        where = dict(zip(KEYS, key, strict=True))
        a_run, b_run = a_view.get(key, EMPTY), b_view.get(key, EMPTY)
        same_setting = a_run["setting"] == b_run["setting"]
        setting = a_run["setting"] if same_setting else (
            f"a: {a_run['setting']}; b: {b_run['setting']}"
        )  # fmt: skip
        for library in sorted(set(a_run["libraries"]) | set(b_run["libraries"])):
            a, b = a_run["libraries"].get(library), b_run["libraries"].get(library)
            repeats, why = _repeats(a, b)
            levels = [x["level"] if x else None for x in (a, b)]
            level_ok = all(lv is not None and lv >= decision.DECISION_LEVEL for lv in levels)
            records.append(
                {
                    "kind": "row",
                    **where,
                    "library": library,
                    "setting": setting,
                    **{f"a_{k}": v for k, v in (a or {}).items()},
                    **{f"b_{k}": v for k, v in (b or {}).items()},
                    "b_over_a": b["median"] / a["median"] if a and b and a["median"] else math.nan,
                    "level_ok": level_ok,
                    "repeats": repeats,
                    "why": why,
                }
            )
        a_m, b_m = a_run["margin"], b_run["margin"]
        record: dict[str, Any] = {"kind": "margin", **where, "setting": setting}
        for side, m in (("a", a_m), ("b", b_m)):
            record.update({f"{side}_{k}": v for k, v in m.items()})
        why = []
        sizes = [_num(m.get("margin")) for m in (a_m, b_m)]
        decided = True
        if all(size >= MARGIN for size in sizes):
            decided = a_m["winner"] == b_m["winner"] and _decided(a_m) and _decided(b_m)
            if not decided:
                why.append(
                    f"{MARGIN}x or more in both runs, but a: {a_m['winner']} {a_m['verdict']}, "
                    f"b: {b_m['winner']} {b_m['verdict']}"
                )
        contradiction = False
        if _decided(a_m) and _decided(b_m) and a_m["winner"] != b_m["winner"]:
            contradiction = True
            why.append(f"decided winners differ: a {a_m['winner']}, b {b_m['winner']}")
        for m, other, name in ((a_m, b_run["rows"], "b"), (b_m, a_run["rows"], "a")):
            if _decided(m) and _reverse_decided(other, m["winner"], m["runner_up"]):
                contradiction = True
                why.append(f"run {name} decides {m['runner_up']} faster than {m['winner']}")
        record.update(
            margin_decided=decided, no_contradiction=not contradiction, why="; ".join(why)
        )
        records.append(record)
    return pd.DataFrame.from_records(records, columns=list(COLUMNS))


def verdicts(table: pd.DataFrame) -> dict[str, bool]:
    """Each check of the module doc over the whole comparison."""
    rows, margins = table[table["kind"] == "row"], table[table["kind"] == "margin"]
    return {
        "level_ok": bool(rows["level_ok"].astype(bool).all()),
        "repeats": bool(rows["repeats"].astype(bool).all()),
        "margin_decided": bool(margins["margin_decided"].astype(bool).all()),
        "no_contradiction": bool(margins["no_contradiction"].astype(bool).all()),
    }


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.3g}" if abs(value) < 10 else f"{value:.0f}"
    return "" if value is None else str(value)


def _span(r: pd.Series, side: str) -> str:
    median, low, high, level = (r[f"{side}_{c}"] for c in ("median", "low", "high", "level"))
    if _fmt(median) == "":
        return f"{side} not ranked"
    if _fmt(low) == "" or _fmt(high) == "":
        return f"{side} {_fmt(median)} (no interval)"
    return f"{side} {_fmt(median)} [{_fmt(low)}, {_fmt(high)}] at {_fmt(level)}"


def report(table: pd.DataFrame, held: dict[str, bool]) -> list[str]:
    lines = []
    for _, r in table.iterrows():
        where = f"{r['machine']} {r['pipeline']}"
        if r["kind"] == "row":
            lines.append(
                f"{where} {r['library']}: {_span(r, 'a')}, {_span(r, 'b')}"
                f"{'' if r['repeats'] else ' -- does not repeat: ' + r['why']}"
            )
            continue
        said = []
        for side in "ab":
            if isinstance(r[f"{side}_runner_up"], str) and r[f"{side}_runner_up"]:
                said.append(
                    f"{side} {r[f'{side}_winner']} {_fmt(r[f'{side}_margin'])}x "
                    f"{r[f'{side}_runner_up']} [{_fmt(r[f'{side}_margin_low'])}, "
                    f"{_fmt(r[f'{side}_margin_high'])}] at {_fmt(r[f'{side}_margin_level'])}: "
                    f"{r[f'{side}_verdict']}"
                )
            else:
                said.append(f"{side} {r[f'{side}_winner'] or 'nothing ranked'} (only library)")
        lines.append(f"{where} margin: {'; '.join(said)}{' -- ' + r['why'] if r['why'] else ''}")
    for check in CHECKS:
        lines.append(f"{check}: {'holds' if held[check] else 'FAILS'}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    parser.add_argument("--out", type=Path, default=Path("compare_default_runs.csv"))
    args = parser.parse_args(argv)
    try:
        table = compare(args.run_a, args.run_b)
    except BadRun as err:
        print(f"compare_default_runs: {err}", file=sys.stderr)
        return 2
    held = verdicts(table)
    print("\n".join(report(table, held)))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    print(f"wrote {args.out}")
    return 0 if all(held.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
