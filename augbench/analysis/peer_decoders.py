"""Published single-thread decode rates beside the decoders table, where the CPU is the same.

``workflow/resources/peer_decoders.csv`` holds imread_benchmark's single-thread rates (arXiv
2605.08731, "Single-Thread JPEG Decoder Benchmarks Mis-Evaluate ML Data Loaders"; its raw JSON,
``output/linux_<cpu>/<library>_1t_results.json`` at commit
f869db85bc5d061025b3532475c06b7e4d6619b1 of github.com/ternaus/imread_benchmark): five Google
Cloud CPUs, the ImageNet validation set's 50,000 JPEGs decoded from memory in one thread, five
runs each (``img_s_per_core`` their median, ``run_low``/``run_high`` their range), for the
decoders both projects run (Pillow as ``pil``). A row of the decoders table whose machine reports
one of those CPUs by name gets the published rate of its decoder beside its own; other CPUs get
none (a CPU family is not guessed from a name a virtual machine hides).
"""

from __future__ import annotations

import math
import re
from functools import cache
from pathlib import Path

import pandas as pd

PEER_FILE = Path(__file__).resolve().parents[2] / "workflow" / "resources" / "peer_decoders.csv"
SOURCE = "imread_benchmark (arXiv 2605.08731), ImageNet validation, one thread"
COLUMNS: tuple[str, ...] = (
    "peer_img_s_per_core",
    "peer_run_low",
    "peer_run_high",
    "peer_cpu",
    "peer_source",
)


def cpu_key(name: object) -> str:
    """A CPU's name as the two projects compare it: lower case, without trademark marks, the
    clock after '@' and repeated spaces (``INTEL(R) XEON(R) PLATINUM 8581C CPU @ 2.30GHz`` and
    ``Intel(R) Xeon(R) Platinum 8581C CPU @ 2.30GHz`` are one CPU)."""
    if not isinstance(name, str):
        return ""
    text = re.sub(r"\((r|tm)\)", " ", name.lower()).split("@")[0]
    return " ".join(text.replace(" cpu", " ").split())


@cache
def published(path: Path = PEER_FILE) -> dict[tuple[str, str], dict[str, object]]:
    """(CPU key, decoder) -> the published rate, its runs' range and the CPU's name."""
    if not path.exists():
        return {}
    rows = pd.read_csv(path).to_dict("records")
    return {(cpu_key(r["peer_cpu"]), str(r["decoder"])): r for r in rows}


def beside(processor: object, decoder: str) -> dict[str, object]:
    """The peer columns of one decoders-table row: the published rate of ``decoder`` on the
    row's CPU (``processor``, the machine's reported name), blank where it has none."""
    found = published().get((cpu_key(processor), decoder))
    if found is None:
        return {**dict.fromkeys(COLUMNS[:3], math.nan), "peer_cpu": "", "peer_source": ""}
    return {
        "peer_img_s_per_core": float(found["img_s_per_core"]),  # type: ignore[arg-type]
        "peer_run_low": float(found["run_low"]),  # type: ignore[arg-type]
        "peer_run_high": float(found["run_high"]),  # type: ignore[arg-type]
        "peer_cpu": str(found["peer_cpu"]),
        "peer_source": SOURCE,
    }
