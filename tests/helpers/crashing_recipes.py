"""Recipes for the process-isolation test of augbench.measuring.engines.skeleton (module level, so a
spawned process can import them): one is fine, one raises what a CUDA device-side assert raises
in torch, one kills its own process the way a crashing native library does."""

from __future__ import annotations

import os
from typing import Any

from augbench.results import ok_row

STATE: dict[str, int] = {"calls": 0}


def recipe(*, name: str) -> dict[str, Any]:
    STATE["calls"] += 1
    if name == "assert":
        raise RuntimeError(
            "CUDA error: device-side assert triggered\n"
            "CUDA kernel errors might be asynchronously reported at some other API call"
        )
    if name == "abort":
        os.abort()
    # Each recipe sees a process of its own: no call made by an earlier recipe is visible here.
    return ok_row([100.0], [0.01], warmup_iterations=0, pid=os.getpid(), calls=STATE["calls"])
