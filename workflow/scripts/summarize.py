"""Markdown summary, variance/warm-up diagnostics and the slow-row listing of a tidy table.

As rule `summary` (Snakemake script) or from the command line:

    python workflow/scripts/summarize.py RESULTS... [--summary out.md] [--diagnostics out.csv]
        [--slow out.csv] [--slowest 5]

RESULTS are tidy tables (all_results.csv), result JSON files or folders of them.
"""

import argparse
import sys
from pathlib import Path

# Under Snakemake the script runs from a copy in .snakemake/scripts; scriptdir is the original.
if "snakemake" in globals():
    _SCRIPTS = Path(snakemake.scriptdir)  # noqa: F821
else:
    _SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(_SCRIPTS.parents[1]))

from augbench.analysis import collect, diagnostics, summary
from augbench.analysis.groups import read_table
from augbench.results import write_table_atomic


def load(paths: list[str]):
    import pandas as pd

    tables = [read_table(p) for p in paths if p.endswith(".csv")]
    others = [p for p in paths if not p.endswith(".csv")]
    if others:
        tables.append(collect.collect(others, warn=sys.stderr).frame)
    return pd.concat(tables, ignore_index=True) if len(tables) > 1 else tables[0]


def write(
    frame,
    summary_md: str | None,
    diag_csv: str | None,
    slow_csv: str | None,
    slowest: int,
    lazy_csv: str | None = None,
    starvation_csv: str | None = None,
    pipelines_csv: str | None = None,
    recommendation_csv: str | None = None,
) -> None:
    diag = diagnostics.diagnose(frame)
    slow = diagnostics.slow_rows(frame, slowest=slowest)
    lazy = None
    if lazy_csv:
        import pandas as pd

        lazy = pd.read_csv(lazy_csv)
    pipeline_rows = read_table(pipelines_csv) if pipelines_csv else None
    answer = None
    if recommendation_csv:
        from augbench.analysis import recommendation

        answer = recommendation.markdown(read_table(recommendation_csv))
    text = summary.markdown(frame, lazy=lazy, pipeline_rows=pipeline_rows, answer=answer)
    if starvation_csv:
        import pandas as pd

        from augbench.analysis import starvation
        from augbench.planning.starvation_model import FED_DEFINITION

        # "Fed" is defined once: by the training section where the summary has one.
        section = starvation.markdown(
            pd.read_csv(starvation_csv), define=FED_DEFINITION not in text
        )
        text += "\n" + "\n".join(section) + "\n"
    if summary_md:
        Path(summary_md).write_text(text)
    else:
        print(text)
    if diag_csv:
        write_table_atomic(diag, diag_csv)
    if slow_csv:
        write_table_atomic(slow, slow_csv)
    early = int((slow["kind"] == "early_stopped").sum())
    print(f"{int(diag['flagged'].sum())} flagged rows, {early} early-stopped rows", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="+")
    parser.add_argument("--summary", help="markdown file (default: stdout)")
    parser.add_argument("--diagnostics", help="CSV of ok rows with variance/warm-up flags")
    parser.add_argument("--slow", help="CSV of early-stopped rows and the slowest ok rows")
    parser.add_argument("--slowest", type=int, default=5, help="ok rows listed per regime")
    parser.add_argument("--lazy", help="lazy-output diagnostic CSV (its flags are listed)")
    args = parser.parse_args(argv)
    try:
        frame = load(args.results)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    write(frame, args.summary, args.diagnostics, args.slow, args.slowest, args.lazy)
    return 0


if "snakemake" in globals():
    from augbench.logs import redirect_to_log

    with redirect_to_log(snakemake.log[0]):  # noqa: F821
        sm = snakemake  # noqa: F821
        write(
            read_table(sm.input.table),
            sm.output.summary,
            sm.output.diagnostics,
            sm.output.slow,
            slowest=5,
            lazy_csv=sm.input.get("lazy"),
            starvation_csv=sm.input.get("starvation"),
            pipelines_csv=sm.input.get("pipelines"),
            recommendation_csv=sm.input.get("recommendation"),
        )
elif __name__ == "__main__":
    sys.exit(main())
