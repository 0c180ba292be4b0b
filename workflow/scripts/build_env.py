"""Build (or reuse) one library's environment and write its marker.

uv mode: a venv at <envs.dir>/<library> synced exactly to envs/<library>.txt. The venv records the
lock's sha256; when it matches, the build is a no-op (seconds). conda mode (--sdm conda): Snakemake
has already activated envs/<library>.yaml; the marker records that interpreter.

An env that cannot be built here (a library compiled from source without its compiler or headers,
a lock uv cannot install) loses only its own library: the marker records ``status: failed`` and
the one-line reason, that line is printed, and the rule ends well, so the other libraries' jobs run
with or without --keep-going. The library's timed jobs write rows that say ``env_failed``
(augbench.planning.provision), and the next run tries the build again (workflow/rules/envs.smk).
"""

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.logs import redirect_to_log
from augbench.planning.provision import EnvBuildError, ensure_env, failed_marker, sha256_bytes


def interpreter_report(python: str) -> dict:
    code = (
        "import json, sys, importlib.metadata as md;"
        "print(json.dumps({'python': sys.executable, 'python_version': sys.version.split()[0],"
        "'packages': {d.metadata['Name'].lower(): d.version for d in md.distributions()}}))"
    )
    out = subprocess.run([python, "-c", code], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main() -> None:
    sm = snakemake  # noqa: F821
    lock = Path(sm.scriptdir).resolve().parents[1] / "envs" / f"{sm.wildcards.library}.txt"
    marker = Path(sm.output.marker)
    library = sm.wildcards.library
    manager = sm.params.manager
    start = time.perf_counter()

    if manager == "conda":
        python = sys.executable
        reused = True
        lock_sha = sha256_bytes(lock)
    else:
        # The same code path benchmark jobs use on any node (augbench.planning.provision).
        try:
            python = sm.params.python or sys.executable
            env = ensure_env(library, lock, Path(sm.params.venv), python)
        except EnvBuildError as exc:
            report = failed_marker(library, lock, str(exc))
            write(marker, report)
            line = f"augbench: {exc}; only {library}'s rows are lost (they say env_failed)"
            print(line, flush=True)
            print(line, file=sys.__stderr__, flush=True)  # the terminal, beside the log
            return
        python, reused, lock_sha = env["python"], env["reused"], env["lock_sha256"]
        print(f"{library}: {'reused' if reused else 'built'} {sm.params.venv}", flush=True)

    report = interpreter_report(python)
    report.update(
        status="ok",
        library=library,
        manager=manager,
        lock=str(lock),
        lock_sha256=lock_sha,
        reused=reused,
        setup_seconds=time.perf_counter() - start,
    )
    write(marker, report)


def write(marker: Path, report: dict) -> None:
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")


with redirect_to_log(snakemake.log[0]):  # noqa: F821
    main()
