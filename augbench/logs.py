"""Errors a user can fix, reported in one line; a Snakemake script's output sent to its rule's log.

A user error (bad config, dataset, plot_from source, a plan the config does not allow) reaches the
terminal as one line per problem, ``augbench: <what>, <where> (config key or file); <what to
change>``, and exit status 1, never as a Python traceback. Any other exception is a bug: its
traceback stays (in the rule's log for scripts).

- While the workflow is parsed or its job graph built (common.smk, input and params functions):
  ``with exit_on_user_error(): ...`` or ``exit_with(message, ...)``.
- In a rule's script: raise the error inside ``with redirect_to_log(snakemake.log[0]):`` (every
  script does); the line goes to the log and to the terminal, and the script exits 1.

What counts as a user error: ``UserError`` and its subclasses, and the exceptions listed in
``USER_ERRORS`` (matched by name, so this module imports none of them).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn, TextIO

PREFIX = "augbench: "

# Exceptions raised for bad input, matched by "<module>.<class>" anywhere in an exception's MRO.
USER_ERRORS = frozenset(
    {
        "augbench.planning.config.ConfigError",
        "augbench.planning.dataset.DatasetError",
        "augbench.planning.sweep.PlanError",
        "augbench.workload.pipelines.PipelineError",
    }
)


class UserError(Exception):
    """An error the user caused and can fix. The message says what is wrong, where (config key or
    file) and what to change; ``problems`` holds several such messages, one line each."""

    def __init__(self, *problems: str) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


def is_user_error(exc: BaseException) -> bool:
    return isinstance(exc, UserError) or any(
        f"{cls.__module__}.{cls.__qualname__}" in USER_ERRORS for cls in type(exc).__mro__
    )


def error_lines(exc: BaseException | str) -> list[str]:
    """The one-line report of each problem: ``augbench: <message>``, whitespace (newlines
    included) collapsed to single spaces."""
    if isinstance(exc, BaseException):
        problems = getattr(exc, "problems", None) or [str(exc) or type(exc).__name__]
    else:
        problems = [exc]
    lines = []
    for problem in problems:
        text = " ".join(str(problem).split())
        if text:
            lines.append(text if text.startswith(PREFIX) else PREFIX + text)
    return lines


def exit_with(*problems: BaseException | str, also: TextIO | None = None) -> NoReturn:
    """Print one line per problem to stderr (and ``also``), then exit with status 1. While
    Snakemake parses the workflow or builds its job graph this ends the run with exactly these
    lines: no traceback, no job started."""
    lines = [line for problem in problems for line in error_lines(problem)]
    for line in lines or [PREFIX + "error"]:
        if also is not None:
            print(line, file=also, flush=True)
        print(line, file=sys.stderr, flush=True)
    raise SystemExit(1)


@contextlib.contextmanager
def exit_on_user_error() -> Iterator[None]:
    """A user error raised inside ends the process with its one-line report (``exit_with``);
    anything else propagates."""
    try:
        yield
    except Exception as exc:
        if not is_user_error(exc):
            raise
        exit_with(exc)


@contextlib.contextmanager
def redirect_to_log(path: str | Path) -> Iterator[None]:
    """Send a Snakemake script's stdout/stderr to its rule's log file. A user error raised inside
    is written as one line to the log and the terminal and the script exits 1 (no traceback); any
    other exception leaves its traceback in the log and propagates."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh, contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
        try:
            yield
        except SystemExit:
            raise
        except BaseException as exc:
            if is_user_error(exc):
                fh.flush()
                with contextlib.redirect_stderr(sys.__stderr__):
                    exit_with(exc, also=fh)
            import traceback

            traceback.print_exc(file=fh)
            # Also on the terminal: the one-line cause is what a user needs first.
            print(f"error: {type(exc).__name__}: {exc} (full log: {path})", file=sys.__stderr__)
            raise
