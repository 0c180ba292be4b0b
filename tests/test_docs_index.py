"""The front door stays a front door: the README is a front page of at most 150 lines, and
docs/README.md links every page of docs/ (a page nobody can reach from the index is not a
reference)."""

from __future__ import annotations

import re

from conftest import REPO

README_MAX_LINES = 150
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_is_a_front_page():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"
    text = "\n".join(lines)
    for heading in ("## Run it", "## Cloud and SLURM"):
        assert heading in text, f"README.md lacks {heading!r}"
    assert "docs/README.md" in text, "README.md does not link the docs index"


def test_the_docs_index_links_every_page():
    index = REPO / "docs" / "README.md"
    linked = {(index.parent / target).resolve() for target in LINK.findall(index.read_text())}
    pages = {page.resolve() for page in (REPO / "docs").glob("*.md") if page.name != "README.md"}
    missing = sorted(page.name for page in pages - linked)
    assert not missing, f"docs/README.md does not link: {', '.join(missing)}"
