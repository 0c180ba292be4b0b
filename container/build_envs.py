"""Build every environment a cloud job needs under one prefix: the image recipe's only env step.

    python container/build_envs.py --prefix /opt/augbench   # what container/Dockerfile runs
    python container/build_envs.py --prefix /tmp/x --libraries pillow   # a quick check

- ``<prefix>/driver``: Snakemake 9.27.1 with the pinned executor and storage plugins, from
  ``envs/driver.txt`` (the driver's lock, exported from uv.lock by tools/maintenance/lock_envs.py).
  The image puts its ``bin`` first on PATH: the plugin's job command runs ``python -m snakemake``.
- ``<prefix>/venvs/<library>``: one venv per benchmarked library from ``envs/<library>.txt``.

Both go through ``augbench.planning.provision.ensure_env``, the code path of the workflow's
build_env rule and of every benchmark job, so each venv carries the lock stamp a job checks before
reusing it: a job on the image finds its env matching and installs nothing. After building, each env
must import what it is for, or the script fails (an image that cannot run a job is not pushed).
tests/test_image_envs.py runs this script in an empty prefix for every library. ``--build-packages``
prints the Debian packages the libraries' env builds need (Pillow-SIMD compiles from source), which
the image installs first.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from augbench.planning.provision import ensure_env  # noqa: E402
from augbench.workload import adapters  # noqa: E402

# What each env must import to be usable (the import name differs from the distribution name).
DRIVER_IMPORTS = "snakemake, snakemake_executor_plugin_googlebatch, snakemake_storage_plugin_gcs"


def import_check(name: str) -> str:
    """Code that imports what an env is for: the driver's plugins, or a library as its adapter
    imports it (``Adapter.import_library``)."""
    if name == "driver":
        return f"import {DRIVER_IMPORTS}"
    return f"from augbench.workload import adapters; adapters.get({name!r}).import_library()"


def env_dir(prefix: Path, name: str) -> Path:
    return prefix / "driver" if name == "driver" else prefix / "venvs" / name


def build(prefix: Path, name: str, python: str) -> dict:
    lock = REPO / "envs" / f"{name}.txt"
    report = ensure_env(name, lock, env_dir(prefix, name), python)
    if report["imported"]:  # the build imported the library and torch's loader (warm_imports)
        report["import_checked"] = "in the build"
        return report
    start = time.perf_counter()
    subprocess.run(
        [report["python"], "-c", import_check(name)], check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    report["import_checked"] = f"in {time.perf_counter() - start:.1f} s"
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prefix", type=Path, required=True, help="e.g. /opt/augbench in the image")
    p.add_argument("--libraries", nargs="+", default=adapters.names(),
                   choices=adapters.names())  # fmt: skip
    p.add_argument("--no-driver", action="store_true", help="library venvs only")
    p.add_argument("--python", default=sys.executable, help="interpreter the venvs are made from")
    p.add_argument(
        "--build-packages", action="store_true",
        help="print the Debian packages their env builds need (their declarations) and exit",
    )  # fmt: skip
    args = p.parse_args(argv)
    if args.build_packages:
        needed = {pkg for lib in args.libraries for pkg in adapters.declared(lib).build_packages}
        print(" ".join(sorted(needed)))
        return 0
    names = ([] if args.no_driver else ["driver"]) + args.libraries
    for name in names:
        try:
            r = build(args.prefix.resolve(), name, args.python)
        except (subprocess.CalledProcessError, RuntimeError) as exc:
            print(f"{name}: FAILED: {exc}", file=sys.stderr)
            return 1
        what = "reused" if r["reused"] else "built"
        print(f"{name:<16} {what} {env_dir(args.prefix, name)} in {r['setup_seconds']:.1f} s, "
              f"imports checked {r['import_checked']}, lock {r['lock_sha256'][:12]}",
              flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
