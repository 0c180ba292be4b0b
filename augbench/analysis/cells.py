"""How one cell of a result table reads, whether pandas holds it or a CSV gave it back: the
analysis modules' shared readers (no imports of the project, so every module can use them)."""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd


def number(value: Any) -> float:
    """A cell as a float; NaN where it is empty or not a number."""
    out = pd.to_numeric(value, errors="coerce")
    return float(out) if not pd.isna(out) else float("nan")


def text(value: Any) -> str:
    """A cell as a string; empty where it is None or NaN (not recorded)."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def is_true(value: Any) -> bool:
    """A flag cell as a bool: a bool or numpy bool as pandas holds it, the strings "True" and
    "False" as a CSV gives them back; empty, None or NaN (not measured) is False."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


def decoded(value: Any) -> Any:
    """A cell as the row held it: dict and list values are kept as JSON text in a tidy table
    (augbench.analysis.tidy.rows_from_file); anything else is returned as it is."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        return json.loads(value)
    return value
