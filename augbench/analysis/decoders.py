"""The decoders table (results/tables/decoders.csv): each JPEG decoder's decode-only rate, one
thread, per machine, dataset (image size) and the library env it ran in (augbench.workload.decoders,
augbench.measuring.engines.decoders). Every row is kept whatever its status, its numbers blank where
it is not ``ok``, so a decoder this env could not run says why."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from augbench.analysis import peer_decoders
from augbench.analysis.cells import number, text
from augbench.result_format import MEDIAN_THROUGHPUT
from augbench.workload import decoders

COLUMNS: tuple[str, ...] = (
    "machine",
    "dataset",
    "image_size",
    "megapixels",
    "decoder",
    "library_env",
    "img_s_per_core",
    "ci_low",
    "ci_high",
    "ci_level",
    "n",
    "megapixels_per_s",
    "status",
    "reason",
    "decoder_call",
    "decoder_version",
    "output_layout",
    "allocator_setting",
    "under_load",
    # The published single-thread rate of the same decoder on the same CPU, where the machine
    # reports one the peer measured (augbench.analysis.peer_decoders); blank otherwise.
    *peer_decoders.COLUMNS,
    "source_file",
)


def _count(value: Any) -> int:
    count = number(value)
    return 0 if math.isnan(count) else int(count)


def _image_size(row: pd.Series) -> str:
    """'as staged' or '<px> px shorter side' (a derived dataset of the resolution sweep)."""
    resolution = number(row.get("resolution"))
    return "as staged" if math.isnan(resolution) else f"{int(resolution)} px shorter side"


def table(tidy: pd.DataFrame) -> pd.DataFrame:
    """One row per decoders-table row of ``tidy`` (regime ``decoders``): per machine and env,
    the image sizes from the smallest, each in the declared decoders' order; empty (with its
    columns) where no decoder was measured."""
    part = tidy[tidy["regime"] == decoders.REGIME] if "regime" in tidy else tidy.iloc[0:0]
    records = []
    for _, row in part.iterrows():
        ok = row["status"] == "ok"
        threads = number(row.get("threads"))
        threads = 1.0 if math.isnan(threads) or threads < 1 else threads
        rate = number(row[MEDIAN_THROUGHPUT]) / threads if ok else math.nan
        megapixels = number(row.get("megapixels"))
        decoder = text(row.get("decoder")) or row["transform"]
        records.append(
            {
                "machine": row["machine"],
                "dataset": row["dataset"],
                "image_size": _image_size(row),
                "megapixels": megapixels,
                "decoder": decoder,
                "library_env": row["library"],
                "img_s_per_core": rate,
                "ci_low": number(row.get("ci_low")) / threads if ok else math.nan,
                "ci_high": number(row.get("ci_high")) / threads if ok else math.nan,
                "ci_level": number(row.get("ci_level")) if ok else math.nan,
                "n": _count(row.get("num_successful_runs")) if ok else 0,
                "megapixels_per_s": rate * megapixels if ok else math.nan,
                "status": row["status"],
                "reason": text(row.get("reason")),
                "decoder_call": text(row.get("decoder_call")),
                "decoder_version": text(row.get("decoder_version")),
                "output_layout": text(row.get("output_layout")),
                "allocator_setting": text(row.get("allocator_setting")),
                "under_load": row.get("under_load"),
                **peer_decoders.beside(row.get("processor"), decoder),
                "source_file": text(row.get("source_file")),
            }
        )
    out = pd.DataFrame(records, columns=list(COLUMNS))
    if out.empty:
        return out
    rank = {name: i for i, name in enumerate(decoders.NAMES)}
    out["_rank"] = out["decoder"].map(lambda name: rank.get(name, len(rank)))
    keys = ["machine", "library_env", "allocator_setting", "megapixels", "dataset", "_rank"]
    return out.sort_values(keys, kind="stable").drop(columns="_rank").reset_index(drop=True)
