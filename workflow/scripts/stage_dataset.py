"""Rule stage_dataset: extract and validate the archive once, write manifest.json last.

A bad dataset (augbench.planning.dataset.DatasetError: no usable images, fewer usable images than
the configuration asks for, a truncated archive, ...) ends the job with one line on the terminal and
in the log, and exit status 1 (augbench.logs.redirect_to_log), before any benchmark job.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.logs import redirect_to_log
from augbench.planning.dataset import DatasetError, stage_archive
from augbench.planning.sweep import Sweep

sm = snakemake  # noqa: F821
with redirect_to_log(sm.log[0]):
    dataset = sm.config["dataset"]
    # What the configured jobs read, from the config rather than a param: a changed image count
    # must not re-stage the dataset (and so re-run every job); data.smk checks an already staged
    # dataset against it while the job graph is built.
    asked = Sweep(sm.config, sm.params.key).required_images()
    manifest = stage_archive(
        Path(sm.input.archive),
        Path(sm.output.manifest).parent,
        name=sm.params.name,
        source=sm.params.source,
        key=sm.params.key,
        asked=asked,
        allow_fewer=bool(sm.params.allow_fewer),
        add_hint="add images to the archive"
        if dataset.get("archive")
        else "raise dataset.default_images",
    )
    expected = sm.params.expected_sha256
    if expected and manifest["archive_sha256"] != expected:
        Path(sm.output.manifest).unlink()
        raise DatasetError(
            f"{sm.input.archive} changed while the workflow ran (sha256 "
            f"{manifest['archive_sha256']}, expected {expected}); run snakemake again"
        )
    if manifest["skipped_count"]:
        print(f"skipped {manifest['skipped_count']} members: {manifest['skipped_by_reason']}")
    if manifest["undecodable"]["count"]:
        bad = manifest["undecodable"]
        print(f"undecodable ({bad['count']}, first {len(bad['first'])}): {bad['first']}")
    if manifest["converted_count"]:
        print(f"converted to 8-bit RGB PNG, by source mode: {manifest['converted']}")
    fewer = manifest.get("fewer_than_configured")
    if fewer:
        note = (
            f"augbench: dataset {manifest['source']} has {fewer['usable']} usable images and the "
            f"configuration asks for {fewer['configured']}: every job uses the {fewer['usable']} "
            "(dataset.allow_fewer)"
        )
        print(note)
        print(note, file=sys.__stderr__)
    print(f"staged {manifest['file_count']} images, {manifest['total_bytes']} bytes")
