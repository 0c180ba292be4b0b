"""What the workflow plans, as a comparable snapshot: every job of `snakemake -n -p` for the smoke,
default and paper presets (all five libraries, all four regimes), locally and under the googlebatch
profile. A refactoring that must not change behaviour keeps the snapshot identical.

Per job it records the rule, its outputs, threads, the resources a scheduler sees and the engine's
command-line flags (as a set: order and a flag given twice with the same value do not count).

    python tools/checks/plan_snapshot.py --save /tmp/before.json      # on the old code
    python tools/checks/plan_snapshot.py --compare /tmp/before.json   # on the new code

``--presets smoke --local-only`` snapshots a part of it (the same part on both sides).

Prints the job count per rule and configuration; with --compare, every difference, and exits 1
when there is one.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EVERYTHING = [
    "machine=snapshot",
    "libraries=[albumentationsx,torchvision,kornia,pillow,dali]",
    "regimes=[micro,cpu_dataloader,gpu_dataloader,dali]",
]
PRESETS = ("smoke", "default", "paper")


def dry_run(preset: str, cloud: bool, scratch: Path) -> str:
    cmd = [sys.executable, "-m", "snakemake", "-n", "-p", "-s", str(REPO / "Snakefile")]
    cmd += ["-d", str(scratch), "--config", f"preset={preset}"]
    cmd += EVERYTHING
    if cloud:
        cmd += [
            "--workflow-profile", str(REPO / "profiles" / "googlebatch"),
            "--default-storage-provider", "fs",
            "--default-storage-prefix", str(scratch / "bucket"),
        ]  # fmt: skip
    done = subprocess.run(cmd, cwd=scratch, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"dry-run failed ({preset}, cloud={cloud}):\n{done.stderr[-3000:]}")
    return done.stdout + done.stderr


def engine_flags(shell: str) -> list[str]:
    """The engine's flags (after the launcher's `--`), sorted, duplicates folded."""
    words = shlex.split(shell.split("2>&1")[0])
    if "--" not in words:
        return []
    words = words[words.index("--") + 1 :]
    pairs, flag = set(), None
    for word in words:
        if word.startswith("--"):
            if flag is not None:
                pairs.add(flag)
            flag = word
        elif flag is not None:
            pairs.add(f"{flag} {word}")
            flag = None
        else:
            pairs.add(word)
    if flag is not None:
        pairs.add(flag)
    return sorted(pairs)


def jobs(text: str) -> list[dict[str, object]]:
    """One record per planned job from the dry-run's printed blocks."""
    out: list[dict[str, object]] = []
    current: dict[str, object] | None = None
    for line in text.splitlines():
        # A job of a group (the googlebatch profile's) is printed indented inside its group.
        if m := re.match(r"^\s*(?:local)?rule (\w+):$", line):
            current = {"rule": m.group(1)}
            out.append(current)
            continue
        if current is None:
            continue
        if m := re.match(r"^\s+(output|threads|resources|wildcards): (.*)$", line):
            key, value = m.groups()
            if key == "resources":  # tmpdir differs between machines
                value = ", ".join(v for v in value.split(", ") if not v.startswith("tmpdir="))
            current[key] = value
        elif line.startswith("Shell command: ") and " -- -m augbench." in line:
            current["engine"] = engine_flags(line.removeprefix("Shell command: "))
    return out


def snapshot(
    presets: tuple[str, ...] = PRESETS, clouds: tuple[bool, ...] = (False, True)
) -> dict[str, list[dict[str, object]]]:
    found = {}
    for cloud in clouds:
        for preset in presets:
            with tempfile.TemporaryDirectory(prefix="plan-snapshot-") as tmp:
                scratch = Path(tmp)
                # The workflow is run from a scratch directory (--snakefile), so no result of
                # this checkout changes what is planned.
                text = dry_run_in(scratch, preset, cloud)
            label = f"{preset}{' googlebatch' if cloud else ''}"
            found[label] = sorted(jobs(text), key=lambda j: json.dumps(j, sort_keys=True))
    return found


def dry_run_in(scratch: Path, preset: str, cloud: bool) -> str:
    return (
        dry_run(preset, cloud, scratch)
        .replace(str(scratch), "<scratch>")
        .replace(str(REPO), "<repo>")
    )


def counts(found: dict[str, list[dict[str, object]]]) -> str:
    lines = []
    for label, planned in found.items():
        per_rule = Counter(str(j["rule"]) for j in planned)
        body = ", ".join(f"{rule} {n}" for rule, n in sorted(per_rule.items()))
        lines.append(f"{label}: {len(planned)} jobs ({body})")
    return "\n".join(lines)


def compare(before: dict[str, list[dict]], after: dict[str, list[dict]]) -> list[str]:
    """Jobs paired by (configuration, rule, output); per pair, the fields that differ and, for the
    engine's flags, which were removed and which added."""
    out = []
    for label in sorted(set(before) | set(after)):
        old = {(j["rule"], j.get("output")): j for j in before.get(label, [])}
        new = {(j["rule"], j.get("output")): j for j in after.get(label, [])}
        for key in sorted(set(old) - set(new)):
            out.append(f"{label}: job only before: {key}")
        for key in sorted(set(new) - set(old)):
            out.append(f"{label}: job only after: {key}")
        for key in sorted(set(old) & set(new)):
            a, b = old[key], new[key]
            for field in sorted(set(a) | set(b)):
                if a.get(field) == b.get(field):
                    continue
                if field == "engine":
                    gone = sorted(set(a.get(field, [])) - set(b.get(field, [])))
                    added = sorted(set(b.get(field, [])) - set(a.get(field, [])))
                    out.append(f"{label}: {key[0]} {key[1]}: flags removed {gone} added {added}")
                else:
                    out.append(
                        f"{label}: {key[0]} {key[1]}: {field} {a.get(field)!r} -> {b.get(field)!r}"
                    )
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--save", type=Path)
    p.add_argument("--compare", type=Path)
    p.add_argument(
        "--presets", nargs="+", choices=PRESETS, default=list(PRESETS),
        help="snapshot these presets only (a quicker look; compare like with like)",
    )  # fmt: skip
    p.add_argument("--local-only", action="store_true", help="leave out the googlebatch plans")
    args = p.parse_args()
    found = snapshot(tuple(args.presets), (False,) if args.local_only else (False, True))
    print(counts(found))
    if args.save:
        args.save.write_text(json.dumps(found, indent=1, sort_keys=True))
    if args.compare:
        differences = compare(json.loads(args.compare.read_text()), found)
        print("\n".join(differences) or "identical")
        return 1 if differences else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
