"""The answer page as HTML, for the first screen of `snakemake --report`.

The answer is markdown (results/analysis/recommendation.md, augbench.analysis.recommendation).
Snakemake's report shows a markdown file as raw text, and its first screen is the workflow
description (workflow/report/workflow.rst), which includes this fragment: so the report opens on
the answer's tables. Only what the answer page writes is rendered: headings, pipe tables,
paragraphs, bullet lists, and inline code, bold, italics and links. Stdlib only.
"""

from __future__ import annotations

import html
import re

# The id the report's first screen and its test look for.
ANSWER_ID = "augbench-answer"
# The table header's background: the screenshot test finds the table on the first screen by it.
HEADER_RGB = (219, 231, 245)
# The table's rules: the test finds the header's frame on screen by it (a table cut off at the
# screen's edge has none there).
BORDER_RGB = (156, 163, 175)

_STYLE = f"""<meta charset="utf-8">
<style>
/* The report centres its first screen and puts the workflow description in a narrow column:
   the answer starts at the top left, takes the width the rule graph leaves, and scrolls sideways
   where its table is wider still. */
.justify-center:has(#{ANSWER_ID}) {{ justify-content: flex-start; align-items: flex-start; }}
.py-2:has(#{ANSWER_ID}) {{ flex: 1 1 0; min-width: 0; }}
.prose:has(#{ANSWER_ID}) {{ max-width: none; }}
#{ANSWER_ID} {{ max-width: 90rem; margin-bottom: 1.5rem; overflow-x: auto; }}
#{ANSWER_ID} table {{ border-collapse: collapse; font-size: 0.8rem; margin: 0.5rem 0; }}
#{ANSWER_ID} th, #{ANSWER_ID} td {{
  border: 1px solid rgb{BORDER_RGB}; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top;
}}
#{ANSWER_ID} th {{ background: rgb{HEADER_RGB}; }}
#{ANSWER_ID} p, #{ANSWER_ID} li {{ font-size: 0.8rem; }}
#{ANSWER_ID} code::before, #{ANSWER_ID} code::after {{ content: none; }}
</style>"""

_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_HEADING = re.compile(r"(#{1,6})\s+(.*)")
_DELIMITER = re.compile(r"\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?")
_BULLET = re.compile(r"[-*]\s+(.*)")


def inline(text: str) -> str:
    """One line of markdown text as HTML: escaped, with code spans, bold, italics and links."""
    spans: list[str] = []

    def keep(match: re.Match[str]) -> str:
        spans.append(f"<code>{html.escape(match.group(1), quote=False)}</code>")
        return f"\0{len(spans) - 1}\0"

    out = html.escape(_CODE.sub(keep, text), quote=False)
    out = _LINK.sub(lambda m: f'<a href="{html.escape(m.group(2))}">{m.group(1)}</a>', out)
    out = _BOLD.sub(r"<strong>\1</strong>", out)
    out = _ITALIC.sub(r"<em>\1</em>", out)
    return re.sub("\0(\\d+)\0", lambda m: spans[int(m.group(1))], out)


def _cells(line: str) -> list[str]:
    line = line.strip()
    line = line[1:] if line.startswith("|") else line
    line = line[:-1] if line.endswith("|") and not line.endswith("\\|") else line
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line)]


def _table(lines: list[str]) -> str:
    head, body = _cells(lines[0]), [_cells(line) for line in lines[2:]]
    rows = ["<tr>" + "".join(f"<th>{inline(c)}</th>" for c in head) + "</tr>"]
    rows += ["<tr>" + "".join(f"<td>{inline(c)}</td>" for c in row) + "</tr>" for row in body]
    return (
        "<table>\n<thead>"
        + rows[0]
        + "</thead>\n<tbody>\n"
        + "\n".join(rows[1:])
        + "\n</tbody>\n</table>"
    )


def markdown_to_html(text: str) -> str:
    """The answer page's markdown as an HTML fragment (blocks in order; blank lines split them)."""
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif heading := _HEADING.fullmatch(line.strip()):
            level = len(heading.group(1))
            out.append(f"<h{level}>{inline(heading.group(2))}</h{level}>")
            i += 1
        elif "|" in line and i + 1 < len(lines) and _DELIMITER.fullmatch(lines[i + 1].strip()):
            end = i + 2
            while end < len(lines) and lines[end].strip().startswith("|"):
                end += 1
            out.append(_table(lines[i:end]))
            i = end
        elif _BULLET.fullmatch(line.strip()):
            items = []
            while i < len(lines) and (bullet := _BULLET.fullmatch(lines[i].strip())):
                items.append(bullet.group(1))
                i += 1
                while i < len(lines) and lines[i].startswith("  ") and lines[i].strip():
                    items[-1] += " " + lines[i].strip()
                    i += 1
            out.append("<ul>" + "".join(f"<li>{inline(item)}</li>" for item in items) + "</ul>")
        else:
            para = []
            while i < len(lines) and lines[i].strip() and not _starts_block(lines, i):
                para.append(lines[i].strip())
                i += 1
            out.append(f"<p>{inline(' '.join(para))}</p>")
    return "\n".join(out)


def _starts_block(lines: list[str], i: int) -> bool:
    line = lines[i].strip()
    table = "|" in line and i + 1 < len(lines) and _DELIMITER.fullmatch(lines[i + 1].strip())
    return bool(_HEADING.fullmatch(line) or _BULLET.fullmatch(line) or table)


def answer_fragment(markdown: str) -> str:
    """The fragment the report's first screen includes: the answer page, styled to be read."""
    return f'{_STYLE}\n<div id="{ANSWER_ID}">\n{markdown_to_html(markdown)}\n</div>\n'
