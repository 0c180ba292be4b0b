"""A markdown summary for a README or a paper: one section per machine, regime and setting."""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd

from augbench.analysis import (
    allocator_effect,
    faults,
    lazy_outputs,
    pipelines,
    siblings,
    training,
)
from augbench.analysis.dataloader import baseline_exceptions
from augbench.analysis.diagnostics import diagnose, slow_rows
from augbench.analysis.groups import iter_groups, library_medians, library_order, winners
from augbench.policy import (
    BARE_LOOP_MIN_RATIO,
    DECODE_COMPOSITION_GOAL,
    RELATIVE_CI_TARGET,
    UNDER_LOAD_CLOCK_DROP,
    UNDER_LOAD_OTHER_CORES_FRACTION,
    UNDER_LOAD_STEAL_FRACTION,
)
from augbench.result_format import MEDIAN_THROUGHPUT
from augbench.workload import decoders


def _fmt(value: float, digits: int = 0) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:,.{digits}f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def _rows_table(
    rows: pd.DataFrame,
    fields: dict[str, str],
    header: list[str],
    cells: Callable[[pd.Series], list[str]],
) -> list[str]:
    """A table of ``rows``: first their ``fields`` (header -> field) as text, then the columns
    ``header`` filled by ``cells(row)``."""
    return _table(
        [*fields, *header],
        [[*(str(r[f]) for f in fields.values()), *cells(r)] for _, r in rows.iterrows()],
    )


# How the row lists name a result row: header -> field (diagnostics' tables).
ROW_NAME = {
    "machine": "machine",
    "setting": "group",
    "library": "library",
    "transform": "transform",
}


def _row_list(
    heading: str,
    rows: pd.DataFrame,
    header: list[str],
    cells: Callable[[pd.Series], list[str]],
    none: str,
) -> list[str]:
    """A section listing ``rows`` (named by ``ROW_NAME``, then ``header`` filled by
    ``cells(row)``), or saying ``none`` where there are none."""
    table = _rows_table(rows, ROW_NAME, header, cells) if len(rows) else [none]
    return [f"## {heading}", "", *table, ""]


def _dataset_lines(frame: pd.DataFrame) -> list[str]:
    """Which datasets the rows come from; rows of two datasets are never ranked together."""
    if "dataset" not in frame.columns:
        return []
    lines = ["Datasets (each section is one dataset):", ""]
    for key, rows in frame.groupby(frame["dataset"].fillna("unknown").astype(str), sort=True):
        info = rows.iloc[0]
        sha = str(info.get("dataset_sha256") or "")
        images = pd.to_numeric(info.get("dataset_images"), errors="coerce")
        lines.append(
            f"- `{key}`: {_fmt(images)} images"
            + (f", archive sha256 `{sha}`" if sha and sha != "nan" else "")
            + f", {len(rows)} rows"
        )
    return [*lines, ""]


def markdown(
    frame: pd.DataFrame,
    *,
    gaps: int = 5,
    title: str = "Benchmark summary",
    lazy: pd.DataFrame | None = None,
    pipeline_rows: pd.DataFrame | None = None,
    answer: list[str] | None = None,
) -> str:
    """``lazy``: the lazy-output diagnostic's table (augbench.analysis.lazy_outputs); its rows
    where materialization is over half of the measured time are listed with their numbers.
    ``answer``: the recommendation's section (augbench.analysis.recommendation), the summary's
    first: one table per machine, then every other section."""
    lines = [f"# {title}", "", *(answer or [])]
    if frame.empty:
        return "\n".join([*lines, "No result rows (so no figure is drawn).", ""])
    machines = sorted(frame["machine"].astype(str).unique())
    lines += ["## The rows", ""] if answer else []
    lines += [
        f"{len(frame)} result rows from {len(machines)} machine(s): {', '.join(machines)}. "
        "Every section is one machine, one regime and one setting; rows are never ranked across "
        "sections. Medians are medians over transforms of each row's median img/s (ok rows "
        "only); `ok/rows` is the denominator.",
        "",
    ]
    lines += _dataset_lines(frame)
    for group in iter_groups(frame):
        rows = group.rows
        win = winners(rows)
        contested = int((win["contenders"] >= 2).sum())
        lines += [f"## {group.label}", ""]
        info = rows.iloc[0]
        # A decoders-table row's ``transform`` is its decoder (augbench.analysis.decoders).
        counted = "decoders" if group.key["regime"] == decoders.REGIME else "transforms"
        lines += [
            f"{rows['transform'].nunique()} {counted}, dataset {info.get('dataset')} "
            f"({_fmt(pd.to_numeric(info.get('num_images'), errors='coerce'))} images), "
            f"processor {info.get('processor')}.",
            "",
        ]
        med = library_medians(rows).set_index("library")
        table_rows = []
        for lib in library_order(rows["library"]):
            table_rows.append(
                [
                    lib,
                    f"{int((win['winner'] == lib).sum())}/{contested}",
                    _fmt(med.loc[lib, "median_of_medians"]),
                    f"{med.loc[lib, 'ok_rows']}/{med.loc[lib, 'rows']}",
                ]
            )
        lines += _table(["library", "wins / contested", "median img/s", "ok/rows"], table_rows)
        lines.append("")
        top = win[win["winner"] != ""].nlargest(gaps, "gap")
        if len(top):
            lines += [f"Largest gaps (winner over runner-up, top {len(top)}):", ""]
            lines += _rows_table(
                top,
                {"transform": "transform", "winner": "winner"},
                ["img/s", "runner-up", "img/s", "gap"],
                lambda r: [
                    _fmt(r["winner_throughput"]),
                    str(r["runner_up"]),
                    _fmt(r["runner_up_throughput"]),
                    f"{r['gap']:.2f}x",
                ],
            )
            lines.append("")
    # A fork beside its original (Albumentations 2.0.8 and AlbumentationsX, Pillow-SIMD and
    # Pillow): the ratio of each transform's medians.
    lines += siblings.summary_lines(
        frame if pipeline_rows is None else pd.concat([frame, pipeline_rows], ignore_index=True)
    )
    flagged = diagnose(frame)
    flagged = flagged[flagged["flagged"]]
    lines += _row_list(
        "Unstable rows",
        flagged,
        ["median img/s", "why"],
        lambda r: [_fmt(r[MEDIAN_THROUGHPUT]), r["detail"]],
        "None: every ok row is within the variance and warm-up limits.",
    )
    lines += under_load_section(frame)
    lines += _baseline_section(frame)
    lines += training.summary_lines(frame)
    lines += faults.summary_lines(
        frame if pipeline_rows is None else pd.concat([frame, pipeline_rows], ignore_index=True)
    )
    # With more than one allocator setting: each setting's time against glibc's.
    lines += allocator_effect.summary_lines(frame, pipeline_rows)
    if pipeline_rows is not None:  # user pipelines: the harness check, their native sources
        lines += pipelines.summary_lines(pipeline_rows)
        lines += pipelines.native_lines(pipeline_rows)
    lines += precision_section(frame)
    lines += _row_list(
        "Early-stopped rows",
        slow_rows(frame, slowest=0),
        ["preflight img/s", "reason"],
        lambda r: [_fmt(r["throughput"], 1), str(r["reason"])],
        "None.",
    )
    if lazy is not None:
        lines += [
            "## Rows dominated by materialization (lazy-output diagnostic)",
            "",
            "Micro rows time the call and its materialization (an output that owns its memory; "
            "views are copied). Where the copy is over half of the time, the row measures the "
            "copy more than the transform:",
            "",
            *lazy_outputs.flag_lines(lazy),
            "",
        ]
    else:
        lines += [
            "## Rows dominated by materialization (lazy-output diagnostic)",
            "",
            "Not run here (config `lazy_outputs.enabled: false`, as in the default preset): the "
            "smoke and paper presets run it; a config file with `lazy_outputs: {enabled: true}` "
            "(`--configfile`) adds it to this run.",
            "",
        ]
    lines += figures_section(frame)
    return "\n".join(lines)


def figures_section(frame: pd.DataFrame) -> list[str]:
    """The figure families these rows give nothing to draw, with why (augbench.analysis.figures
    ``plan``: the same list as the figures folder's skipped.txt)."""
    from augbench.analysis import figures

    drawn, skipped = figures.plan(frame)
    lines = ["## Figures not drawn", ""]
    if not skipped:
        return [*lines, "None: every figure family has rows to draw.", ""]
    lines += [
        f"{len(drawn)} of {len(figures.NAMES)} figure families are drawn; these have no rows to "
        "show in these results (also in the figures folder's `skipped.txt`):",
        "",
        *_table(["figure", "why not"], [[name, why] for name, why in skipped]),
        "",
    ]
    return lines


def _baseline_section(frame: pd.DataFrame) -> list[str]:
    """cpu_dataloader rows that fail a baseline check (docs/cpu_dataloader.md), never hidden."""
    if not (frame["regime"] == "cpu_dataloader").any():
        return []
    lines = [
        "## DataLoader baseline checks",
        "",
        f"cpu_dataloader rows slower than the bare user loop (regime_vs_bare < "
        f"{BARE_LOOP_MIN_RATIO}; crossed out in the worker-scaling figure), and each library's "
        "cheapest recipe per decode setting whose decode composition ratio is below "
        f"{DECODE_COMPOSITION_GOAL}.",
        "",
    ]
    flagged = baseline_exceptions(frame)
    if len(flagged):
        named = ("machine", "scope", "workers", "library", "transform", "check")
        lines += _rows_table(
            flagged,
            {field: field for field in named},
            ["value", "goal"],
            lambda r: [f"{r['value']:.2f}", str(r["goal"])],
        )
    else:
        lines.append("None: every measured row passes.")
    lines.append("")
    return lines


def precision_section(frame: pd.DataFrame) -> list[str]:
    """Ok rows whose relative 95 % CI (augbench.measuring.stopping) stayed above their target: the
    engine ran out of repetitions first. Counted per regime, then listed."""
    lines = ["## Rows above the CI target", ""]
    if "relative_ci" not in frame.columns:
        return [*lines, "No row records a relative CI.", ""]
    ok = frame[frame["status"] == "ok"].copy()
    ok["relative_ci"] = pd.to_numeric(ok["relative_ci"], errors="coerce")
    target = pd.to_numeric(ok.get("relative_ci_target"), errors="coerce")
    ok["relative_ci_target"] = target.fillna(RELATIVE_CI_TARGET)
    above = ok[ok["relative_ci"] > ok["relative_ci_target"]]
    counts = []
    for regime, rows in ok.groupby(ok["regime"].astype(str), sort=True):
        n_above = int((rows["relative_ci"] > rows["relative_ci_target"]).sum())
        counts.append(
            [regime, str(len(rows)), str(n_above), str(int(rows["relative_ci"].isna().sum()))]
        )
    lines += [
        "Each ok row states the interval of its median throughput (`ci_low`, `ci_high`, at "
        "`ci_level`) and its half-width relative to the median (`relative_ci`); engines repeat "
        "until it is at most the target (`relative_ci_target`) or their maximum number of "
        "values. Rows above the target are measured but less precise than asked for; `no CI` "
        "rows have one value.",
        "",
    ]
    lines += _table(["regime", "ok rows", "above target", "no CI"], counts)
    lines.append("")
    if len(above):
        lines += _table(
            ["machine", "regime", "scope", "library", "transform", "median img/s", "relative CI",
             "target", "values"],
            [
                [
                    str(r["machine"]), str(r["regime"]), str(r.get("scope", "")),
                    str(r["library"]), str(r["transform"]), _fmt(r[MEDIAN_THROUGHPUT]),
                    f"{r['relative_ci']:.1%}", f"{r['relative_ci_target']:.0%}",
                    _fmt(pd.to_numeric(r.get("num_successful_runs"), errors="coerce")),
                ]
                for _, r in above.sort_values("relative_ci", ascending=False).iterrows()
            ],
        )  # fmt: skip
        lines.append("")
    return lines


def under_load_flags(column: pd.Series) -> pd.Series:
    """``under_load`` as True / False / None, from a frame or from its CSV (text cells)."""
    text = column.astype(str).str.strip().str.lower()
    return text.map({"true": True, "false": False}).where(text.isin(["true", "false"]), None)


def under_load_section(frame: pd.DataFrame, worst: int = 5) -> list[str]:
    """Ok rows whose job ran while other processes loaded its CPUs (augbench.measuring.quietness):
    counted per regime and library, the worst jobs with their readings; one line where there
    are none."""
    lines = ["## Rows measured under load", ""]
    flags = under_load_flags(frame["under_load"]) if "under_load" in frame.columns else None
    measured = frame["status"] == "ok"
    if flags is None or flags[measured].isna().all():
        return [*lines, "No ok row's result file records the machine's quietness.", ""]
    recorded = frame[measured & flags.notna()].assign(under_load=flags)
    loaded = recorded[recorded["under_load"] == True]  # noqa: E712 (object column)
    rule = (
        f"other processes used more than {UNDER_LOAD_OTHER_CORES_FRACTION:.1%} of the job's "
        f"cores on average, the hypervisor stole more than {UNDER_LOAD_STEAL_FRACTION:.0%} of "
        f"their time, or the fastest core's clock fell more than {UNDER_LOAD_CLOCK_DROP:.0%} "
        "from start to end"
    )
    if loaded.empty:
        return [
            *lines,
            f"None of {len(recorded)} ok rows: no job crossed a threshold ({rule}).",
            "",
        ]
    lines += [
        f"{len(loaded)} of {len(recorded)} ok rows come from jobs during which {rule} "
        '(docs/methodology.md, "Quietness"). They stay in every table and ranking, flagged '
        "by `under_load` (and `load_reason`) in `all_results.csv` and `speedups_<regime>.csv`; "
        "rerun them on a quiet machine before trusting a close ranking.",
        "",
    ]
    counts = []
    for (regime, library), rows in loaded.groupby(["regime", "library"], sort=True):
        of = recorded[(recorded["regime"] == regime) & (recorded["library"] == library)]
        counts.append([str(regime), str(library), f"{len(rows)}/{len(of)}"])
    lines += [*_table(["regime", "library", "rows under load"], counts), ""]
    other = pd.to_numeric(loaded["other_load_cores"], errors="coerce")
    jobs = (
        loaded.assign(other=other)
        .sort_values("other", ascending=False)
        .drop_duplicates("source_file")
        .head(worst)
    )
    lines += [f"Most loaded jobs (top {len(jobs)}):", ""]
    lines += _rows_table(
        jobs,
        {"machine": "machine", "regime": "regime", "scope": "scope", "library": "library"},
        ["other cores", "steal %", "why"],
        lambda r: [
            _fmt(r["other"], 2),
            _fmt(100 * pd.to_numeric(r["steal_fraction"], errors="coerce"), 1),
            str(r["load_reason"]),
        ],
    )
    return [*lines, ""]
