"""A library's env build (augbench.planning.provision.ensure_env): it imports what the jobs
import once, so no timed job compiles bytecode, and what its log says it compiled is read back."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from conftest import REPO

from augbench.planning import provision


@pytest.mark.envs
def test_a_new_env_holds_the_bytecode_of_its_library(tmp_path: Path) -> None:
    """Built where the machine says not to write bytecode (PYTHONDONTWRITEBYTECODE, as this one
    does), the env still holds its library's compiled modules: the build imported it."""
    venv = tmp_path / "dali"
    os.environ[provision.NO_BYTECODE_ENV_VAR] = "1"
    try:
        env = provision.ensure_env("dali", REPO / "envs" / "dali.txt", venv, sys.executable)
    finally:
        os.environ.pop(provision.NO_BYTECODE_ENV_VAR, None)
    assert not env["reused"]
    site = next(venv.glob("lib/python*/site-packages"))
    assert list((site / "nvidia" / "dali").glob("__pycache__/*.pyc"))
    again = provision.ensure_env("dali", REPO / "envs" / "dali.txt", venv, sys.executable)
    assert again["reused"]


def test_what_a_build_compiled_is_read_from_its_log() -> None:
    log = (
        "Resolved 49 packages in 180ms\n   Building pyturbojpeg==1.8.3\n"
        "      Built pyturbojpeg==1.8.3\nPrepared 1 package in 778ms\nInstalled 49 packages\n"
    )
    assert provision.source_builds(log) == ["pyturbojpeg==1.8.3"]
    assert provision.source_builds("Installed 27 packages in 68ms\n") == []
    assert provision.prepare_seconds(log) == pytest.approx(0.778)
    assert provision.prepare_seconds("Prepared 2 packages in 2.32s\n") == pytest.approx(2.32)
    assert provision.prepare_seconds("Installed 27 packages in 68ms\n") == 0
