"""The lazy-output diagnostic's JSON files -> one CSV and the markdown page (flag list first).

As rule `lazy_outputs_table` (Snakemake script) or from the command line:

    python workflow/scripts/lazy_outputs_table.py results/analysis/lazy_outputs/*/*.json \
        --csv lazy_outputs.csv --markdown lazy_outputs.md
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from augbench.analysis import lazy_outputs


def write(paths: list[str], csv: str, markdown: str) -> None:
    frame = lazy_outputs.table([Path(p) for p in paths])
    frame.to_csv(csv, index=False)
    Path(markdown).write_text(lazy_outputs.markdown(frame))
    flagged = len(lazy_outputs.flagged(frame))
    print(f"{len(frame)} rows, {flagged} where materialization dominates", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="+")
    parser.add_argument("--csv", required=True)
    parser.add_argument("--markdown", required=True)
    args = parser.parse_args(argv)
    write(args.results, args.csv, args.markdown)
    return 0


if "snakemake" in globals():
    from augbench.logs import redirect_to_log

    with redirect_to_log(snakemake.log[0]):  # noqa: F821
        sm = snakemake  # noqa: F821
        write([*sm.input.results, *sm.params.present], sm.output.csv, sm.output.markdown)
elif __name__ == "__main__":
    sys.exit(main())
