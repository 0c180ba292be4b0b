"""Rule build_default_archive: the embedded default dataset as a deterministic .tar."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.logs import redirect_to_log
from augbench.planning.dataset import build_default_archive

with redirect_to_log(snakemake.log[0]):  # noqa: F821
    info = build_default_archive(
        Path(snakemake.output.archive),  # noqa: F821
        num_images=int(snakemake.wildcards.n),  # noqa: F821
        seed=int(snakemake.params.seed),  # noqa: F821
    )
    print(info)
