"""A real single-node SLURM cluster on this machine, for the tests of profiles/slurm.

munged, slurmctld and slurmd (Debian's slurm-wlm and munge packages; .ci/run installs them) start
as the current user from a scratch folder: their own munge key and socket, their own slurm.conf
with free ports, one node with this machine's 2 cores (or ``cpus``) in one partition. Client
commands (sbatch, squeue, scancel, sinfo) find it through SLURM_CONF in :attr:`Cluster.env`.
Stopped (every job cancelled, every daemon killed) when the fixture ends.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
PARTITION = "debug"


def missing_commands() -> list[str]:
    """The daemons and clients not installed here (Debian: munge, slurmctld, slurmd,
    slurm-client)."""
    found = [*DAEMONS, "sbatch", "srun", "squeue", "scancel", "sinfo"]
    return [name for name in found if shutil.which(name) is None and not _sbin(name).exists()]


def _sbin(name: str) -> Path:
    return Path("/usr/sbin") / name


def _binary(name: str) -> str:
    return shutil.which(name) or str(_sbin(name))


def _user() -> str:
    return subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Cluster:
    root: Path
    node: str
    cpus: int
    memory_mb: int
    env: dict[str, str] = field(default_factory=dict)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args), capture_output=True, text=True, env=self.env, check=check, timeout=60
        )

    def jobs(self) -> list[dict[str, str]]:
        """Every job slurmctld still knows (MinJobAge keeps finished ones a while): id, name,
        state and comment (the SLURM executor writes the rule and wildcards there)."""
        out = self.run("squeue", "--noheader", "--states=all", "--format=%i|%j|%T|%k").stdout
        rows = []
        for line in out.splitlines():
            job_id, name, state, comment = [*line.split("|", 3), "", "", ""][:4]
            rows.append({"id": job_id, "name": name, "state": state, "comment": comment})
        return rows

    def log(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted((self.root / "log").glob("*.log"))
        )


def _write_conf(root: Path, node: str, cpus: int, memory_mb: int, munge_socket: Path) -> Path:
    user = _user()
    conf = root / "slurm.conf"
    conf.write_text(
        "\n".join([
            "ClusterName=augbench-test",
            f"SlurmctldHost={node}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            f"SlurmUser={user}",
            f"SlurmdUser={user}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={munge_socket}",
            f"StateSaveLocation={root / 'state'}",
            f"SlurmdSpoolDir={root / 'spool'}",
            f"SlurmctldPidFile={root / 'slurmctld.pid'}",
            f"SlurmdPidFile={root / 'slurmd.pid'}",
            f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={root / 'log' / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "SchedulerType=sched/backfill",
            "MpiDefault=none",
            "ReturnToService=2",
            # Finished jobs stay visible to squeue for 10 minutes: the SLURM executor's status
            # queries (squeue: this cluster keeps no accounting database for sacct).
            "MinJobAge=600",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            f"NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN",
            f"PartitionName={PARTITION} Nodes={node} Default=YES MaxTime=INFINITE State=UP",
            "",
        ])
    )  # fmt: skip
    return conf


def _wait(what: str, ready, cluster: Cluster, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ready():
            return
        for proc in cluster.processes:
            if proc.poll() is not None:
                raise RuntimeError(f"{what}: a daemon exited ({proc.args})\n{cluster.log()}")
        time.sleep(0.5)
    raise RuntimeError(f"{what}: not ready in {seconds:.0f} s\n{cluster.log()}")


@contextmanager
def running(root: Path, cpus: int = 2, memory_mb: int | None = None) -> Iterator[Cluster]:
    """munged, slurmctld and slurmd under ``root``; yields when the node takes jobs."""
    for sub in ("state", "spool", "log", "munge"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    node = socket.gethostname().split(".")[0]
    if memory_mb is None:
        total_kb = next(
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal:")
        )
        # what slurmd sees, less a margin (tests/fixtures/slurm-test-cluster.yaml asks 8000)
        memory_mb = total_kb // 1024 - 1024
    key = root / "munge" / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o400)
    munge_socket = root / "munge" / "munge.socket"
    conf = _write_conf(root, node, cpus, memory_mb, munge_socket)
    # The SLURM executor's job step drops every SLURM_* variable, SLURM_CONF among them, before
    # its nested srun; a real cluster's nodes read /etc/slurm/slurm.conf, this one's srun finds
    # its file through a wrapper first on PATH that sets SLURM_CONF again.
    wrappers = root / "bin"
    wrappers.mkdir(exist_ok=True)
    srun = wrappers / "srun"
    srun.write_text(f'#!/bin/sh\nSLURM_CONF={conf} exec {_binary("srun")} "$@"\n')
    srun.chmod(0o755)
    path = f"{wrappers}{os.pathsep}{os.environ.get('PATH', '')}"
    cluster = Cluster(
        root, node, cpus, memory_mb, env={**os.environ, "SLURM_CONF": str(conf), "PATH": path}
    )
    for var in [v for v in cluster.env if v.startswith(("SLURM_JOB", "SLURM_STEP"))]:
        cluster.env.pop(var)

    def start(*args: str) -> None:
        log = (root / "log" / f"{Path(args[0]).name}.out").open("ab")
        cluster.processes.append(
            subprocess.Popen(list(args), stdout=log, stderr=subprocess.STDOUT, env=cluster.env,
                             start_new_session=True)
        )  # fmt: skip

    try:
        start(
            _binary("munged"), "--foreground", "--force", f"--socket={munge_socket}",
            f"--key-file={key}", f"--pid-file={root / 'munge' / 'munged.pid'}",
            f"--log-file={root / 'log' / 'munged.log'}", f"--seed-file={root / 'munge' / 'seed'}",
        )  # fmt: skip
        _wait("munged", munge_socket.exists, cluster, 20)
        start(_binary("slurmctld"), "-D", "-i", "-f", str(conf))
        start(_binary("slurmd"), "-D", "-f", str(conf), "-N", node)

        def idle() -> bool:
            done = cluster.run("sinfo", "--noheader", "--format=%T", check=False)
            return done.returncode == 0 and done.stdout.strip() in ("idle", "mixed")

        _wait("slurm node", idle, cluster, 90)
        yield cluster
    finally:
        if cluster.processes:
            cluster.run("scancel", "--full", f"--user={_user()}", check=False)
        for proc in reversed(cluster.processes):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in cluster.processes:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
