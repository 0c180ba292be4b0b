"""What users read speaks of the product only: no work-ticket numbers, no account of who else was
using the machine while something was measured, no pointers to notes a user cannot see.

Scanned: README.md, docs/**/*.md (and the figure captions, docs/**/*.txt), config/README.md,
config/**/*.yaml, tools/README.md, workflow/report/*.rst, the string literals (docstrings
included) of augbench/**/*.py and workflow/**/*.py, and the non-comment lines of
workflow/rules/*.smk and the Snakefile. Data files (docs/results/**/*.tsv, *.csv) are not read.
Measurement conditions stay allowed when phrased as facts about the machine ("load average 6-13
from other processes").

The pages (README.md, docs/*.md, config/README.md; not the run write-ups under docs/results/) are a
reference: they say how things work now, so they carry no chronology either (times of day, "later
that day", "the next check", "as it is now"). A measurement's date, commit and command belong to
its run folder, docs/results/<machine>/<run>/README.md, which the pages link.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# (pattern, why it is not product text); matched case-insensitively.
FORBIDDEN: list[tuple[str, str]] = [
    (r"\bissues?\s*#?\d+", "a work-ticket number"),
    (r"\bissue's\b", "a work ticket"),
    (r"\b(this|that|open|closed|every)\s+issues?\b", "a work ticket"),
    # No product text needs the word: the POSIX process session in the code is an identifier
    # (start_new_session, not matched) and the test fixtures' pytest session is not scanned. A
    # cloud SDK's session object named in a message would need a narrow ALLOWED entry.
    (r"\bsessions?\b", "a development session"),
    (r"\bproject notes\b", "notes a user cannot see"),
    (r"\barchitecture notes\b", "notes a user cannot see"),
    (r"\bdesign notes\b", "notes a user cannot see"),
    # upper case only: docs/architecture.md is the user's page on the design
    (r"(?-i:\bARCHITECTURE\.md\b)", "notes a user cannot see"),
    (r"\.\./shared/", "notes a user cannot see"),
    (r"\b(was|were|been|be|is|not)\s+lent\b", "who had a device"),
    (r"\blent to\b", "who had a device"),
    # quoted, as a status message: the summary's "Figures not drawn" section is product text
    (r"\"not drawn\"", "the development device status"),
    (r"\bother tenants\b", "who else was on the machine (say: other processes)"),
    (r"\b(work|branch|branches)\s+merged\b", "development history"),
    (r"\bmerge of the branches\b", "development history"),
    (r"\bmain (at|of) the (start|end)\b", "development history"),
    (r"\bthe final main\b", "development history"),
    (r"\blead's\b", "who did what"),
    (r"\bhelper\s+(session|agent)s?\b", "who did what"),
    # A short commit hash as a history marker ("main (c7d9926)", "fresh clone of d98dfdd"): seven
    # hex characters, at least one digit and one letter, not part of a longer key
    # (dataset keys such as default-300-4ca7b80edec6 are twelve).
    (r"(?<![\w-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7}(?![\w-])", "a commit as history"),
]

# Narrow exceptions: (file glob relative to the repo, pattern the matched text must fully match,
# why it is product text). Keep each one justified.
ALLOWED: list[tuple[str, str, str]] = []

COMPILED = [(re.compile(p, re.IGNORECASE), why) for p, why in FORBIDDEN]

# (pattern, why it is chronology); matched case-insensitively in the reference pages only.
CHRONOLOGY: list[tuple[str, str]] = [
    (r"\b\d{1,2}:\d{2}(\s*[-\u2013]\s*\d{1,2}:\d{2})?\s*UTC\b", "a time of day"),
    (r"\b\d{1,2}:\d{2}\s*[-\u2013]\s*\d{1,2}:\d{2}\b", "a time of day"),
    (r"\b(at|from|until|by|before|after)\s+\d{1,2}:\d{2}\b", "a time of day"),
    (r"\b(later|earlier)\s+(that|the same|this)\s+(day|morning|evening|hour)\b", "chronology"),
    (r"\b(that|this|the same|a quiet|a busy|in a quiet|the)\s+hour\b", "chronology"),
    (r"\b(earlier|later)\s+today\b", "chronology"),
    (r"\b(yesterday|the next day|the day before)\b", "chronology"),
    (r"\bhalf an hour later\b", "chronology"),
    (r"\b(hours|minutes|a day|days) later\b", "chronology"),
    (r"\b(that|the same|the next|next|the previous) (morning|evening|night|day)\b", "chronology"),
    (r"\b(a little|a few hours|minutes)\s+(earlier|later)\b", "chronology"),
    (r"\bthe (next|previous|last|first|second|third) check\b", "a run-by-run account"),
    (r"\bas it is now\b", "chronology"),
    (r"\b(run|ran|measured|checked) again later\b", "a run-by-run account"),
    (r"\bthe same two commands again\b", "a run-by-run account"),
]

CHRONOLOGY_COMPILED = [(re.compile(p, re.IGNORECASE), why) for p, why in CHRONOLOGY]
CHRONOLOGY_GLOBS = ["README.md", "docs/*.md", "config/README.md"]

TEXT_GLOBS = [
    "README.md",
    "docs/**/*.md",
    "docs/**/*.txt",
    "config/README.md",
    "config/**/*.yaml",
    "tools/README.md",
    "workflow/report/*.rst",
]
PYTHON_GLOBS = ["augbench/**/*.py", "workflow/**/*.py"]
SNAKEMAKE_GLOBS = ["workflow/rules/*.smk", "Snakefile"]


def _files(globs: list[str]) -> list[Path]:
    found: set[Path] = set()
    for pattern in globs:
        found.update(p for p in REPO.glob(pattern) if p.is_file())
    return sorted(found)


def _text_lines(path: Path) -> Iterator[tuple[int, str]]:
    yield from enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)


def _python_strings(path: Path) -> Iterator[tuple[int, str]]:
    """Every string literal (f-string parts included), one entry per source line it spans."""
    source = path.read_text(encoding="utf-8")
    string_types = {tokenize.STRING}
    for name in ("FSTRING_MIDDLE", "FSTRING_START", "FSTRING_END"):
        if hasattr(tokenize, name):
            string_types.add(getattr(tokenize, name))
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in string_types:
            for offset, line in enumerate(token.string.splitlines()):
                yield token.start[0] + offset, line


def _snakemake_lines(path: Path) -> Iterator[tuple[int, str]]:
    for number, line in _text_lines(path):
        if not line.lstrip().startswith("#"):
            yield number, line


def _allowed(relative: str, matched: str) -> bool:
    return any(
        Path(relative).match(glob) and re.fullmatch(pattern, matched, re.IGNORECASE)
        for glob, pattern, _ in ALLOWED
    )


def violations_in(
    lines: Iterator[tuple[int, str]],
    relative: str,
    patterns: list[tuple[re.Pattern[str], str]] = COMPILED,
) -> list[str]:
    """Each line is searched together with the start of the next one, so a phrase wrapped over
    two lines of a paragraph ("issue" / "11") is found; a match is reported at the line where it
    starts."""
    numbered = list(lines)
    found = []
    for index, (number, line) in enumerate(numbered):
        following = numbered[index + 1][1].lstrip(" \t#>*-") if index + 1 < len(numbered) else ""
        joined = f"{line} {following}"
        for regex, why in patterns:
            for match in regex.finditer(joined):
                if match.start() < len(line) and not _allowed(relative, match.group(0)):
                    found.append(f"{relative}:{number}: {match.group(0)!r} ({why})")
    return found


def all_violations() -> list[str]:
    found = []
    sources = [
        (_files(TEXT_GLOBS), _text_lines),
        (_files(PYTHON_GLOBS), _python_strings),
        (_files(SNAKEMAKE_GLOBS), _snakemake_lines),
    ]
    for files, reader in sources:
        for path in files:
            found += violations_in(reader(path), str(path.relative_to(REPO)))
    return found


def test_user_facing_text_has_no_development_process_words() -> None:
    found = all_violations()
    assert not found, "development-process words in user-facing text:\n" + "\n".join(found)


def chronology_violations() -> list[str]:
    found = []
    for path in _files(CHRONOLOGY_GLOBS):
        relative = str(path.relative_to(REPO))
        found += violations_in(_text_lines(path), relative, CHRONOLOGY_COMPILED)
    return found


def test_reference_pages_carry_no_chronology() -> None:
    found = chronology_violations()
    assert not found, (
        "chronology in a reference page (a run's account belongs in its folder under "
        "docs/results/<machine>/<run>/README.md):\n" + "\n".join(found)
    )


def test_the_chronology_scan_covers_the_pages_and_not_the_run_folders() -> None:
    names = {str(p.relative_to(REPO)) for p in _files(CHRONOLOGY_GLOBS)}
    assert {"README.md", "docs/training.md", "docs/cloud.md", "config/README.md"} <= names
    assert not any(name.startswith("docs/results/") for name in names)


@pytest.mark.parametrize(
    "text",
    [
        "rows timed 2026-11-24 01:09\u201301:11 UTC",
        "the suite took 10 min at 21:04 UTC",
        "and 13 min 13.1 s at 22:04 with one unit test more",
        "Later the same day (15:48-16:01, same VM)",
        "the same commands, later that day",
        "the VM slower that hour",
        "The earlier misses owed much to the hour",
        "measured earlier today",
        "the next check shows what moves these loaders",
        "with the engine as it is now",
        "then 2 more rounds, half an hour later",
        "A torchvision-only pair a little earlier",
        "the same two commands again",
        "the same check, a few hours later",
        "measured the same morning",
        "on the next day the VM was slower",
    ],
)
def test_planted_chronology_is_found(text: str) -> None:
    assert violations_in(iter([(1, text)]), "docs/example.md", CHRONOLOGY_COMPILED)


@pytest.mark.parametrize(
    "text",
    [
        "the default run took 3 min 47 s on amd-epyc-2c",
        "measured on amd-epyc-2c, 2026-11-26: docs/results/amd-epyc-2c/default-run/",
        "a 16:9 frame",
        "run the same command again with --rerun-incomplete",
        "the next run tries the build again",
        "results of earlier runs are never touched",
        "an hour of VM time",
    ],
)
def test_reference_text_passes_the_chronology_check(text: str) -> None:
    assert not violations_in(iter([(1, text)]), "docs/example.md", CHRONOLOGY_COMPILED)


def test_the_scan_covers_the_documents() -> None:
    names = {str(p.relative_to(REPO)) for p in _files(TEXT_GLOBS)}
    assert {"README.md", "docs/run_time.md", "docs/cpu_dataloader.md", "config/README.md"} <= names
    assert _files(PYTHON_GLOBS) and _files(SNAKEMAKE_GLOBS)


@pytest.mark.parametrize(
    "text",
    [
        "This is the table issue 11 asks for",
        "after the issues 11/18/19 work",
        "see issue #28",
        "while five other sessions ran benchmarks",
        "the machine was never idle this session",
        "plausibility reference in the project notes",
        "per the architecture notes",
        "the team's shared ARCHITECTURE notes",
        "see ../shared/ARCHITECTURE.md",
        "no many-core machine was lent",
        'the status said "not drawn" every time',
        "then wall-clock rates measure the other tenants",
        "after the issue 11 and 19 work merged",
        "main at the start of the session (c7d9926)",
        "fresh clone of d98dfdd",
    ],
)
def test_a_planted_violation_is_found(text: str) -> None:
    assert violations_in(iter([(1, text)]), "docs/example.md")


def test_a_violation_wrapped_over_two_lines_is_found() -> None:
    lines = [(7, "This is the table the work on issue"), (8, "# 11 asks for.")]
    assert violations_in(iter(lines), "config/x.yaml") == [
        "config/x.yaml:7: 'issue 11' (a work-ticket number)"
    ]


@pytest.mark.parametrize(
    "text",
    [
        "measured on amd-epyc-2c, load average 6-13 from other processes on the machine",
        "dataset default-300-4ca7b80edec6, archive sha256 304af8704cbf66976d942cce02fc1840df",
        "the figure families not drawn because the results have no rows for them",
        "the merged config, validated against the schema",
        "colour #1f77b4",
        'the summary\'s "Figures not drawn" section',
        "design in docs/architecture.md",
    ],
)
def test_product_text_passes(text: str) -> None:
    assert not violations_in(iter([(1, text)]), "docs/example.md")


def test_code_strings_are_scanned_and_comments_are_not(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        'x = 1  # a comment may cite issue 11\nprint(f"see the project notes for {x}")\n'
        'MSG = """first line\nas issue #28 said"""\n'
    )
    rules = tmp_path / "r.smk"
    rules.write_text('# issue 11, a comment\nrule a:\n    message: "per issue 12"\n')
    assert violations_in(_python_strings(module), "m.py") == [
        "m.py:2: 'project notes' (notes a user cannot see)",
        "m.py:4: 'issue #28' (a work-ticket number)",
    ]
    assert violations_in(_snakemake_lines(rules), "r.smk") == [
        "r.smk:3: 'issue 12' (a work-ticket number)"
    ]
