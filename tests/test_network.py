"""No benchmark job phones home, and a checkout that ran locally can still plan a cloud sweep.

- Library telemetry is off in every benchmark process (augbench.measuring.telemetry), set by
  the launcher before the engine's interpreter starts and recorded in every result file and row.
- The network guard (augbench/measuring/netguard) refuses and logs any name lookup or connection
  that would leave the machine; the session's smoke run (every library and regime) runs under it,
  and its log must show the guard in every job's processes and no refused connection.
- Results of other datasets in the working directory are never inputs of a sweep whose files live
  in a bucket (the googlebatch profile's default storage provider).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import snakemake_runner
from conftest import NETWORK_GUARD_LOG, OFFLINE_ENV, REPO, SMOKE_LIBRARIES, copy_of

from augbench.measuring.telemetry import off_environment
from augbench.planning import provision, regimes
from augbench.policy import NETWORK_GUARD_ENV_VAR

GUARD_DIR = REPO / "augbench" / "measuring" / "netguard"


def guarded_python(code: str, log: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, NETWORK_GUARD_ENV_VAR: str(log), "PYTHONPATH": str(GUARD_DIR)}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )


def records(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_the_guard_refuses_lookups_and_connections_that_leave_the_machine(
    tmp_path: Path,
) -> None:
    log = tmp_path / "guard.jsonl"
    # 192.0.2.1 is TEST-NET-1 (never routed); the guard refuses before any packet is sent.
    for code in (
        "import socket; socket.socket().connect(('192.0.2.1', 80))",
        "import socket; socket.getaddrinfo('example.com', 443)",
        "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
        "s.sendto(b'x', ('192.0.2.1', 53))",
    ):
        proc = guarded_python(code, log)
        assert proc.returncode != 0 and "augbench network guard" in proc.stderr, proc.stderr
    refused = [r for r in records(log) if r["event"] == "refused"]
    assert [r["what"] for r in refused] == ["connect", "name lookup", "sendto"]


def test_the_guard_lets_loopback_and_unix_sockets_through(tmp_path: Path) -> None:
    log = tmp_path / "guard.jsonl"
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        code = (
            f"import socket; socket.create_connection(('127.0.0.1', {port})).close(); "
            f"socket.create_connection(('localhost', {port})).close(); "
            "a, b = socket.socketpair(); a.close(); b.close()"
        )
        proc = guarded_python(code, log)
    assert proc.returncode == 0, proc.stderr
    assert [r["event"] for r in records(log)] == ["installed"]


def test_the_launcher_sets_telemetry_off_and_puts_the_guard_first() -> None:
    env = provision.engine_environment({"PYTHONPATH": "/repo"}, {"env_reused": True})
    assert all(env[var] == value for var, value in off_environment().items())
    assert env["PYTHONPATH"] == "/repo"  # no guard unless asked for
    guarded = provision.engine_environment(
        {"PYTHONPATH": "/repo", NETWORK_GUARD_ENV_VAR: "/tmp/log"}, {}
    )
    assert guarded["PYTHONPATH"].split(os.pathsep) == [str(GUARD_DIR), "/repo"]


# -- the session's smoke run, under the guard -------------------------------------------------
@pytest.mark.workflow
def test_no_benchmark_job_of_the_smoke_run_connects_outside(smoke_run) -> None:
    assert smoke_run.returncode == 0, smoke_run.output[-3000:]
    found = records(smoke_run.workdir / NETWORK_GUARD_LOG)
    refused = [r for r in found if r["event"] != "installed"]
    assert not refused, refused
    # The guard ran in the jobs it speaks for: one micro and one DataLoader job per CPU library,
    # DALI's CPU variant, and the pyperf workers micro starts.
    started = [" ".join(r.get("argv") or []) for r in found if r["event"] == "installed"]
    for library in regimes.libraries_for("micro", SMOKE_LIBRARIES):
        for engine in (
            "augbench.measuring.engines.micro",
            "augbench.measuring.engines.cpu_dataloader",
        ):
            assert any(engine in a and f"--library {library}" in a for a in started), engine
    assert any("augbench.measuring.engines.dali" in a and "dali-cpu" in a for a in started)
    assert any("micro_worker.py" in a for a in started)


@pytest.mark.workflow
def test_every_row_records_library_telemetry_off(smoke_run) -> None:
    raw = smoke_run.workdir / "results" / "raw"
    files = sorted(raw.glob("**/albumentationsx/*.json"))
    assert files
    for path in files:
        recorded = json.loads(path.read_text())["metadata"]["environment"]["telemetry"]
        assert recorded == off_environment(), path
    table = pd.read_csv(smoke_run.workdir / "results/tables/all_results.csv", low_memory=False)
    assert table["telemetry"].str.startswith("off (ALBUMENTATIONS_NO_TELEMETRY=1").all()


@pytest.mark.workflow
def test_a_used_checkout_plans_a_cloud_sweep_of_another_dataset(smoke_run, tmp_path) -> None:
    """After a local run, the same folder plans a googlebatch sweep of another preset (another
    dataset key): the local results of the smoke dataset are not inputs of the bucket's run."""
    run = copy_of(smoke_run, tmp_path / "used")
    proc = snakemake_runner.run(
        ["-n",
         "--snakefile", str(REPO / "Snakefile"), "--directory", str(run.workdir),
         "--workflow-profile", str(REPO / "profiles" / "googlebatch"),
         "--default-storage-provider", "fs",
         "--default-storage-prefix", str(tmp_path / "bucket"),
         "--config", "preset=default", f"machine={run.machine}",
         "libraries=[albumentationsx,torchvision,kornia,pillow,dali]",
         "regimes=[micro,cpu_dataloader,gpu_dataloader,dali]"],
        run.workdir, {**os.environ, **OFFLINE_ENV},
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    assert "MissingInputException" not in out and "rule aggregate:" in out
    # Locally, the same checkout keeps the smoke dataset's rows in the tables (--forceall: the
    # whole plan, whatever is up to date).
    local = snakemake_runner.run(
        ["-n", "--snakefile", str(REPO / "Snakefile"),
         "--directory", str(run.workdir), "--config", "preset=default",
         f"machine={run.machine}", "libraries=[pillow]", "regimes=[micro]",
         "--forceall"],
        run.workdir,
    )  # fmt: skip
    smoke_key = next((run.workdir / "results/raw" / run.machine).iterdir()).name
    assert local.returncode == 0, local.stderr[-3000:]
    # The dry-run's job blocks (Snakemake prints them on stderr).
    aggregate = (local.stdout + local.stderr).split("rule aggregate:")[1].split("\n\n")[0]
    assert smoke_key in aggregate
