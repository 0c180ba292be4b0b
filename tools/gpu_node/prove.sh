#!/usr/bin/env bash
# The GPU regimes on an offline GPU node, in one command (docs/gpu_regimes.md, "On an offline GPU
# node"). Every bundle carries a copy of this script:
#
#   bash BUNDLE/prove.sh OUT                      # on the GPU node: within 9.5 minutes, offline
#   bash BUNDLE/prove.sh --resume OUT OUT2        # completes a run cut short, on the same node
#   bash BUNDLE/prove.sh --dry OUT                # anywhere: the same steps, tiny sizes, on the CPU
#   bash BUNDLE/prove.sh --training-check OUT     # on the GPU node: the starvation answer checked
#                                                 # out of sample, every job in 3 runs (7 minutes)
#   bash BUNDLE/prove.sh --calibration OUT        # on the GPU node: the GPU DataLoader's A/A pairs
#                                                 # (docs/calibration.md), every job in 3 runs
#
# Options: --bundle DIR (default: $AUGBENCH_GPU_NODE_BUNDLE, else this script's folder when it
# holds a bundle, else a checkout's .augbench/gpu-node/bundle-cpXY), --python PATH (default:
# $AUGBENCH_NODE_PYTHON, else python3: the node's own interpreter with its torch and
# torchvision), --machine LABEL (default: the CPU model, cores and GPU name), --budget SECONDS
# (the whole run's wall time; default the plan's), --resume EARLIER_OUT (keep the jobs an earlier
# run on this machine measured, run the rest). OUT must be new or empty.
#
# Before anything runs: the bundle must have been built for this interpreter's Python version,
# and (unless --dry) torch must see a CUDA device; otherwise one line and exit 1, and OUT is not
# created. Then the bundle is checked (SHA256SUMS), installed offline into a temporary folder
# (pip install --no-index --no-deps --target, pip run from its own wheel), the project unpacked
# beside it, and augbench.gpu_node.prove runs every step of the plan within its time budget.
# OUT receives results.tar.gz, summary.md, summary.json and prove.log. Exit 0 when every step
# ran, 1 when one failed (the others still ran and OUT has their results).
set -u -o pipefail

usage() {
    echo "usage: prove.sh [--dry | --training-check | --calibration] [--bundle DIR] [--python PATH] [--machine LABEL] [--budget SECONDS] [--resume EARLIER_OUT] OUT" >&2
    exit 2
}
fail() {
    echo "prove.sh: $*" >&2
    exit 1
}

DRY=0
CHECK=0
CALIBRATION=0
BUNDLE="${AUGBENCH_GPU_NODE_BUNDLE:-}"
PY="${AUGBENCH_NODE_PYTHON:-python3}"
MACHINE=""
BUDGET=""
RESUME=""
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --dry) DRY=1 ;;
        --training-check) CHECK=1 ;;
        --calibration) CALIBRATION=1 ;;
        --bundle) [ $# -ge 2 ] || usage; BUNDLE="$2"; shift ;;
        --python) [ $# -ge 2 ] || usage; PY="$2"; shift ;;
        --machine) [ $# -ge 2 ] || usage; MACHINE="$2"; shift ;;
        --budget) [ $# -ge 2 ] || usage; BUDGET="$2"; shift ;;
        --resume) [ $# -ge 2 ] || usage; RESUME="$2"; shift ;;
        -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) usage ;;
        *) [ -z "$OUT" ] || usage; OUT="$1" ;;
    esac
    shift
done
[ -n "$OUT" ] || usage
[ $((DRY + CHECK + CALIBRATION)) -gt 1 ] && fail "--dry, --training-check, --calibration: choose one"
STARTED="$(date +%s.%N)"

command -v "$PY" >/dev/null 2>&1 || fail "no interpreter $PY on this node (pass --python PATH)"
case "$PY" in  # an absolute path, as it is (a venv's interpreter is a link that must stay one)
    */*) PY="$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")" ;;
esac
NODE_VERSION="$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
    || fail "$PY does not run"

# The bundle: --bundle, else $AUGBENCH_GPU_NODE_BUNDLE, else the folder of this script when it is
# a bundle's copy, else a checkout's default bundle for this Python (tools/gpu_node/bundle --out).
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -z "$BUNDLE" ] && [ -f "$HERE/bundle.json" ]; then
    BUNDLE="$HERE"
elif [ -z "$BUNDLE" ] && [ -f "$HERE/../../.augbench/gpu-node/bundle-cp${NODE_VERSION/./}/bundle.json" ]; then
    BUNDLE="$HERE/../../.augbench/gpu-node/bundle-cp${NODE_VERSION/./}"
fi
[ -n "$BUNDLE" ] || fail "no bundle: pass --bundle DIR (a folder built by tools/gpu_node/bundle)"
[ -f "$BUNDLE/bundle.json" ] || fail "$BUNDLE is not a bundle (no bundle.json): build one with tools/gpu_node/bundle"
BUNDLE="$(cd "$BUNDLE" && pwd)"

# 1. The bundle's wheels are for one CPython version: refuse any other before anything runs.
BUNDLE_VERSION="$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["python_version"])' \
    "$BUNDLE/bundle.json")" || fail "$BUNDLE/bundle.json cannot be read"
if [ "$NODE_VERSION" != "$BUNDLE_VERSION" ]; then
    fail "the bundle was built for Python $BUNDLE_VERSION but this node's $PY is Python $NODE_VERSION: build it with tools/gpu_node/bundle --python-version $NODE_VERSION"
fi

# 2. A CUDA device, unless the dry run is asked for (torch's own warnings are not the message).
if [ "$DRY" = 0 ]; then
    REASON="$("$PY" - 2>/dev/null <<'EOF'
import sys
try:
    import torch
except Exception as exc:
    print(f"no CUDA device: {sys.executable} cannot import torch ({type(exc).__name__}: {exc})")
    sys.exit(1)
if not torch.cuda.is_available():
    print(f"no CUDA device: torch {torch.__version__} (CUDA {torch.version.cuda}) in "
          f"{sys.executable} sees none; run this on the GPU node, or add --dry for the CPU dry run")
    sys.exit(1)
EOF
)" || fail "${REASON:-no CUDA device: the check with $PY failed}"
fi

case "$BUDGET" in
    ""|[1-9][0-9]|[1-9][0-9][0-9]|[1-9][0-9][0-9][0-9]) ;;
    *) fail "--budget $BUDGET: give the whole run's seconds, 10 to 9999" ;;
esac
if [ -n "$RESUME" ]; then
    [ -f "$RESUME/results.tar.gz" ] && [ -f "$RESUME/summary.json" ] \
        || fail "--resume $RESUME: not an earlier run's OUT (it needs results.tar.gz and summary.json)"
    RESUME="$(cd "$RESUME" && pwd)"
    [ "$RESUME" != "$(realpath -m "$OUT")" ] || fail "--resume $RESUME: OUT must be another, new folder"
fi
if [ -e "$OUT" ] && [ -n "$(ls -A "$OUT" 2>/dev/null)" ]; then
    fail "$OUT is not empty: give a new folder for the results"
fi

# 3. The bundle arrived whole.
if command -v sha256sum >/dev/null 2>&1; then
    (cd "$BUNDLE" && sha256sum --check --quiet SHA256SUMS >/dev/null 2>&1) \
        || fail "$BUNDLE does not match its SHA256SUMS (copied incompletely?): copy it again"
fi

mkdir -p "$OUT" || fail "cannot create $OUT"
OUT="$(cd "$OUT" && pwd)"
LOG="$OUT/prove.log"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/augbench-gpu-node.XXXXXX")" || fail "no temporary folder"
trap 'rm -rf "$WORK"' EXIT

say() {
    local elapsed
    elapsed="$(awk -v s="$STARTED" -v n="$(date +%s.%N)" 'BEGIN { printf "%6.1f", n - s }')"
    echo "[${elapsed}s] $*" | tee -a "$LOG"
}

MODE="node"
[ "$DRY" = 1 ] && MODE="dry"
[ "$CHECK" = 1 ] && MODE="training_check"
[ "$CALIBRATION" = 1 ] && MODE="calibration"
say "prove | bundle $BUNDLE (Python $BUNDLE_VERSION), interpreter $PY, mode $MODE, OUT $OUT"

# 4. Offline install of the bundle's wheels into a temporary target (never the node's Python),
#    with pip from its own wheel (the node's interpreter may have no pip) and no pip
#    configuration of the node (its index or constraints do not apply).
PIP_WHEEL="$(ls "$BUNDLE"/wheels/pip-*.whl 2>/dev/null | head -n 1)"
[ -n "$PIP_WHEEL" ] || fail "$BUNDLE/wheels has no pip wheel: build the bundle again"
WHEELS=()
for wheel in "$BUNDLE"/wheels/*.whl; do
    [ "$wheel" = "$PIP_WHEEL" ] || WHEELS+=("$wheel")
done
say "install | ${#WHEELS[@]} wheels into a temporary target (pip install --no-index)"
if ! (
    for name in $(compgen -e | grep '^PIP_'); do unset "$name"; done
    PIP_CONFIG_FILE=/dev/null timeout 120 "$PY" "$PIP_WHEEL/pip" install --no-index --no-deps \
        --find-links "$BUNDLE/wheels" --target "$WORK/site" --disable-pip-version-check \
        --no-warn-script-location --quiet "${WHEELS[@]}"
) >>"$LOG" 2>&1; then
    say "install | failed: pip's output is in $LOG"
    exit 1
fi
mkdir -p "$WORK/project"
tar -xzf "$BUNDLE/augbench-project.tar.gz" -C "$WORK/project" >>"$LOG" 2>&1 \
    || { say "install | failed to unpack the project (see $LOG)"; exit 1; }
say "install | done: $(ls "$WORK/site" | grep -c 'dist-info$') packages, the project unpacked"

ARGS=(--bundle "$BUNDLE" --work "$WORK/run" --out "$OUT" --started "$STARTED" --mode "$MODE")
[ -n "$MACHINE" ] && ARGS+=(--machine "$MACHINE")
[ -n "$BUDGET" ] && ARGS+=(--budget "$BUDGET")
[ -n "$RESUME" ] && ARGS+=(--resume "$RESUME")
# From the work folder: "python -m" puts the current folder first on sys.path, and a checkout
# there must not stand in for the bundle's project.
mkdir -p "$WORK/run" && cd "$WORK/run" || fail "cannot enter $WORK/run"
PYTHONPATH="$WORK/project:$WORK/site${PYTHONPATH:+:$PYTHONPATH}" \
    "$PY" -m augbench.gpu_node.prove "${ARGS[@]}" 2> >(tee -a "$LOG" >&2)
STATUS=$?
wait  # the tee of stderr
exit "$STATUS"
