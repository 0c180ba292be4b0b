"""The docs' commands run and the files they cite exist.

- Every ``snakemake`` command in a code block of README.md, docs/*.md, config/README.md and
  tools/README.md is dry-run (``-n``) as written, in a fresh working directory, and must plan
  without error (slow: a few seconds each, run concurrently). Backslash continuations are joined;
  whatever precedes ``snakemake`` on its line (``.uv/bin/uv run --locked``, ``uv run``,
  ``/usr/bin/time ...``, ``VAR=value``) and follows it after ``&&``, ``;``, ``|`` or ``#`` is
  dropped. Shell variables are expanded by bash from the block's own plain assignments, or from
  ``VARIABLES``; ``-d``/``--directory`` is the test's working directory; ``--configfile`` paths
  are read from the repository, as when the command is typed in the checkout. Commands that need
  the cloud (the googlebatch executor or profile, ``gs://``) are not dry-run, naming why.
- A dry run does not check what a real run needs: Snakemake refuses a local run without cores
  ("cores have to be specified for local execution") and a cluster or cloud run without a job
  limit only when it would execute. So a command whose dry run plans no measurement and no env
  build (``snakemake cost``, ``plots`` on the fixture results, ``--lint``) is also run as
  written, without ``-n``, and must exit 0; every other command that would execute jobs,
  the cloud ones included, is read by Snakemake's own command-line parser (profiles applied, as
  typed in the checkout) and must give a local run its cores (``--cores``, ``-c``, ``-j`` or a
  profile) and any other executor its job limit.
- Every repository path the same files cite (in backticks, in code blocks, or as a relative link)
  exists. Run outputs (``results/``, ``logs/``, ``benchmarks/``, ``.snakemake/``) and
  placeholders (``<name>``, ``{x}``, ``$VAR``, ``...``) are exempt; a glob must match a file.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import snakemake_runner
from conftest import OFFLINE_ENV, REPO

from augbench.planning import regimes

DOCS = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    REPO / "config" / "README.md",
    REPO / "tools" / "README.md",
]
EXTERNAL_RESULT = REPO / "tests" / "fixtures" / "external-results" / "pillow_micro_results.json"
# A file AlbumentationsX's A.save writes (what the workflow reads of one before any job).
A_SAVE_FILE = """\
__version__: 2.0.0
transform:
  __class_fullname__: Compose
  p: 1.0
  transforms:
  - {__class_fullname__: HorizontalFlip, p: 0.5}
"""
# The user's own files the docs' examples name, created in the working directory of every dry run
# (path -> text). A torchvision module (`my_transforms:train_tf`) is imported only by its job.
USER_FILES = {
    "my_albx.yaml": A_SAVE_FILE,
    "pulled/results/raw/pillow_micro_results.json": EXTERNAL_RESULT.read_text(),
    "other/pillow_micro_results.json": EXTERNAL_RESULT.read_text(),
    "docs/results/gpu-node/results/raw/pillow_micro_results.json": EXTERNAL_RESULT.read_text(),
}
# Shell variables a block sets from a command's output, and the value the test gives them.
VARIABLES = {"M": "gpu-node"}  # docs/gpu_regimes.md: the GPU node's machine label
CLOUD_ONLY = {
    "--executor googlebatch": "runs on Google Batch",
    "profiles/googlebatch": "the cloud profile (Google Batch executor, a gs:// bucket)",
    "gs://": "a gs:// bucket",
}
EXEMPT_ROOTS = {"results", "logs", "benchmarks", ".snakemake"}
SETUP_RULES = {"build_default_archive", "build_env", "stage_dataset", "resolve_pipeline"}


@dataclass(frozen=True)
class DocCommand:
    where: str  # file:line
    line: str  # the snakemake command as the docs write it (continuations joined)
    assignments: tuple[str, ...]  # the block's plain shell assignments before it

    def skip_reason(self) -> str | None:
        return next((why for mark, why in CLOUD_ONLY.items() if mark in self.line), None)


def _segments(line: str) -> list[str]:
    """``line`` cut at unquoted ``&&``, ``||``, ``;`` and ``|``, and at an unquoted ``#`` that
    starts a word (a comment)."""
    out, current, quote, i = [], "", "", 0
    while i < len(line):
        char = line[i]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (not current or current[-1].isspace()):
            break
        elif char in ";|&":
            out.append(current)
            current = ""
            i += 2 if line[i : i + 2] in ("&&", "||") else 1
            continue
        current += char
        i += 1
    return [s.strip() for s in [*out, current] if s.strip()]


_ASSIGNMENT = re.compile(r"(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=")


def _is_assignment(segment: str) -> bool:
    """``NAME=value`` (or ``export NAME=value``) and nothing else."""
    try:
        words = shlex.split(segment)
    except ValueError:
        return False
    words = words[1:] if words[:1] == ["export"] else words
    return len(words) == 1 and _ASSIGNMENT.match(words[0]) is not None


def code_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of every fenced code block, and of every indented code block
    that starts with a command (its indented lines up to the next blank line)."""
    blocks, fence, start, body, indented = [], None, 0, [], False
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if indented and line.startswith("    ") and stripped:
            body.append(stripped)
            continue
        if indented:
            blocks.append((start, "\n".join(body)))
            indented = False
        if fence is None and stripped.startswith("```"):
            fence, start, body = stripped[:3], number + 1, []
        elif fence is not None and stripped.startswith(fence):
            blocks.append((start, "\n".join(body)))
            fence = None
        elif fence is not None:
            body.append(line)
        elif re.match(r" {4,}(snakemake|(\.uv/bin/|python3 -m )?uv run)\b", line):
            indented, start, body = True, number, [stripped]
    if indented:
        blocks.append((start, "\n".join(body)))
    return blocks


def doc_commands() -> list[DocCommand]:
    found: dict[tuple[str, tuple[str, ...]], DocCommand] = {}
    for doc in DOCS:
        for start, block in code_blocks(doc.read_text()):
            assignments: list[str] = []
            lines = block.split("\n")
            joined: list[tuple[int, str]] = []
            for offset, line in enumerate(lines):
                if joined and joined[-1][1].endswith("\\"):
                    joined[-1] = (joined[-1][0], joined[-1][1][:-1] + " " + line.strip())
                else:
                    joined.append((start + offset, line))
            for number, line in joined:
                for segment in _segments(line):
                    words = segment.split()
                    if "snakemake" in words:
                        command = " ".join(words[words.index("snakemake") :])
                        where = f"{doc.relative_to(REPO)}:{number}"
                        while where in {c.where for c in found.values()}:
                            where += "+"  # a second command on the same line
                        key = (command, tuple(assignments))
                        found.setdefault(key, DocCommand(where, command, tuple(assignments)))
                    elif _is_assignment(segment):
                        assignments.append(segment)
    return list(found.values())


COMMANDS = doc_commands()


def _argv(command: DocCommand) -> list[str]:
    """The command's words after ``snakemake``, expanded by bash as the block would."""
    rest = command.line.removeprefix("snakemake")
    assert "$(" not in rest and "`" not in rest, f"{command.where}: command substitution"
    names = set(VARIABLES)
    script = [
        "set -u",
        *(f"{name}={shlex.quote(value)}" for name, value in VARIABLES.items()),
        *(
            a
            for a in command.assignments
            if "$(" not in a and "`" not in a and _ASSIGNMENT.match(a).group(1) not in names
        ),
        f"printf '%s\\0' {rest}",
    ]
    proc = subprocess.run(
        ["bash", "-c", "\n".join(script)], capture_output=True, text=True, cwd=REPO,
        env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")},
    )  # fmt: skip
    assert proc.returncode == 0, (
        f"{command.where}: {command.line!r} does not expand ({proc.stderr.strip()}); set the "
        f"variable in the docs' block or in VARIABLES"
    )
    return [word for word in proc.stdout.split("\0")[:-1]]


def _run_args(command: DocCommand, workdir: Path, dry: bool = True) -> list[str]:
    """The doc command's own arguments, its working directory replaced by ``workdir`` and its
    config files read from the repository, after ``-n`` where ``dry``."""
    args, out, i = _argv(command), [], 0
    while i < len(args):
        arg = args[i]
        if arg in ("-d", "--directory"):
            i += 2
            continue
        if arg.startswith("--directory="):
            i += 1
            continue
        out.append(arg)
        i += 1
        if arg in ("--configfile", "--configfiles"):
            while i < len(args) and not args[i].startswith("-"):
                path = Path(args[i])
                out.append(str(REPO / path) if (REPO / path).exists() else args[i])
                i += 1
    where = ["--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir)]
    return [*where, *(["-n"] if dry else []), *out]


# What a real run of a command builds or measures when its dry run plans one of these: too much
# for this test, so such a command is checked by Snakemake's parser instead of run as typed.
COSTLY_RULES = {"build_env", "stage_dataset", "build_default_archive"}


@dataclass(frozen=True)
class Run:
    args: list[str]
    returncode: int
    output: str

    def planned(self) -> set[str]:
        if "Job stats:" not in self.output:
            return set()
        stats = self.output.split("Job stats:", 1)[1].split("total", 1)[0]
        return {m[1] for m in re.finditer(r"^(\w+)\s+\d+$", stats, re.M)}

    def cheap(self) -> bool:
        """A dry run that plans no measurement and no env build, or no job at all."""
        costly = set(regimes.timed_rules()) | COSTLY_RULES
        return self.returncode == 0 and not self.planned() & costly


@dataclass(frozen=True)
class DocRun:
    dry: Run
    typed: Run | None  # the command run as written, where its dry run is cheap


def _run(command: DocCommand, workdir: Path, dry: bool = True) -> Run:
    workdir.mkdir(parents=True, exist_ok=True)
    for name, text in USER_FILES.items():
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).write_text(text)
    args = _run_args(command, workdir, dry)
    proc = snakemake_runner.run(args, workdir, {**os.environ, **OFFLINE_ENV}, timeout=300)
    return Run(args, proc.returncode, proc.stdout + proc.stderr)


def _dry_run_then_typed(command: DocCommand, workdir: Path) -> DocRun:
    dry = _run(command, workdir)
    return DocRun(dry, _run(command, workdir, dry=False) if dry.cheap() else None)


@pytest.fixture(scope="module")
def doc_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, DocRun]:
    """Every runnable doc command, dry-run concurrently, each in its own working directory, and
    then run as written where that is cheap."""
    root = tmp_path_factory.mktemp("doc-commands")
    runnable = [c for c in COMMANDS if c.skip_reason() is None]
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures = {
            c.where: pool.submit(_dry_run_then_typed, c, root / f"run{i}")
            for i, c in enumerate(runnable)
        }
        return {where: future.result() for where, future in futures.items()}


# The modes of Snakemake's command line that execute no job (snakemake.cli.args_to_api: each
# takes its own branch before execute_workflow), so need neither cores nor a job limit.
NON_EXECUTING_MODES = (
    "dryrun", "touch", "lint", "list_target_rules", "list_rules", "print_compilation",
    "containerize", "report", "generate_unit_tests", "dag", "rulegraph", "filegraph", "d3dag",
    "unlock", "cleanup_metadata", "conda_cleanup_envs", "conda_create_envs_only",
    "list_conda_envs", "cleanup_shadow", "container_cleanup_images", "list_changes",
    "list_input_changes", "list_params_changes", "list_untracked", "summary",
    "detailed_summary", "archive", "delete_all_output", "delete_temp_output", "version",
)  # fmt: skip


def execution_problem(command: DocCommand) -> str | None:
    """Snakemake's refusal of ``command`` typed in the checkout, if it would execute jobs without
    what its executor needs: the command line parsed by Snakemake's own parser (``--profile``
    and the workflow profile applied, as found from the checkout), then Snakemake's rule
    (snakemake.cli.args_to_api, snakemake.api.DAGApi.execute_workflow): a local executor needs
    cores, ``-j``/``--jobs`` standing in for ``--cores``; any other executor needs a job limit.
    The workflow's own start with a profile (augbench/planning/launch.py) applied first."""
    import contextlib
    import io

    from snakemake.cli import parse_args
    from snakemake_interface_executor_plugins.registry import ExecutorPluginRegistry

    from augbench.planning import launch

    argv = _argv(command)
    # The Snakefile's first lines start Snakemake again with the googlebatch profile where the
    # command names that executor and no profile (augbench/planning/launch.py); Snakemake reads the
    # Snakefile before it checks the executor's settings, so the profile's settings count.
    try:
        relaunch = launch.with_profile(["snakemake", *argv], REPO, sys.executable)
    except launch.LaunchError as exc:
        return str(exc)
    if relaunch:
        argv = relaunch[relaunch.index("snakemake") + 1 :]
    with contextlib.chdir(REPO), contextlib.redirect_stderr(io.StringIO()):
        _, args = parse_args(argv)
    if any(getattr(args, mode, None) not in (None, False, [], "") for mode in NON_EXECUTING_MODES):
        return None
    executor = ExecutorPluginRegistry().get_plugin(args.executor or "local")
    if executor.common_settings.local_exec:
        if args.cores is None and args.jobs is None:
            return "cores have to be specified for local execution (--cores N)"
    elif args.jobs is None:
        return f"the {args.executor} executor needs a job limit (--jobs N)"
    return None


def test_the_docs_commands_are_found() -> None:
    lines = {c.line for c in COMMANDS}
    assert "snakemake --cores 8" in lines  # README's first command
    assert any(" plots " in f"{line} " for line in lines)
    assert len([c for c in COMMANDS if c.skip_reason() is None]) >= 10


@pytest.mark.slow
@pytest.mark.workflow
@pytest.mark.parametrize("command", COMMANDS, ids=[c.where for c in COMMANDS])
def test_doc_command_plans_and_cheap_ones_run(
    command: DocCommand, doc_runs: dict[str, DocRun]
) -> None:
    if command.skip_reason():
        pytest.skip(f"{command.line}: {command.skip_reason()}")
    run = doc_runs[command.where].dry
    assert run.returncode == 0, (
        f"{command.where}: `{command.line}` fails to plan "
        f"(snakemake {shlex.join(run.args)}):\n{run.output[-3000:]}"
    )
    timed = set(regimes.timed_rules())
    planned = run.planned()
    if "plots" in _argv(command):  # "without running any benchmark"
        assert planned and not planned & timed, f"{command.where} plans {planned & timed}"
    if "answer" in _argv(command):
        # README, docs/pipelines.md: only the pipeline's jobs and its answer page, no
        # single-transform job (the breakdown where the preset runs it: not the default's)
        pipeline_only = {"pipeline_dataloader", "pipeline_tables"}
        answer = {"recommendation", "answer_html", "answer"}
        assert planned - {"pipeline_breakdown"} == (SETUP_RULES & planned) | pipeline_only | answer
    # A command whose dry run plans no measurement and no env build (``snakemake cost``,
    # ``plots`` on the fixture results, ``--lint``) also runs as written, without ``-n``.
    typed = doc_runs[command.where].typed
    assert typed is None or typed.returncode == 0, (
        f"{command.where}: `{command.line}` plans but fails as typed "
        f"(snakemake {shlex.join(typed.args)}):\n{typed.output[-3000:]}"
    )


@pytest.mark.parametrize("command", COMMANDS, ids=[c.where for c in COMMANDS])
def test_doc_command_has_what_its_executor_needs(command: DocCommand) -> None:
    """A dry run plans without cores; the command as typed must still give them."""
    problem = execution_problem(command)
    assert problem is None, f"{command.where}: `{command.line}` stops as typed: {problem}"


# -- cited paths ---------------------------------------------------------------------------------
def _tracked_roots() -> set[str]:
    """The repository's top-level files and folders (git's, else the checkout's)."""
    try:
        proc = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
        roots = {path.split("/")[0] for path in proc.stdout.split()}
    except OSError:
        roots = set()
    return roots or {p.name for p in REPO.iterdir()}


def cited_paths(doc: Path) -> list[tuple[str, Path]]:
    """(as written, where it points) for every repository path ``doc`` cites."""
    text = doc.read_text()
    roots = _tracked_roots() - EXEMPT_ROOTS
    # Code spans (they may wrap onto the next line), outside the fenced blocks.
    prose = re.sub(r"^\s*```.*?^\s*```[^\n]*$", "", text, flags=re.M | re.S)
    words = [w for m in re.finditer(r"`([^`]+)`", prose) for w in m.group(1).split()]
    for _, block in code_blocks(text):
        words += re.split(r"[\s'\"`]+", block)
    out = []
    for word in words:
        word = re.sub(r"^[A-Za-z_-]+=", "", word.rstrip(".,;:)]").lstrip("(["))
        if "/" not in word or word.split("/")[0] not in roots:
            continue
        if re.search(r"[<>{}$]|\.\.\.|…", word):
            continue
        out.append((word, REPO / word.split("#")[0].split("::")[0]))
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        link = m.group(1)
        if re.match(r"[a-z]+:", link) or link.startswith("#"):
            continue
        target = (doc.parent / link.split("#")[0]).resolve()
        if target.is_relative_to(REPO) and target.relative_to(REPO).parts[0] in EXEMPT_ROOTS:
            continue
        out.append((link, target))
    return out


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(REPO)) for d in DOCS])
def test_cited_repository_paths_exist(doc: Path) -> None:
    """Also a cited test (``tests/x.py::test_name``): the file defines it."""

    def exists(written: str, path: Path) -> bool:
        if "*" in written:
            return any(REPO.glob(str(path.relative_to(REPO))))
        if "::" in written:
            name = written.split("::")[1].split("[")[0]
            return path.is_file() and f"def {name}(" in path.read_text()
        return path.exists()

    missing = [written for written, path in cited_paths(doc) if not exists(written, path)]
    assert not missing, f"{doc.relative_to(REPO)} cites paths that do not exist: {missing}"
