"""Rule stage_dataset: extract and validate the archive once, write manifest.json last."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.dataset import stage_archive
from augbench.logs import redirect_to_log

with redirect_to_log(snakemake.log[0]):  # noqa: F821
    manifest = stage_archive(
        Path(snakemake.input.archive),  # noqa: F821
        Path(snakemake.output.manifest).parent,  # noqa: F821
        name=snakemake.wildcards.dataset,  # noqa: F821
        source=snakemake.params.source,  # noqa: F821
    )
    print(f"staged {manifest['file_count']} images, {manifest['total_bytes']} bytes")
