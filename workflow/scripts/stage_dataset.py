"""Rule stage_dataset: extract and validate the archive once, write manifest.json last."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.dataset import DatasetError, stage_archive
from augbench.logs import redirect_to_log

with redirect_to_log(snakemake.log[0]):  # noqa: F821
    manifest = stage_archive(
        Path(snakemake.input.archive),  # noqa: F821
        Path(snakemake.output.manifest).parent,  # noqa: F821
        name=snakemake.params.name,  # noqa: F821
        source=snakemake.params.source,  # noqa: F821
        key=snakemake.params.key,  # noqa: F821
    )
    expected = snakemake.params.expected_sha256  # noqa: F821
    if expected and manifest["archive_sha256"] != expected:
        Path(snakemake.output.manifest).unlink()  # noqa: F821
        raise DatasetError(
            f"{snakemake.input.archive} changed while the workflow ran (sha256 "  # noqa: F821
            f"{manifest['archive_sha256']}, expected {expected}); run snakemake again"
        )
    if manifest["skipped_count"]:
        print(f"skipped {manifest['skipped_count']} members: {manifest['skipped_by_reason']}")
    print(f"staged {manifest['file_count']} images, {manifest['total_bytes']} bytes")
