"""Build (or reuse) one library's environment and write its marker.

uv mode: a venv at <envs.dir>/<library> synced exactly to envs/<library>.txt. The venv records the
lock's sha256; when it matches, the build is a no-op (seconds). conda mode (--sdm conda): Snakemake
has already activated envs/<library>.yaml; the marker records that interpreter.
"""

import hashlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.logs import redirect_to_log

LOCK_STAMP = ".augbench-lock.sha256"


def uv_binary() -> str:
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except ImportError:
        found = shutil.which("uv")
        if not found:
            raise SystemExit(
                "uv is required to build library environments (pip install uv)"
            ) from None
        return found


def run(cmd: list[str]) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=sys.stdout, stderr=sys.stderr)


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
    lock = Path(sm.input.lock)
    marker = Path(sm.output.marker)
    library = sm.wildcards.library
    manager = sm.params.manager
    lock_sha = hashlib.sha256(lock.read_bytes()).hexdigest()
    start = time.perf_counter()

    if manager == "conda":
        python = sys.executable
        reused = True
    else:
        venv = Path(sm.params.venv)
        python = str(venv / "bin" / "python")
        stamp = venv / LOCK_STAMP
        reused = stamp.exists() and stamp.read_text().strip() == lock_sha
        if not reused:
            uv = uv_binary()
            if venv.exists():
                shutil.rmtree(venv)
            run([uv, "venv", "--quiet", "--python", sm.params.python, str(venv)])
            # uv hardlinks from its cache, so several torch-based envs cost the disk once.
            run([uv, "pip", "sync", "--python", python, str(lock)])
            stamp.write_text(lock_sha + "\n")
        print(f"{library}: {'reused' if reused else 'built'} {venv}", flush=True)

    report = interpreter_report(python)
    report.update(
        library=library,
        manager=manager,
        lock=str(lock),
        lock_sha256=lock_sha,
        reused=reused,
        setup_seconds=time.perf_counter() - start,
    )
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")


with redirect_to_log(snakemake.log[0]):  # noqa: F821
    main()
