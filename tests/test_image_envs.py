"""The image's env-build script (container/build_envs.py, what container/Dockerfile runs), run in an
empty prefix: every env imports what it is for, holds exactly its lock, and carries the lock stamp
that makes a benchmark job reuse it instead of installing anything. Docker cannot build here; this
script is the image's tested part. uv hardlinks from its cache, so this takes seconds once warm."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import REPO
from packaging.requirements import Requirement

from augbench.planning import provision
from augbench.workload import adapters

SCRIPT = REPO / "container" / "build_envs.py"


def pins(text: str) -> dict[str, str]:
    """name -> version of every pin of a lock that applies here (its marker holds on Linux)."""
    found = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate():
            found[re.sub(r"[-_.]+", "-", req.name).lower()] = str(req.specifier).removeprefix("==")
    return found


def installed(python: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json, re;"
        "print(json.dumps({re.sub(r'[-_.]+', '-', d.metadata['Name']).lower(): d.version "
        "for d in m.distributions()}))"
    )
    out = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


@pytest.mark.envs
def test_build_script_makes_every_env_from_its_lock_in_an_empty_prefix(tmp_path: Path) -> None:
    prefix = tmp_path / "opt-augbench"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--prefix", str(prefix)],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]

    for name in ("driver", *(n for n in adapters.names() if not adapters.is_alias(n))):
        venv = prefix / "driver" if name == "driver" else prefix / "venvs" / name
        lock = REPO / "envs" / f"{name}.txt"
        python = venv / "bin" / "python"
        assert f"{name:<16} built" in proc.stdout, name
        # Exactly the lock: nothing missing, nothing extra, no other version.
        assert installed(python) == pins(lock.read_text()), name
        # The stamp a job checks before reusing the env (augbench.planning.provision.ensure_env).
        assert (venv / provision.LOCK_STAMP).read_text().strip() == provision.sha256_bytes(lock)
        again = provision.ensure_env(name, lock, venv, sys.executable)
        assert again["reused"] is True, name

        # Every env imported what it is for (a library as its adapter imports it, DALI without
        # a GPU too; the driver its plugins): the script imports each env it builds and fails
        # otherwise (its exit status above). A library's second name (A/A runs) has no env of
        # its own: it runs in its base's.
        checked = "in the build" if name != "driver" else r"in \d"
        assert re.search(rf"^{name} +built .* imports checked {checked}", proc.stdout, re.M), name

    # The driver env holds the versions pyproject.toml pins for the job's own Snakemake.
    pinned = {
        name: version
        for name, version in (
            d.split("==") for d in tomllib.loads((REPO / "pyproject.toml").read_text())[
                "project"]["dependencies"] if "==" in d
        )
    }  # fmt: skip
    driver = installed(prefix / "driver" / "bin" / "python")
    for name in ("snakemake", "snakemake-executor-plugin-googlebatch",
                 "snakemake-storage-plugin-gcs"):  # fmt: skip
        assert driver[name] == pinned[name], name


def test_driver_lock_is_the_export_of_uv_lock() -> None:
    """envs/driver.txt (what the image's driver env is built from) has not drifted from uv.lock."""
    from uv import find_uv_bin

    exported = subprocess.run(
        [find_uv_bin(), "export", "--frozen", "--no-dev", "--no-hashes", "--no-header",
         "--no-annotate", "--no-emit-project"],
        check=True, capture_output=True, text=True, cwd=REPO,
    ).stdout  # fmt: skip
    assert pins((REPO / "envs" / "driver.txt").read_text()) == pins(exported)
