"""The node run's summary: what ran, row counts, headline numbers, what did not run and why.

:func:`summarize` reads the run's result files (the workflow's ``{"metadata", "results"}``
format), the env markers and the sync check into one JSON document (``summary.json``);
:func:`markdown` renders it (``summary.md``). The node's interpreter runs this: the standard
library, and augbench.planning.regimes for the run of a result path (it needs numpy, which the node
has). Which libraries it names, the A/A pairs and the packages it compares with the locks first
come from the plan (``node``: what augbench.gpu_node.libraries read of the library declarations
where the bundle was built), else from this checkout's declarations.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from augbench.gpu_node.plan import DRY_CPU_INPUT_SIZE
from augbench.result_format import MEDIAN_THROUGHPUT

NON_OK_LISTED = 40
# The engines' result families in the order the node runs them.
FAMILIES = ("gpu_dataloader", "pipeline", "training")
# Where a mode's OUT is committed: each training check in a folder of its own beside the node
# run, not over its files (both write the supply's and the training's first-run result paths).
COMMIT_TO = {
    "training_check": "docs/results/<machine>/<date>-training-check-<N>/",
    "calibration": "docs/results/<machine>/<date>-gpu-calibration-<N>/",
}
COMMIT_TO_DEFAULT = "docs/results/<machine>/<date>-node-run/"


def _node() -> dict[str, Any]:
    """This checkout's reading of the library declarations (what a plan carries as ``node``)."""
    from augbench.gpu_node.libraries import facts

    return facts()


def result_files(results: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """(family, path relative to ``results``, document) of every result file: family is the
    regime, or ``pipeline`` for the pipelines' files."""
    out = []
    for path in sorted(results.rglob("*.json")):
        rel = path.relative_to(results)
        if rel.parts[0] not in ("raw", "pipelines"):
            continue
        doc = json.loads(path.read_text())
        if not isinstance(doc, dict) or "results" not in doc or "metadata" not in doc:
            continue
        family = "pipeline" if rel.parts[0] == "pipelines" else doc["metadata"].get("regime", "?")
        out.append((family, str(rel), doc))
    return out


def counts(files: list[tuple[str, str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Rows per engine (``pipeline``: the GPU DataLoader's pipeline rows) by status."""
    out: dict[str, dict[str, Any]] = {family: {"files": 0, "ok": 0, "not_ok": 0, "by_status": {}}
                                      for family in FAMILIES}  # fmt: skip
    for family, _, doc in files:
        entry = out.setdefault(family, {"files": 0, "ok": 0, "not_ok": 0, "by_status": {}})
        entry["files"] += 1
        for row in doc["results"].values():
            status = row.get("status", "?")
            entry["by_status"][status] = entry["by_status"].get(status, 0) + 1
            entry["ok" if status == "ok" else "not_ok"] += 1
    return out


def cell(row: dict[str, Any]) -> str:
    if row.get("status") == "ok":
        return f"{row[MEDIAN_THROUGHPUT]:.0f}"
    return str(row.get("status"))


def gpu_table(
    files: list[tuple[str, str, dict[str, Any]]], family: str, order: list[str] | None = None
) -> dict[str, Any]:
    """Median img/s per recipe (rows) and library / scope (and decoder, where nvJPEG) /
    randomness (columns, in the plan's order: augbench.gpu_node.plan.gpu_priority over the
    node's libraries, ``order``)."""
    from augbench.gpu_node.plan import gpu_priority

    if order is None:
        order = [lib["name"] for lib in _node()["libraries"]]

    columns: dict[str, tuple[bool, bool, int]] = {}
    rows: dict[str, dict[str, str]] = {}
    peak = 0.0
    for fam, _, doc in files:
        if fam != family:
            continue
        meta = doc["metadata"]
        for name, row in doc["results"].items():
            w = {
                "library": str(meta.get("library")),
                "scope": str(row.get("scope", meta.get("scope"))),
                "randomness": str(row.get("randomness", meta.get("variant"))),
                "decoder": "-nvjpeg" if row.get("decoder") == "nvjpeg" else "",
            }
            scope = w["scope"] + (" nvjpeg" if w["decoder"] else "")
            column = f"{w['library']} {scope} {w['randomness']}"
            columns[column] = gpu_priority(w, order)
            rows.setdefault(name, {})[column] = cell(row)
            peak = max(peak, float(row.get("gpu_peak_allocated_mb") or 0.0))
    ordered = sorted(columns, key=lambda c: columns[c])
    return {"columns": ordered, "rows": rows, "gpu_peak_allocated_mb_max": peak or None}


def training_table(files: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    from augbench.planning.regimes import without_run

    out = []
    for family, rel, doc in files:
        if family != "training":
            continue
        _, run = without_run(rel)
        for name, row in doc["results"].items():
            entry = {
                "recipe": name,
                "run": run,
                "workers": row.get("workers"),
                "feed": row.get("feed"),
                "decoder": row.get("decoder") or "native",
                "variant": row.get("variant"),
                "status": row.get("status"),
            }
            if row.get("status") == "ok":
                entry |= {
                    k: row.get(k)
                    for k in (
                        "images_per_second", "data_wait_fraction", "model_img_per_s",
                        "loader_img_per_s", "data_wait_ci_low", "data_wait_ci_high",
                        "gpu_peak_allocated_mb",
                    )
                }  # fmt: skip
            else:
                entry["reason"] = row.get("reason")
            out.append(entry)
    return sorted(out, key=lambda e: (int(e["workers"] or 0), str(e["feed"]), e["run"]))


def cores_per_gpu(training: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """How many CPU cores one GPU needs, per recipe and feed (and decoder, where not the
    workers': ``gpu (nvjpeg)``), from the training rows (their :func:`training_table` entries):
    at each worker count the data wait's verdict
    (augbench.planning.starvation_model.verdict) over every run's interval together, so a count
    is fed only where each run's whole interval lies below policy.FED_WAIT; the fewest fed count
    with no larger count starved (``fewest_fed``), and the cores that takes: the workers and the
    training process. ``monotone`` is False where more workers fared worse."""
    from augbench.planning.starvation_model import fewest_fed, verdict

    curves: dict[tuple[str, str], dict[int, list[dict[str, Any]]]] = {}
    for entry in training:
        decoder = entry.get("decoder") or "native"
        feed = str(entry["feed"]) + ("" if decoder == "native" else f" ({decoder})")
        key = (str(entry["recipe"]), feed)
        curves.setdefault(key, {}).setdefault(int(entry["workers"] or 0), []).append(entry)
    out = []
    for (recipe, feed), by_workers in sorted(curves.items()):
        verdicts: dict[int, str] = {}
        for workers, entries in sorted(by_workers.items()):
            ok = [e for e in entries if e["status"] == "ok"]
            lows = [e.get("data_wait_ci_low") for e in ok]
            highs = [e.get("data_wait_ci_high") for e in ok]
            if not ok or None in lows or None in highs:
                verdicts[workers] = "unknown"
                continue
            verdicts[workers] = verdict(min(lows), max(highs))  # type: ignore[type-var]
        fewest, monotone = fewest_fed(verdicts)
        out.append(
            {
                "recipe": recipe,
                "feed": feed,
                "verdicts": {str(w): v for w, v in verdicts.items()},
                "fewest_fed_workers": fewest,
                "cores": None if fewest is None else fewest + 1,
                "monotone": monotone,
                "runs": max(len(e) for e in by_workers.values()),
            }
        )
    return out


def cores_answer(curve: dict[str, Any]) -> str:
    """One line: how many cores feed one GPU with this recipe and feed, or that none measured
    does."""
    counts = sorted(int(w) for w in curve["verdicts"])
    if curve["cores"] is not None:
        text = (
            f"fed from {curve['fewest_fed_workers']} workers: {curve['cores']} cores per GPU "
            "(the workers and the training process)"
        )
    elif curve["verdicts"][str(counts[-1])] == "starved":
        text = f"starved at every count up to {counts[-1]} workers: more cores, or another feed"
    else:
        text = f"not decided up to {counts[-1]} workers (no count fed on every run's interval)"
    return text + ("" if curve["monotone"] else "; more workers fared worse at some count")


def calibration_table(
    results: Path, pairs: list[list[Any]] | list[tuple[str, str, str | None]] | None = None
) -> dict[str, Any]:
    """The A/A step's ``pairs`` (the plan's: augbench.gpu_node.libraries.calibration_pairs), each
    row measured under both names decided as the answer decides a margin: the ratio interval
    over the runs' medians (one value per run, each run a process). A "faster" or "slower"
    verdict is a false call."""
    from augbench import decision
    from augbench.gpu_node.plan import CALIBRATION_DIR
    from augbench.policy import CALIBRATION_MAX_FALSE_CALL_RATE, CALIBRATION_MIN_PAIRS

    if pairs is None:
        pairs = _node()["calibration_pairs"]

    folder = results / CALIBRATION_DIR.removeprefix("results/")
    runs: dict[tuple[str, str, str], list[float]] = {}
    for path in sorted(folder.rglob("*.json")) if folder.is_dir() else []:
        doc = json.loads(path.read_text())
        meta = doc.get("metadata") or {}
        for name, row in (doc.get("results") or {}).items():
            if row.get("status") == "ok" and row.get(MEDIAN_THROUGHPUT):
                key = (str(meta.get("library")), str(meta.get("scope")), name)
                runs.setdefault(key, []).append(float(row[MEDIAN_THROUGHPUT]))
    decided = []
    for a, b, only in pairs:
        for (library, scope, recipe), values_a in sorted(runs.items()):
            values_b = runs.get((b, scope, recipe))
            if library != a or (only and recipe != only) or not values_b:
                continue
            r = decision.ratio_interval(values_a, values_b)
            decided.append(
                {"a": a, "b": b, "scope": scope, "recipe": recipe, "ratio": r.ratio,
                 "low": r.low, "high": r.high, "level": r.level, "runs_a": r.n_a,
                 "runs_b": r.n_b, "verdict": decision.verdict(r)}
            )  # fmt: skip
    at_level = [p for p in decided if p["level"] >= decision.DECISION_LEVEL]
    false_calls = sum(p["verdict"] in (decision.FASTER, decision.SLOWER) for p in at_level)
    passes = len(
        at_level
    ) >= CALIBRATION_MIN_PAIRS and false_calls <= CALIBRATION_MAX_FALSE_CALL_RATE * len(at_level)
    level = f"{decision.DECISION_LEVEL:.0%}"
    if len(at_level) < CALIBRATION_MIN_PAIRS:
        note = (
            f"{len(at_level)} pairs at the {level} level ({len(decided)} measured): fewer than "
            f"{CALIBRATION_MIN_PAIRS}, not passing"
        )
    else:
        note = f"{false_calls} false calls of {len(at_level)}: {'passes' if passes else 'fails'}"
    return {
        "regime": "gpu_dataloader",
        "pairs": len(at_level),
        "measured_pairs": len(decided),
        "false_calls": false_calls,
        "level": decision.DECISION_LEVEL,
        "passes": passes,
        "note": note,
        "rows": decided,
    }


def non_ok_rows(files: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [
        {"file": rel, "row": name, "status": row.get("status"), "reason": row.get("reason")}
        for _, rel, doc in files
        for name, row in doc["results"].items()
        if row.get("status") != "ok"
    ]


def lock_differences(
    results: Path, key_packages: list[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Per library env marker: installed versions that differ from its lock (``key_packages``:
    the plan's, what the GPU engines import: augbench.gpu_node.libraries)."""
    key = set(_node()["key_packages"] if key_packages is None else key_packages)
    out = {}
    for marker in sorted((results / "envs").glob("*.json")):
        doc = json.loads(marker.read_text())
        differs = doc.get("differs_from_lock") or {}
        out[marker.stem] = {
            "manager": doc.get("manager"),
            "lock": Path(str(doc.get("lock"))).name,
            "differs": {k: v for k, v in differs.items() if k in key},
            "other_differences": len([k for k in differs if k not in key]),
        }
    return out


def not_run(
    mode: str,
    steps: list[dict[str, Any]],
    bundle: dict[str, Any],
    sync: dict[str, Any] | None,
    cuda: bool,
    node: dict[str, Any] | None = None,
) -> list[str]:
    node = node or _node()
    out = [f"{name}: not brought to the node: {why}" for name, why in
           (bundle.get("not_brought") or {}).items()]  # fmt: skip
    if mode == "training_check":
        out.append(
            "sync_check, gpu_dataloader and pipeline steps: not part of the training check "
            "(the node mode runs them)"
        )
    elif mode == "calibration":
        out.append(
            "sync_check, supply, training, pipeline and batch-shared steps: not part of the A/A "
            "calibration (the node mode runs them)"
        )
    else:
        out.append(
            f"micro and cpu_dataloader regimes: not part of this proof ({node['micro_timer']} "
            f"and {node['cpu_reference']}, the CPU reference of the GPU/CPU ratio, are not on "
            "the node)"
        )
    for step in steps:
        for job in step["jobs"]:
            if job.get("status") == "not started":
                out.append(f"{step['name']} {job['label']}: {job['reason']}")
            elif job.get("status") in ("failed", "timed out"):
                out.append(f"{step['name']} {job['label']}: {job['status']}: {job['reason']}")
        if step["status"] == "not run":
            out.append(f"{step['name']}: not run")
    if sync and sync.get("cuda_kernel", {}).get("status") == "skipped":
        out.append(f"sync_check CUDA kernel: {sync['cuda_kernel']['reason']}")
    if mode == "dry" and not cuda:
        out.append(
            "dry run: GPU rows measured on CPU tensors (gpu_dataloader --allow-cpu-device, "
            f"training --allow-cpu-device-feed), ResNet-18 at {DRY_CPU_INPUT_SIZE} px on the CPU: "
            "the code paths are exercised, the numbers say nothing about a GPU"
        )
    elif mode == "dry":
        out.append("dry run on a GPU: tiny sizes, a check of the code paths, not measurements")
    return out


def summarize(
    *,
    mode: str,
    machine: str,
    elapsed_s: float,
    budget_s: float,
    steps: list[dict[str, Any]],
    results: Path,
    environment: dict[str, Any],
    bundle: dict[str, Any],
    plan: dict[str, Any],
    earlier: dict[str, Any] | None = None,
    node: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The summary document; ``node``: the plan's reading of the library declarations (None:
    this checkout's)."""
    node = node or _node()
    order = [lib["name"] for lib in node["libraries"]]
    files = result_files(results)
    training = training_table(files)
    sync_path = results / "checks" / "sync_check.json"
    sync = json.loads(sync_path.read_text()) if sync_path.is_file() else None
    return {
        "mode": mode,
        "machine": machine,
        "elapsed_s": round(elapsed_s, 1),
        "budget_s": budget_s,
        "dataset": plan.get("dataset"),
        "bundle": {
            "python_version": bundle.get("python_version"),
            "built_at": bundle.get("built_at"),
            "built_from": bundle.get("built_from"),
            "wheels": [w["path"].removeprefix("wheels/") for w in bundle.get("wheels", [])],
        },
        # The libraries the node runs, as tables name them, and the distribution of each.
        "libraries": [
            {"name": lib["name"], "title": lib["title"], "distribution": lib["distribution"]}
            for lib in node["libraries"]
        ],
        "environment": {
            "python_version": environment.get("python_version"),
            "packages": environment.get("packages"),
            "cuda": environment.get("cuda_env"),
            "cpu_model": environment.get("cpu_model"),
            "usable_cores": environment.get("usable_cores"),
        },
        "steps": steps,
        # A resumed run: what the earlier run was (its own summary is kept in the archive).
        "resumed_from": None
        if earlier is None
        else {
            "machine": earlier.get("machine"),
            "elapsed_s": earlier.get("elapsed_s"),
            "built_from": (earlier.get("bundle") or {}).get("built_from"),
            "resumed_from": earlier.get("resumed_from"),
        },
        "rows": counts(files),
        "result_files": [rel for _, rel, _ in files],
        "gpu_dataloader": gpu_table(files, "gpu_dataloader", order),
        "pipeline": gpu_table(files, "pipeline", order),
        "training": training,
        "cores_per_gpu": cores_per_gpu(training),
        "calibration": calibration_table(results, node["calibration_pairs"]),
        "sync_check": sync,
        "lock_differences": lock_differences(results, node["key_packages"]),
        "not_run": not_run(
            mode,
            steps,
            bundle,
            sync,
            (environment.get("cuda_env") or {}).get("verdict") == "ok",
            node,
        ),
        "non_ok_rows": non_ok_rows(files),
    }


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in rows),
    ]


def _pct(value: Any) -> str:
    return "" if value is None else f"{100 * float(value):.1f} %"


def _num(value: Any, digits: int = 0) -> str:
    return "" if value is None else f"{float(value):.{digits}f}"


def markdown(doc: dict[str, Any]) -> str:
    env = doc["environment"]
    packages = env.get("packages") or {}
    cuda = env.get("cuda") or {}
    title = {
        "dry": "dry run on the CPU",
        "training_check": "GPU node, training check",
        "calibration": "GPU node, A/A calibration",
    }.get(doc["mode"], "GPU node")
    device = "".join(
        f", {label}{cuda[key]}"
        for key, label in (("device_name", ""), ("driver_version", "driver "),
                           ("cuda_runtime", "runtime "))
        if cuda.get(key)
    )  # fmt: skip
    built = doc["bundle"]
    commit = (built["built_from"] or {}).get("git_commit")
    versions = "".join(
        f", {lib['title']} {packages.get(lib['distribution'])}" for lib in doc.get("libraries", [])
    )
    lines = [
        f"# GPU regimes on `{doc['machine']}` ({title})",
        "",
        f"Wall time {doc['elapsed_s']:.0f} s of the {doc['budget_s']:.0f} s budget (prove.sh "
        f"start to the archive). Python {env.get('python_version')}, torch "
        f"{packages.get('torch')}{versions}; {env.get('cpu_model')}, "
        f"{env.get('usable_cores')} usable cores; CUDA: {cuda.get('verdict')}{device}. Dataset "
        f"`{(doc.get('dataset') or {}).get('key')}` (the workflow's default, built on the "
        f"node). Bundle for Python {built['python_version']}, built {built['built_at']} from "
        f"{commit}.",
        "",
    ]
    earlier = doc.get("resumed_from")
    if earlier:
        earlier_commit = (earlier.get("built_from") or {}).get("git_commit")
        lines += [
            f"This run completed an earlier one on the same machine ({earlier['elapsed_s']:.0f} "
            f"s, bundle from {earlier_commit}): the jobs it measured were kept, not run again "
            "(its summary and log: `results/gpu_node/earlier_run_*` in the archive).",
            "",
        ]
    lines += ["## Steps", ""]
    step_rows = []
    for step in doc["steps"]:
        jobs = step["jobs"]
        ran = sum(1 for j in jobs if j.get("status") == "ok")
        kept = sum(1 for j in jobs if j.get("earlier"))
        what = f"{ran}/{len(jobs)} jobs" if jobs else ""
        what += f" ({kept} kept from the earlier run)" if kept else ""
        notes = "; ".join(step["notes"])
        wall = f"{step['seconds']:.1f} / {step['budget_s']:.0f} s"
        step_rows.append([step["name"], step["status"], wall, what, notes])
    lines += _table(["step", "status", "wall / budget", "jobs", "notes"], step_rows)
    lines += ["", "## Rows", ""]
    lines += _table(
        ["engine", "files", "ok", "not ok", "by status"],
        [[family, c["files"], c["ok"], c["not_ok"], json.dumps(c["by_status"], sort_keys=True)]
         for family, c in doc["rows"].items()],
    )  # fmt: skip
    for key, title_text in (("gpu_dataloader", "GPU DataLoader"), ("pipeline", "Pipeline")):
        table = doc[key]
        if not table["rows"]:
            continue
        lines += ["", f"## {title_text}: median img/s (or the row's status)", ""]
        lines += _table(
            ["recipe", *table["columns"]],
            [[name, *(cells.get(c, "") for c in table["columns"])]
             for name, cells in table["rows"].items()],
        )  # fmt: skip
        if table["gpu_peak_allocated_mb_max"]:
            lines += [
                "",
                f"Largest torch allocator peak: {table['gpu_peak_allocated_mb_max']:.0f} MB.",
            ]
    if doc["training"]:
        lines += ["", "## Training: images/s and data wait", ""]
        lines += _table(
            ["recipe", "workers", "feed", "decoder", "run", "variant", "status", "img/s",
             "data wait", "model alone img/s", "loader alone img/s", "data wait interval"],
            [[t["recipe"], t["workers"], t["feed"], t.get("decoder", "native"), t.get("run", 1),
              t["variant"],
              t["status"] if t["status"] == "ok" else f"{t['status']}: {t.get('reason')}",
              _num(t.get("images_per_second")), _pct(t.get("data_wait_fraction")),
              _num(t.get("model_img_per_s")), _num(t.get("loader_img_per_s")),
              f"{_pct(t.get('data_wait_ci_low'))}-{_pct(t.get('data_wait_ci_high'))}"
              if t["status"] == "ok" else ""] for t in doc["training"]],
        )  # fmt: skip
    curves = doc.get("cores_per_gpu") or []
    if curves:
        lines += [
            "",
            "## Cores per GPU: the fewest DataLoader workers that feed the model",
            "",
            "A worker count is fed when every run's data-wait interval lies below "
            "policy.FED_WAIT of the loop's time.",
            "",
        ]
        counts = sorted({int(w) for c in curves for w in c["verdicts"]})
        lines += _table(
            ["recipe", "feed", "runs", *(f"w{w}" for w in counts), "answer"],
            [[c["recipe"], c["feed"], c["runs"],
              *(c["verdicts"].get(str(w), "") for w in counts), cores_answer(c)]
             for c in curves],
        )  # fmt: skip
    aa = doc.get("calibration") or {}
    if aa.get("rows"):
        lines += [
            "",
            "## A/A calibration: the same work under two names (docs/calibration.md)",
            "",
            f'{aa["note"]}; {aa["false_calls"]} false calls ("faster" or "slower") at the '
            f"{aa['level']:.0%} level.",
            "",
        ]
        lines += _table(
            ["a", "b", "scope", "recipe", "a / b", "interval", "level", "runs", "verdict"],
            [[p["a"], p["b"], p["scope"], p["recipe"], _num(p["ratio"], 3),
              f"{_num(p['low'], 3)}-{_num(p['high'], 3)}", _pct(p["level"]),
              f"{p['runs_a']} / {p['runs_b']}", p["verdict"]] for p in aa["rows"]],
        )  # fmt: skip
    sync = doc.get("sync_check")
    lines += ["", "## Synchronisation check", ""]
    if sync:
        synced, control = min(sync["with_sync_times_s"]), min(sync["control_times_s"])
        lines.append(
            f"{'Passed' if sync['passed'] else 'FAILED'} ({sync['mode']}, {sync['device']}): "
            f"floor {1000 * sync['floor_s']:.1f} ms per repetition; with the engine's "
            f"synchronisation the fastest repetition took {1000 * synced:.1f} ms, without it "
            f"(negative control) {1000 * control:.1f} ms. Rule: {sync['rule']}."
        )
    else:
        lines.append("Not run (see the steps).")
    lines += ["", "## Not run or failed, and why", ""]
    lines += [f"- {item}" for item in doc["not_run"]]
    differences = doc["lock_differences"]
    if differences:
        lines += ["", "## Installed here vs the locks", ""]
        for library, entry in differences.items():
            shown = ", ".join(
                f"{name} {v['installed']} (lock {v['lock']})"
                for name, v in entry["differs"].items()
            )
            lines.append(
                f"- {library} ({entry['manager']}, compared with {entry['lock']}): "
                f"{shown or 'the key packages match the lock'}"
                + (f"; {entry['other_differences']} other packages differ"
                   if entry["other_differences"] else "")
            )  # fmt: skip
    non_ok = doc["non_ok_rows"]
    if non_ok:
        lines += ["", f"## Rows that are not ok ({len(non_ok)})", ""]
        lines += [f"- `{r['file']}` {r['row']}: {r['status']} ({r['reason']})"
                  for r in non_ok[:NON_OK_LISTED]]  # fmt: skip
        if len(non_ok) > NON_OK_LISTED:
            lines.append(f"- ... {len(non_ok) - NON_OK_LISTED} more in summary.json")
    target = COMMIT_TO.get(doc["mode"], COMMIT_TO_DEFAULT)
    lines += [
        "",
        "## Where the results go",
        "",
        f"Unpack `results.tar.gz` into `{target.replace('<machine>', doc['machine'])}`"
        + " (`<date>`: the run's date"
        + ("; `<N>`: the next free number of that date)" if "<N>" in target else ")")
        + ' with this summary beside it (docs/gpu_regimes.md, "On an offline GPU node").',
        "",
    ]
    return "\n".join(lines)
