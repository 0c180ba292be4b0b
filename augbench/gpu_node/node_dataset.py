"""Build and stage the workflow's embedded default dataset on a node without scikit-image.

The default archive is cut from scikit-image's sample photographs (augbench.planning.dataset); the
bundle carries those files (``dataset-sources/``), and this module points the builder at them, so
the node gets the workflow's own default dataset under the workflow's own key, with no network.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

# What rule stage_dataset records as the default archive's source (workflow/rules/data.smk).
DEFAULT_SOURCE = "embedded default (scikit-image photographs)"


def build_and_stage(sources: Path, work: Path, name: str, images: int, key: str) -> Path:
    """The archive of ``images`` default images built from ``sources`` and staged under
    ``work``/``key``; returns the staged manifest."""
    from augbench.planning import dataset

    # The node has no scikit-image: the builder reads its photographs through this one function.
    dataset.skimage_data_dir = lambda: Path(sources)
    archive = work / "archives" / f"{name}.tar"
    dataset.build_default_archive(archive, images, seed=0)
    target = work / key
    dataset.stage_archive(archive, target, name=name, source=DEFAULT_SOURCE, key=key)
    return target / "manifest.json"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sources", type=Path, required=True, help="the bundle's dataset-sources/")
    p.add_argument("--work", type=Path, required=True, help="where the archive and images go")
    p.add_argument("--name", required=True)
    p.add_argument("--images", type=int, required=True)
    p.add_argument("--key", required=True, help="the dataset key the plan's result paths use")
    args = p.parse_args(argv)
    start = time.perf_counter()
    manifest = build_and_stage(args.sources, args.work, args.name, args.images, args.key)
    doc = json.loads(manifest.read_text())
    print(
        f"dataset | {doc['key']}: {doc['file_count']} images, "
        f"{doc['total_bytes'] / 2**20:.1f} MiB, in {time.perf_counter() - start:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
