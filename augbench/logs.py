"""Send a Snakemake script's stdout/stderr to its rule's log file."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def redirect_to_log(path: str | Path) -> Iterator[None]:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh, contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
        try:
            yield
        except BaseException:
            import traceback

            traceback.print_exc(file=fh)
            # Also on the terminal: the one-line cause is what a user needs first.
            exc = sys.exc_info()[1]
            print(f"error: {type(exc).__name__}: {exc} (full log: {path})", file=sys.__stderr__)
            raise
