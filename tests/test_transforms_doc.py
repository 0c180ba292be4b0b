"""docs/transforms.md is generated from the catalog and the adapters, and committed up to date."""

from __future__ import annotations

from pathlib import Path

from augbench.workload import adapters, catalog
from augbench.workload.transforms_doc import DOC_PATH, render

REPO = Path(__file__).resolve().parents[1]


def test_committed_doc_is_up_to_date() -> None:
    committed = (REPO / DOC_PATH).read_text()
    assert committed == render(), (
        "docs/transforms.md is stale: "
        "run `uv run python tools/maintenance/render_transforms_doc.py`"
    )


def test_doc_lists_every_row_with_its_mapping_or_reason() -> None:
    text = render()
    for name in catalog.CANDIDATES:
        assert f"### {name}\n" in text
    for lib in catalog.eligibility_libraries():
        adapter = adapters.get(lib)
        for name in catalog.CANDIDATES:
            mapping = adapter.mappings.get(name)
            needle = mapping.call if mapping else adapter.unsupported_reason(name)
            assert needle.replace("|", "\\|") in text, (lib, name)
