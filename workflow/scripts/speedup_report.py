"""Rule speedup_report: the speedup tables as one HTML page for `snakemake --report`."""

import html
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.analysis import speedups
from augbench.analysis.groups import iter_groups, read_table
from augbench.logs import redirect_to_log
from augbench.result_format import MEDIAN_THROUGHPUT

STYLE = """<style>
body { font-family: sans-serif; font-size: 13px; margin: 1em; }
table { border-collapse: collapse; margin-bottom: 1.5em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
td:nth-child(1), td:nth-child(2), td:nth-child(3) { text-align: left; }
</style>"""

with redirect_to_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    frame = read_table(sm.input.table)
    parts = [
        "<html><head><meta charset='utf-8'>",
        STYLE,
        "</head><body>",
        "<h1>Speedups within one machine, regime and setting</h1>",
    ]
    groups = list(iter_groups(frame))
    if not groups:
        parts.append("<p>No result rows.</p>")
    for group in groups:
        table = speedups.compute(group.rows)
        view = table[
            [
                "transform",
                "library",
                "status",
                MEDIAN_THROUGHPUT,
                "std_throughput",
                "fastest_other_library",
                "speedup",
                "speedup_low",
                "speedup_high",
                "reason",
            ]
        ]
        parts.append(f"<h2>{html.escape(group.label)}</h2>")
        parts.append(view.to_html(index=False, na_rep="N/A", float_format=lambda v: f"{v:,.2f}"))
    parts.append("</body></html>")
    Path(sm.output.html).write_text("\n".join(parts))
    print(f"{len(groups)} speedup tables")
