"""The install works where users are; a Python the project does not support gets one line.

- README.md's main command (the first ``snakemake`` line of its first ``bash`` block, read from
  the README so the two cannot drift), typed with ``-n`` appended in a fresh copy of the checkout,
  under the system Python (``/usr/bin/python3``, which PEP 668 marks externally managed on
  Debian 12 and Ubuntu 24.04) with a fresh ``HOME`` and ``PATH=/usr/bin:/bin``, installs uv,
  makes the project's env from that Python and prints the plan; typed again, it works again.
- CI (.ci/run) runs exactly the README's test command.
- The Snakefile run by a Python outside pyproject.toml's ``requires-python`` stops before
  anything else with one line that names the versions it needs; uv itself refuses such a
  Python for ``uv run --locked`` in one error line of its own.
"""

from __future__ import annotations

import glob
import os
import platform
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import snakemake_runner
from conftest import REPO
from packaging.specifiers import SpecifierSet

SYSTEM_PYTHON = Path("/usr/bin/python3")
# What a user's shell has on a fresh machine: the system's directories only.
USER_PATH = "/usr/bin:/bin"
# How this machine reaches the package index (a proxy, certificates, a mirror): the machine's
# settings, not the user's, so the fresh environment keeps them.
NETWORK_SETTINGS = (
    "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "PIP_CERT", "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_DEFAULT_TIMEOUT", "UV_INDEX_URL",
    "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL", "UV_NATIVE_TLS", "UV_HTTP_TIMEOUT",
)  # fmt: skip


def requires_python() -> str:
    with (REPO / "pyproject.toml").open("rb") as fh:
        return tomllib.load(fh)["project"]["requires-python"]


def readme_commands(text: str) -> list[str]:
    """The commands of the README's first ``bash`` (or ``sh``, or unlabelled) code block:
    backslash continuations joined, comment lines and trailing comments dropped."""
    match = re.search(r"^```(?:bash|sh|shell|console)?[ \t]*\n(.*?)^```", text, re.M | re.S)
    assert match, "README.md has no bash code block"
    commands: list[str] = []
    continued = False
    for raw in match.group(1).splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw.strip()).strip()
        line = line.removeprefix("$ ")
        if continued and commands:
            commands[-1] = f"{commands[-1]} {line.removesuffix(chr(92)).strip()}".strip()
        elif line:
            commands.append(line.removesuffix("\\").strip())
        continued = raw.rstrip().endswith("\\")
    return commands


def readme_command(word: str) -> str:
    """The README's first command that runs ``word`` (``snakemake``, ``pytest``)."""
    commands = readme_commands((REPO / "README.md").read_text())
    found = [c for c in commands if word in re.split(r"[\s;&|]+", c)]
    assert found, f"README.md's first code block has no {word} command: {commands}"
    return found[0]


def fresh_checkout(dest: Path) -> Path:
    """The repository's files as a clone of the next commit has them (git's tracked files and
    the new ones it does not ignore, as they are in the working tree), without any env, cache or
    result made in it."""
    proc = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode == 0 and proc.stdout:
        for name in proc.stdout.split("\0"):
            source = REPO / name
            if name and source.is_file():
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, dest / name, follow_symlinks=False)
    else:  # a checkout without git: everything but what .gitignore names at the top
        ignored = [
            line.strip().strip("/")
            for line in (REPO / ".gitignore").read_text().splitlines()
            if line.strip() and not line.startswith("#")
        ]
        shutil.copytree(REPO, dest, ignore=shutil.ignore_patterns(".git", *ignored))
    return dest


def warm_uv_cache() -> str:
    """The uv cache the test suite's own env was installed from. The project's env made in the
    fresh checkout takes its 117 packages from there (seconds) instead of downloading them again
    (about a gigabyte); uv still resolves against the lock and builds the env from scratch."""
    uv = Path(sys.executable).parent / "uv"
    proc = subprocess.run([str(uv), "cache", "dir"], capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def user_shell_env(home: Path) -> dict[str, str]:
    env = {"HOME": str(home), "PATH": USER_PATH, "UV_CACHE_DIR": warm_uv_cache()}
    env.update({k: os.environ[k] for k in NETWORK_SETTINGS if k in os.environ})
    return env


def system_pip_missing() -> str | None:
    if not SYSTEM_PYTHON.exists():
        return f"no {SYSTEM_PYTHON} (the system Python this test installs with)"
    proc = subprocess.run([str(SYSTEM_PYTHON), "-m", "pip", "--version"], capture_output=True)
    if proc.returncode != 0:
        return f"{SYSTEM_PYTHON} has no pip (Debian and Ubuntu: apt install python3-pip)"
    return None


def test_readme_commands_are_found() -> None:
    install, tests = readme_command("snakemake"), readme_command("pytest")
    assert install.endswith("snakemake --cores 8"), install
    assert "uv run --locked" in install and "uv run --locked" in tests


def test_ci_runs_the_readme_test_command() -> None:
    lines = [
        line.strip()
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert lines[-1] == readme_command("pytest")


@pytest.mark.slow
def test_readme_command_plans_under_the_system_python(tmp_path: Path) -> None:
    if reason := system_pip_missing():
        pytest.skip(reason)
    checkout = fresh_checkout(tmp_path / "augbench")
    home = tmp_path / "home"
    home.mkdir()
    command = f"{readme_command('snakemake')} -n"
    for attempt in ("first", "second"):  # the second finds uv and the env in place
        proc = subprocess.run(
            ["/bin/bash", "-c", command], cwd=checkout, env=user_shell_env(home),
            capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, f"{attempt} `{command}` failed:\n{output[-5000:]}"
        assert "Job stats:" in output and "augbench plan:" in output, output[-5000:]
    venv = (checkout / ".venv" / "pyvenv.cfg").read_text()
    assert re.search(r"^home = /usr/bin$", venv, re.M), venv  # the env is the system Python's
    assert not (home / ".local" / "share" / "uv" / "python").exists()  # and uv fetched none


def test_a_python_outside_requires_python_stops_in_one_line(tmp_path: Path) -> None:
    """The running Python made unsupported by a requires-python that excludes it: the Snakefile
    reads the versions from pyproject.toml (its one source) and stops there."""
    shutil.copy2(REPO / "Snakefile", tmp_path / "Snakefile")
    major, minor = sys.version_info[:2]
    needed = f">={major}.{minor + 1}"
    pyproject = (REPO / "pyproject.toml").read_text()
    pyproject = re.sub(
        r"^requires-python = .*$", f'requires-python = "{needed}"', pyproject, count=1, flags=re.M
    )
    (tmp_path / "pyproject.toml").write_text(pyproject)
    proc = snakemake_runner.run(["-n", "--cores", "1"], tmp_path)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("augbench:")]
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert lines == [
        f"augbench: needs Python {needed} (pyproject.toml), not {platform.python_version()} "
        f"({sys.executable}); run it as README.md says: .uv/bin/uv run --locked snakemake ..."
    ], proc.stderr
    assert "Traceback" not in proc.stderr


def unsupported_python() -> tuple[Path, str] | None:
    """A Python on this machine outside the project's requires-python that Snakemake itself
    supports (so a user could have installed Snakemake there), and its version."""
    spec = SpecifierSet(requires_python())
    snakemake_spec = SpecifierSet(metadata.metadata("snakemake")["Requires-Python"] or "")
    candidates = [
        *sorted(glob.glob("/usr/bin/python3.[0-9]*")),
        *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3"))),
        *filter(None, (shutil.which(f"python3.{minor}") for minor in range(10, 16))),
    ]
    for candidate in candidates:
        if candidate.endswith("-config"):
            continue
        proc = subprocess.run(
            [candidate, "-c", "import platform; print(platform.python_version())"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        version = proc.stdout.strip()
        if proc.returncode == 0 and version not in spec and version in snakemake_spec:
            return Path(candidate), version
    return None


@pytest.mark.slow
def test_an_unsupported_python_is_refused_in_one_line(tmp_path: Path) -> None:
    """Under a real Python outside requires-python: Snakemake installed there stops at the
    Snakefile's first lines, and uv refuses to run the project with it."""
    found = unsupported_python()
    if found is None:
        pytest.skip(f"no Python outside {requires_python()} that Snakemake supports here")
    python, version = found
    for name in ("Snakefile", "pyproject.toml", "uv.lock"):
        shutil.copy2(REPO / name, tmp_path / name)
    uv = str(Path(sys.executable).parent / "uv")
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    env.pop("VIRTUAL_ENV", None)
    snakemake = f"snakemake=={metadata.version('snakemake')}"
    proc = subprocess.run(
        [uv, "run", "--no-project", "--python", str(python), "--with", snakemake,
         "snakemake", "-n", "--cores", "1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    lines = [line for line in proc.stderr.splitlines() if line.startswith("augbench:")]
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert len(lines) == 1, proc.stderr
    assert f"needs Python {requires_python()} (pyproject.toml), not {version}" in lines[0]
    proc = subprocess.run(
        [uv, "run", "--locked", "--python", str(python), "snakemake", "-n"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    # uv's own message (wrapped to the terminal's width by uv): one error, naming the range.
    error = " ".join(("error:" + proc.stderr.partition("error:")[2]).split())
    assert proc.returncode != 0 and error.count("error:") == 1, proc.stderr
    assert "incompatible with the project's Python requirement" in error, proc.stderr
    assert not (tmp_path / ".venv").exists()
