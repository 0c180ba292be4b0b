"""The offline GPU node's run, started by tools/gpu_node/prove.sh once the bundle is installed.

Steps, in order, each a subprocess with its own time budget (augbench.gpu_node.plan), killed with
its whole process group when the budget is spent; a failing step is recorded and the next one
runs:

1. ``environment``: what this interpreter has (torch, the plan's libraries and the bundle's
   packages, the CUDA device and driver) and the machine label;
2. ``dataset``: the workflow's default dataset, built and staged here (augbench.gpu_node.
   node_dataset), under the key the plan's result paths use;
3. ``sync_check``: the GPU timer's synchronisation check and its negative control
   (augbench.gpu_node.sync_check; on a CPU its stand-in);
4. ``supply``, ``training``, ``gpu_dataloader``, ``pipeline``, ``batch_shared``: the plan's
   engine jobs, each started through ``augbench.planning.provision --manager system`` (this
   interpreter is the env; its marker records the versions installed and where they differ from the
   lock) with the flags the workflow's rule passes. A job the step's remaining budget cannot hold
   (predicted from the step's jobs of the same kind so far) is not started, and says so.

``--resume EARLIER_OUT`` completes a run that was cut short: on the same machine (its label is
checked), the earlier run's result files are kept, its ok jobs and a passed sync check are not
run again, and the rest runs; OUT then holds the whole set, with the earlier summary and log.

Progress: one labelled line per event with the time since prove.sh started, on stdout and in
OUT/prove.log; the engines' own output goes to the log, their row status lines to both. At the
end OUT holds results.tar.gz (the result files in the workflow's layout, the env markers, the
dataset manifest, the sync check, the plan as run), summary.md, summary.json and prove.log.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from augbench.gpu_node import plan as node_plan
from augbench.gpu_node import summary

# An engine's row status line (augbench.results.status_line): "<label> | <name>: <status> ...".
STATUS_LINE = re.compile(r"^\S.* \| [^|]+: (ok|early_stopped|unsupported|skipped|error)\b")
STOP_GRACE_S = 5.0


@dataclass
class StepRecord:
    """One step as it ran: ``status`` ok | partial (jobs left out for the budget, or the sync
    check's CPU stand-in where CUDA works) | failed | not run."""

    name: str
    budget_s: float
    status: str = "not run"
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    jobs: list[dict[str, Any]] = field(default_factory=list)


class Progress:
    """Labelled lines with the time since prove.sh started, on stdout and in the log."""

    def __init__(self, log: Path, started: float) -> None:
        self.started = started
        self.log: IO[str] = log.open("a", encoding="utf-8", errors="replace")
        self.lock = threading.Lock()

    def elapsed(self) -> float:
        return time.time() - self.started

    def say(self, text: str) -> None:
        line = f"[{self.elapsed():6.1f}s] {text}"
        with self.lock:
            print(line, flush=True)
            self.log.write(line + "\n")
            self.log.flush()

    def raw(self, text: str) -> None:
        with self.lock:
            self.log.write(text)
            self.log.flush()


@dataclass
class Context:
    bundle: Path
    work: Path
    out: Path
    mode: str
    plan: dict[str, Any]
    progress: Progress
    deadline: float  # time.time() by which every step must have ended
    machine: str = node_plan.MACHINE
    manifest: Path | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    # A resumed run: the earlier run's summary, and the result files of its ok jobs.
    earlier: dict[str, Any] | None = None
    earlier_outputs: set[str] = field(default_factory=set)
    # What the plan read of the library declarations where it was built (plan.json's ``node``:
    # augbench.gpu_node.libraries.facts); empty: this checkout's declarations.
    node: dict[str, Any] = field(default_factory=dict)

    @property
    def results(self) -> Path:
        return self.work / "results"

    @property
    def project(self) -> Path:
        """The unpacked project (the parent of the augbench package on sys.path)."""
        import augbench

        return Path(augbench.__file__).resolve().parents[1]


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """End a timed-out job and everything it started (its own process group: DataLoader workers
    and recipe processes included): SIGTERM, a grace period, then SIGKILL for what is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:  # the whole group is gone
            break
        try:
            proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            continue
    proc.wait()


@dataclass
class Finished:
    """How a job's process ended: exit code (None if it could not be stopped), seconds taken,
    whether its budget stopped it, and its last line of output (the error of a failed job)."""

    code: int | None
    seconds: float
    timed_out: bool
    last_line: str


def run_process(
    ctx: Context, cmd: list[str], seconds: float, env: dict[str, str] | None = None,
    echo: re.Pattern[str] | None = STATUS_LINE,
) -> Finished:  # fmt: skip
    """Run ``cmd`` within ``seconds``. Its output goes to the log; lines matching ``echo`` (row
    status lines) also to stdout, with the time."""
    start = time.monotonic()
    ctx.progress.raw(f"$ {' '.join(cmd)[:2000]}\n")
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=ctx.work,
        env={**os.environ, **(env or {})}, start_new_session=True,
    )  # fmt: skip
    last = [""]

    def pump() -> None:
        assert proc.stdout is not None
        for chunk in iter(proc.stdout.readline, b""):
            text = chunk.decode("utf-8", errors="replace")
            pieces = [p.strip() for p in re.split(r"[\r\n]", text) if p.strip()]
            if pieces:
                last[0] = pieces[-1]
            echoed = [p for p in pieces if echo is not None and echo.search(p)]
            if echoed:  # into the log once, with the time
                for line in echoed:
                    ctx.progress.say(line)
            else:
                ctx.progress.raw(text)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=max(seconds, 0.1))
    except subprocess.TimeoutExpired:
        timed_out = True
        stop_group(proc)
    except KeyboardInterrupt:  # its own session does not get the terminal's Ctrl-C
        stop_group(proc)
        raise
    reader.join(timeout=STOP_GRACE_S)
    return Finished(proc.returncode, time.monotonic() - start, timed_out, last[0])


def failure(done: Finished) -> str:
    """Why a step's process did not succeed, in one line."""
    if done.timed_out:
        return f"stopped at its budget after {done.seconds:.0f} s"
    return f"exited with {done.code}: {done.last_line[:300] or '(no output)'}"


def step_seconds(ctx: Context, record: StepRecord) -> float:
    """What a step may still use: its own budget, and never past the overall deadline."""
    return min(record.budget_s - record.seconds, ctx.deadline - time.time())


def python() -> list[str]:
    """This interpreter (the node's, with the bundle on PYTHONPATH) for every step."""
    return [sys.executable]


# -- steps -----------------------------------------------------------------------------------------
def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def environment_step(ctx: Context, record: StepRecord, machine: str | None) -> None:
    probe = ctx.work / "environment.json"
    cmd = [*python(), "-m", "augbench.gpu_node.environment", "--output", str(probe)]
    if (ctx.bundle / "plan.json").is_file():  # what to report: the plan's libraries and packages
        cmd += ["--plan", str(ctx.bundle / "plan.json")]
    done = run_process(ctx, cmd, step_seconds(ctx, record), echo=None)
    record.seconds = done.seconds
    found: dict[str, Any] = json.loads(probe.read_text()) if probe.is_file() else {}
    if done.code != 0 or not found:
        record.status = "failed"
        record.notes.append(failure(done))
    else:
        failed = [m for m, v in found["imports"].items() if not v["ok"]]
        record.status = "failed" if failed else "ok"
        record.notes += [f"{m} does not import: {found['imports'][m]['error']}" for m in failed]
    ctx.environment = found
    cuda = found.get("cuda_env", {})
    if machine:
        ctx.machine = machine
    else:
        label = found.get("machine_label") or "gpu-node"
        if cuda.get("verdict") == "ok" and cuda.get("device_name"):
            label = f"{label}-{slug(cuda['device_name'])}"
        ctx.machine = f"{label}-dry" if ctx.mode == "dry" else label
    packages = found.get("packages", {})
    versions = "".join(
        f", {lib['name']} {packages.get(lib['distribution'])}"
        for lib in ctx.node.get("libraries", [])
    )
    ctx.progress.say(
        f"environment | {record.status}: Python {found.get('python_version')}, torch "
        f"{packages.get('torch')}{versions}; CUDA {cuda.get('verdict')}"
        f"{' (' + str(cuda.get('device_name')) + ')' if cuda.get('device_name') else ''}; "
        f"machine {ctx.machine}"
    )


def dataset_step(ctx: Context, record: StepRecord) -> None:
    facts = ctx.plan["dataset"]
    cmd = [
        *python(), "-m", "augbench.gpu_node.node_dataset", "--sources",
        str(ctx.bundle / "dataset-sources"), "--work", str(ctx.work / "data"),
        "--name", facts["name"], "--images", str(facts["images"]), "--key", facts["key"],
    ]  # fmt: skip
    echo = re.compile(r"^dataset \| ")
    done = run_process(ctx, cmd, step_seconds(ctx, record), echo=echo)
    record.seconds = done.seconds
    manifest = ctx.work / "data" / facts["key"] / "manifest.json"
    if done.code == 0 and manifest.is_file():
        record.status = "ok"
        ctx.manifest = manifest
    else:
        record.status = "failed"
        record.notes.append(failure(done))


def sync_step(ctx: Context, record: StepRecord) -> None:
    """The CUDA sleep-kernel check where CUDA works (it needs the dataset's images), else the
    stream timer's CPU stand-in; a GPU node that only got the stand-in is ``partial``."""
    cuda = ctx.environment.get("cuda_env", {}).get("verdict") == "ok"
    kernel = cuda and ctx.manifest is not None
    output = ctx.results / "checks" / "sync_check.json"
    if ctx.earlier is not None and output.is_file():
        earlier = {step["name"]: step for step in ctx.earlier["steps"]}.get("sync_check", {})
        if earlier.get("status") == "ok" and json.loads(output.read_text()).get("passed"):
            record.status = "ok"
            record.notes.append("passed in the earlier run, kept")
            ctx.progress.say("sync_check | passed in the earlier run, kept")
            return
    cmd = [*python(), "-m", "augbench.gpu_node.sync_check", "--output", str(output)]
    if kernel:
        cmd += ["--device", "cuda", "--manifest", str(ctx.manifest)]
    else:
        cmd += ["--device", "cpu"]
        record.notes.append(
            "no dataset: the stream timer's CPU stand-in ran instead of the CUDA check"
            if cuda
            else "no CUDA device: the stream timer's CPU stand-in ran; the CUDA sleep-kernel "
            "check was skipped"
        )
    done = run_process(ctx, cmd, step_seconds(ctx, record), echo=re.compile(r"^sync_check \| "))
    record.seconds = done.seconds
    if done.code == 0 and output.is_file():
        record.status = "partial" if cuda and not kernel else "ok"
    else:
        record.status = "failed"
        failed_check = output.is_file() and not done.timed_out
        record.notes.append("the check failed (see below)" if failed_check else failure(done))


def engine_command(ctx: Context, job: dict[str, Any], output: Path) -> list[str]:
    """``augbench.planning.provision --manager system ... -- <the rule's engine flags> --output``,
    as the workflow's TIMED_SHELL launches a job (workflow/rules/common.smk)."""
    library = job["library"]
    words = [w.replace(node_plan.MACHINE, ctx.machine) for w in job["engine"]]
    return [
        *python(), "-m", "augbench.planning.provision", "--library", library, "--manager", "system",
        "--allocator", "glibc", "--lock", str(ctx.project / "envs" / f"{library}.txt"),
        "--manifest", str(ctx.manifest), "--scratch", str(ctx.work / "scratch"),
        "--", *words, "--output", str(output),
    ]  # fmt: skip


def row_counts(path: Path) -> dict[str, int]:
    rows = json.loads(path.read_text())["results"]
    counts: dict[str, int] = {}
    for row in rows.values():
        counts[row.get("status", "?")] = counts.get(row.get("status", "?"), 0) + 1
    return counts


def job_kind(job: dict[str, Any]) -> tuple[str, str]:
    """Jobs whose seconds per recipe predict each other: the same rule and scope (a decode-scope
    recipe starts DataLoader workers and decodes; a memory-scope one does neither)."""
    return job["rule"], job["wildcards"].get("scope", "")


def engine_step(ctx: Context, record: StepRecord, jobs: list[dict[str, Any]]) -> None:
    if ctx.manifest is None:
        record.status = "failed"
        record.notes.append("no dataset (the dataset step failed): no job started")
        return
    spent_per_recipe: dict[tuple[str, str], list[float]] = {}
    for job in jobs:
        left = step_seconds(ctx, record)
        entry: dict[str, Any] = {"label": job["label"], "recipes": job["recipes"]}
        record.jobs.append(entry)
        # The plan's paths are the workflow's (results/raw/..., results/pipelines/raw/...).
        output = ctx.work / job["output"].replace(node_plan.MACHINE, ctx.machine)
        relative = str(output.relative_to(ctx.work))
        if relative in ctx.earlier_outputs and output.is_file():
            entry.update(status="ok", earlier=True, output=relative, rows=row_counts(output))
            ctx.progress.say(f"{record.name} | {job['label']}: measured by the earlier run, kept")
            continue
        same = spent_per_recipe.get(job_kind(job)) or [
            v for values in spent_per_recipe.values() for v in values
        ]
        predicted = sum(same) / len(same) * job["recipes"] if same else None
        if left < 1 or (predicted is not None and predicted > left):
            entry["status"] = "not started"
            binding = (  # step_seconds: the smaller of the two
                f"the step's budget ({record.budget_s:.0f} s)"
                if left >= record.budget_s - record.seconds
                else "the run's deadline"
            )
            entry["reason"] = (
                f"{binding} would be exceeded: predicted {predicted or 0:.0f} s, "
                f"{max(left, 0):.0f} s left"
            )
            ctx.progress.say(f"{record.name} | {job['label']}: not started ({entry['reason']})")
            continue
        entry["output"] = relative
        ctx.progress.say(f"{record.name} | {job['label']}: {job['recipes']} recipe(s)")
        done = run_process(ctx, engine_command(ctx, job, output), left, env=job["env"])
        record.seconds += done.seconds
        spent_per_recipe.setdefault(job_kind(job), []).append(done.seconds / max(job["recipes"], 1))
        entry["seconds"] = round(done.seconds, 1)
        if output.is_file() and done.code == 0:
            entry["status"] = "ok"
            entry["rows"] = row_counts(output)
        else:
            entry["status"] = "timed out" if done.timed_out else "failed"
            entry["reason"] = failure(done) + ("" if done.timed_out else ", no result file")
        rows = entry.get("rows", {})
        ctx.progress.say(
            f"{record.name} | {job['label']}: {entry['status']} in {done.seconds:.1f} s"
            + (f", rows {json.dumps(rows, sort_keys=True)}" if rows else "")
            + (f" ({entry['reason']})" if "reason" in entry else "")
        )
    states = {j["status"] for j in record.jobs}
    record.status = (
        "failed" if states & {"failed", "timed out"}
        else "partial" if "not started" in states
        else "ok"
    )  # fmt: skip


def take_earlier(ctx: Context, earlier_out: Path) -> None:
    """A resumed run starts from the earlier run's result files; it keeps that run's summary and
    log beside them (results/gpu_node/earlier_run_N/)."""
    with tarfile.open(earlier_out / "results.tar.gz") as tar:
        tar.extractall(ctx.work, filter="data")
    ctx.earlier = json.loads((earlier_out / "summary.json").read_text())
    ctx.earlier_outputs = {
        job["output"]
        for step in ctx.earlier["steps"]
        for job in step["jobs"]
        if job.get("status") == "ok" and job.get("output")
    }
    own = ctx.results / "gpu_node"
    number = 1 + sum(1 for _ in own.glob("earlier_run_*")) if own.is_dir() else 1
    kept = own / f"earlier_run_{number}"
    kept.mkdir(parents=True)
    for name in ("summary.json", "summary.md", "prove.log"):
        if (earlier_out / name).is_file():
            shutil.copyfile(earlier_out / name, kept / name)


# -- the run ---------------------------------------------------------------------------------------
def gather(ctx: Context) -> None:
    """What the archive holds beside the result files: env markers, the dataset manifest, the
    plan as run (machine label in place), the environment found."""
    markers = ctx.work / "scratch" / "envs"
    for marker in sorted(markers.glob("*.json")) if markers.is_dir() else []:
        (ctx.results / "envs").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(marker, ctx.results / "envs" / marker.name)
    if ctx.manifest is not None:
        target = ctx.results / "data" / ctx.plan["dataset"]["key"] / "manifest.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ctx.manifest, target)
    own = ctx.results / "gpu_node"
    own.mkdir(parents=True, exist_ok=True)
    plan_text = json.dumps(ctx.plan, indent=1).replace(node_plan.MACHINE, ctx.machine)
    (own / "plan.json").write_text(plan_text + "\n")
    (own / "environment.json").write_text(json.dumps(ctx.environment, indent=1) + "\n")


def archive(ctx: Context) -> Path:
    target = ctx.out / "results.tar.gz"
    with tarfile.open(target, "w:gz") as tar:
        tar.add(ctx.results, arcname="results")
    return target


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--started", type=float, required=True, help="prove.sh's start (epoch s)")
    p.add_argument("--mode", choices=list(node_plan.MODES), required=True)
    p.add_argument("--machine", default=None, help="machine label (default: derived here)")
    p.add_argument("--budget", type=float, default=None, help="whole run, s (default: plan's)")
    p.add_argument("--resume", type=Path, default=None, help="an earlier run's OUT to complete")
    args = p.parse_args(argv)
    bundle_doc = json.loads((args.bundle / "bundle.json").read_text())
    full_plan = json.loads((args.bundle / "plan.json").read_text())
    plan = full_plan["modes"][args.mode]
    args.work.mkdir(parents=True, exist_ok=True)
    progress = Progress(args.out / "prove.log", args.started)
    total_budget = args.budget or plan.get("total_budget_s", full_plan["total_budget_s"])
    deadline = args.started + total_budget - full_plan["finish_reserve_s"]
    ctx = Context(args.bundle, args.work, args.out, args.mode, plan, progress, deadline)
    ctx.node = full_plan.get("node") or {}
    if args.resume is not None:
        take_earlier(ctx, args.resume)
        progress.say(
            f"resume | {args.resume}: {len(ctx.earlier_outputs)} result files kept "
            f"(machine {ctx.earlier['machine']})"  # type: ignore[index]
        )
    budgets = plan["budgets_s"]
    records = {name: StepRecord(name, float(budgets[name])) for name in budgets}
    steps = [
        ("environment", lambda r: environment_step(ctx, r, args.machine)),
        ("dataset", lambda r: dataset_step(ctx, r)),
        ("sync_check", lambda r: sync_step(ctx, r)),
        *((name, lambda r, name=name: engine_step(ctx, r, plan["steps"][name]))
          for name in plan["steps"]),
    ]  # fmt: skip
    steps = [(name, run) for name, run in steps if name in records]  # the mode's steps
    try:
        for name, run in steps:
            record = records[name]
            progress.say(f"{name} | start (budget {record.budget_s:.0f} s)")
            earlier_machine = (ctx.earlier or {}).get("machine", ctx.machine)
            if name == "dataset" and earlier_machine != ctx.machine:
                record.notes.append("not run: --resume names a run of another machine")
                progress.say(
                    f"resume | the earlier run was measured on {earlier_machine}, this is "
                    f"{ctx.machine}: rows of two machines are not merged; run without --resume"
                )
                # OUT must not pass the other machine's files off as this run's.
                shutil.rmtree(ctx.results, ignore_errors=True)
                ctx.earlier, ctx.earlier_outputs = None, set()
                break
            try:
                run(record)
            except Exception as exc:  # one step's failure never stops the others
                record.status = "failed"
                record.notes.append(f"{type(exc).__name__}: {exc}")
                progress.raw(f"{name} failed: {exc!r}\n")
            progress.say(f"{name} | {record.status} ({record.seconds:.1f} s)")
    finally:
        gather(ctx)
        elapsed = progress.elapsed()
        doc = summary.summarize(
            mode=args.mode, machine=ctx.machine, elapsed_s=elapsed,
            budget_s=total_budget, steps=[asdict(r) for r in records.values()],
            results=ctx.results, environment=ctx.environment, bundle=bundle_doc, plan=plan,
            earlier=ctx.earlier, node=ctx.node or None,
        )  # fmt: skip
        (args.out / "summary.json").write_text(json.dumps(doc, indent=1) + "\n")
        (args.out / "summary.md").write_text(summary.markdown(doc))
        archive(ctx)
        progress.say(
            f"prove | done in {progress.elapsed():.1f} s: {args.out}/results.tar.gz, "
            "summary.md, summary.json, prove.log"
        )
    failed = [r.name for r in records.values() if r.status in ("failed", "not run")]
    if failed:
        progress.say(f"prove | steps that failed: {', '.join(failed)} (see summary.md)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
