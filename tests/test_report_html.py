"""The answer page's markdown as the HTML the report opens on (augbench.analysis.answer_html)."""

from __future__ import annotations

from augbench.analysis.answer_html import ANSWER_ID, answer_fragment, inline, markdown_to_html

PAGE = """\
# The answer

| pipeline | AlbumentationsX 2.0.8 | torchvision 0.23.0 | verdict |
|---|---:|:---|---|
| train_heavy | **1,204** | 474 | AlbumentationsX is 2.5x faster than torchvision |
| a \\| b | 10 | 11 | no clear winner: within 9 % |

Machine: `amd-epyc-2c` (2 cores); *median* img/s, [how to read it](docs/answer.md).
A second line of the same paragraph.

- one
- two, with `code*` and 3 < 4
"""


def test_tables_headings_paragraphs_and_lists() -> None:
    out = markdown_to_html(PAGE)
    assert out.startswith("<h1>The answer</h1>\n<table>\n<thead><tr><th>pipeline</th>")
    assert "<th>AlbumentationsX 2.0.8</th>" in out
    assert "<tr><td>train_heavy</td><td><strong>1,204</strong></td><td>474</td>" in out
    assert "<td>a | b</td><td>10</td>" in out  # an escaped pipe stays in its cell
    assert out.count("<tr>") == 3 and "---" not in out
    assert (
        "<p>Machine: <code>amd-epyc-2c</code> (2 cores); <em>median</em> img/s, "
        '<a href="docs/answer.md">how to read it</a>. A second line of the same paragraph.</p>'
    ) in out
    assert "<ul><li>one</li><li>two, with <code>code*</code> and 3 &lt; 4</li></ul>" in out


def test_text_is_escaped_and_code_is_literal() -> None:
    assert inline("<b>x</b> & y") == "&lt;b&gt;x&lt;/b&gt; &amp; y"
    assert inline("`**not bold**` **bold**") == "<code>**not bold**</code> <strong>bold</strong>"
    assert inline("2 * 3 * 4") == "2 * 3 * 4"  # a product is not italics


def test_the_fragment_is_the_answer_with_its_style() -> None:
    out = answer_fragment(PAGE)
    assert f'<div id="{ANSWER_ID}">' in out and out.rstrip().endswith("</div>")
    assert "<style>" in out and "max-width: none" in out
