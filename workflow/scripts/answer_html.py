"""Rule answer_html: the answer page as HTML (augbench.analysis.answer_html), which the
report opens on."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.analysis.answer_html import answer_fragment
from augbench.logs import redirect_to_log

with redirect_to_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    fragment = answer_fragment(Path(sm.input.page).read_text())
    out = Path(sm.output.html)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(fragment)
    tmp.replace(out)
