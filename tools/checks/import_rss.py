"""Measure the per-process memory constants of the memory model (augbench.policy.IMPORT_RSS_MB,
MANAGER_RSS_MB): the resident memory of a fresh interpreter in each library's venv after
importing augbench and the library (its adapter's ``import_library``), and after torch too.

    uv run python tools/checks/import_rss.py [--envs-dir .venvs] [--repeats 3]

Prints the numbers as the policy's dict literal, with the machine and date, to paste into
augbench/policy.py after a lock change (envs/*.txt). Each value is the largest of ``--repeats``
fresh processes (ru_maxrss, MiB).
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from augbench import matrix  # noqa: E402

PROBE = """
import json, resource, sys
sys.path.insert(0, {root!r})
def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
if {manager!r}:
    import augbench.engines.micro  # the micro job's manager: no library import
    print(json.dumps({{"manager": rss()}}))
    raise SystemExit
from augbench import adapters
adapters.get({library!r}).import_library()
alone = rss()
try:
    import torch  # noqa: F401
except ImportError:  # an env without torch (DALI's): no engine there imports it
    pass
print(json.dumps({{"alone": alone, "torch": rss()}}))
"""


def probe(python: Path, library: str, manager: bool = False) -> dict[str, float]:
    code = PROBE.format(root=str(ROOT), library=library, manager=manager)
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{library}: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--envs-dir", type=Path, default=ROOT / ".venvs")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    found: dict[str, tuple[float, float]] = {}
    manager = 0.0
    for library in matrix.LIBRARIES:
        python = args.envs_dir / library / "bin" / "python"
        if not python.exists():
            print(f"# {library}: no venv at {python}; skipped")
            continue
        runs = [probe(python, library) for _ in range(args.repeats)]
        found[library] = (max(r["alone"] for r in runs), max(r["torch"] for r in runs))
        if library == "albumentationsx":
            manager = max(probe(python, library, manager=True)["manager"] for _ in range(2))
    print(f"# {platform.node()} ({platform.processor() or platform.machine()}), "
          f"{datetime.date.today().isoformat()}, tools/checks/import_rss.py")  # fmt: skip
    print("IMPORT_RSS_MB: dict[str, tuple[float, float]] = {")
    for library, (alone, torch) in found.items():
        print(f'    "{library}": ({alone:.0f}.0, {torch:.0f}.0),')
    print("}")
    print(f"MANAGER_RSS_MB = {manager:.0f}.0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
