"""The decoder as a factor of the cpu_dataloader rows (augbench/workload/decoders.py): the settings
a configured decoder adds (crossed with the loaders, named <setting>-<decoder>[-<loader>]), the
engine's command line, and the tables, where rows of one decoder are compared with each other
and every row says its decoder and loader. The rows measured in a library env:
tests/test_decoders_envs.py."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import pytest
from test_loaders import config, dataloader_outputs

from augbench.analysis import groups, speedups, tidy
from augbench.analysis import loaders as loaders_table
from augbench.measuring.engines.dataloader.settings import parse_args, parse_settings
from augbench.planning import regimes, sweep
from augbench.results import ok_row, write_result_file
from augbench.workload import decoders, loaders, matrix


# -- names ----------------------------------------------------------------------------------------
def test_a_decoder_is_a_name_part_before_the_loader() -> None:
    assert decoders.suffix("native") == "" and decoders.suffix("simplejpeg") == "-simplejpeg"
    assert [decoders.from_suffix(decoders.suffix(n)) for n in decoders.NAMES] == list(
        decoders.NAMES
    )
    name = matrix.dataloader_setting("decode", 2, loaders.suffix("thread"), "-simplejpeg")
    assert name == "decode-w2-simplejpeg-thread"
    assert parse_settings("memory-w0,decode-w2,decode-w2-thread,decode-w2-pil-spdl") == [
        ("memory", 0, "native", "process"),
        ("decode", 2, "native", "process"),
        ("decode", 2, "native", "thread"),
        ("decode", 2, "pil", "spdl"),
    ]
    assert parse_settings("decode-w1-torchvision") == [("decode", 1, "torchvision", "process")]


@pytest.mark.parametrize(
    "bad", ["memory-w0-pil", "decode-w2-thread-pil", "decode-w2-pil-thread-x", "decode-w2-jpeg"]
)
def test_a_setting_out_of_order_or_outside_the_decode_scope_is_refused(bad: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="decoder in"):
        parse_settings(bad)


def test_the_engine_takes_a_decoder_for_the_decode_scope_only(tmp_path: Path) -> None:
    common = ["--library", "torchvision", "--manifest", "m.json", "--transforms", "HorizontalFlip",
              "--num-images", "4", "--machine", "m"]  # fmt: skip
    out = ["--output", str(tmp_path / "o.json")]
    chosen = parse_args([*common, "--scope", "decode", "--workers", "2", "--decoder", "pil", *out])
    assert (chosen.decoder, chosen.loader) == ("pil", "process")
    assert parse_args([*common, "--scope", "decode", "--workers", "2", *out]).decoder == "native"
    with pytest.raises(SystemExit):
        parse_args([*common, "--scope", "memory", "--workers", "0", "--decoder", "pil", *out])
    listed = parse_args(
        [*common, "--settings", "decode-w2-simplejpeg-thread", "--outputs", str(tmp_path / "a")]
    )
    assert (listed.decoder, listed.loader, listed.workers) == ("simplejpeg", "thread", 2)


# -- the plan -------------------------------------------------------------------------------------
def test_decoders_cross_the_loaders_in_the_decode_scope_and_the_default_keeps_its_names() -> None:
    default = dataloader_outputs(config())
    assert default == dataloader_outputs(config(cpu_dataloader={"decoders": ["native"]}))
    chosen = config(
        cpu_dataloader={"decoders": ["native", "simplejpeg"], "loaders": ["process", "thread"]}
    )
    added = sorted(set(dataloader_outputs(chosen)) - set(default))
    decode = [p for p in default if "/decode-w" in p]
    assert decode and len(added) == 3 * len(decode)  # simplejpeg, thread, simplejpeg-thread
    assert set(added) == {
        p.replace("-s0", f"{part}-s0")
        for p in decode
        for part in ("-simplejpeg", "-thread", "-simplejpeg-thread")
    }
    # Each result maps back to its kind, with both wildcards.
    kind, found = regimes.kind_of_result(next(p for p in added if "-simplejpeg-thread-" in p))
    assert kind.rule == "cpu_dataloader"
    assert decoders.from_suffix(found["decoder"]) == "simplejpeg"
    assert loaders.from_suffix(found["loader"]) == "thread"
    kind, found = regimes.kind_of_result(decode[0])
    assert (found["decoder"], found["loader"]) == ("", "")


def test_a_decoder_job_measures_its_rows_only_and_is_priced_as_its_setting() -> None:
    chosen = config(cpu_dataloader={"decoders": ["pil"], "job_per": "setting", "baseline_runs": 2})
    s = sweep.Sweep(chosen, "d")
    kind = regimes.KINDS["cpu_dataloader"]
    jobs = [j for j in s.jobs() if j.rule == "cpu_dataloader"]
    pil = next(j for j in jobs if dict(j.wildcards).get("decoder") == "-pil")
    flags = kind.args(s, kind, s.wildcards_of(pil))
    assert flags["decoder"] == "pil" and flags["baseline-runs"] == 0 and "loader" not in flags
    same = next(j for j in jobs if dict(j.wildcards) == {**dict(pil.wildcards), "decoder": ""})
    plain = kind.args(s, kind, s.wildcards_of(same))
    assert "decoder" not in plain and plain["baseline-runs"] == 2
    assert any("-pil-" in str(job.outputs) for job in s.cost_jobs())


# -- the tables -----------------------------------------------------------------------------------
def _file(folder: Path, library: str, decoder: str | None, loader: str, rate: float) -> Path:
    row = {
        **ok_row([rate, rate * 1.01, rate * 0.99], [0.1] * 3, warmup_iterations=1),
        "scope": "decode", "workers": 2, "batch_size": 4, "loader": loader,
    }  # fmt: skip
    if decoder is not None:
        row["decoder"] = decoder
    metadata = {
        "machine": "m", "regime": "cpu_dataloader", "scope": "decode", "library": library,
        "dataset": {"key": "d-0123456789ab", "name": "d"},
        "benchmark_params": {"num_images": 8, "workers": 2, "batch_size": 4},
    }  # fmt: skip
    part = decoders.suffix(decoder) if decoder in decoders.NAMES else ""
    name = f"decode-w2{part}{loaders.suffix(loader)}-s000.json"
    out = folder / library / name
    out.parent.mkdir(parents=True, exist_ok=True)
    write_result_file(out, metadata, {"HorizontalFlip": row})
    return out


def test_rows_of_one_decoder_are_compared_and_every_row_names_its_decoder(tmp_path: Path) -> None:
    files = [
        # Written before decoders were declared: the row names its call, the library's own.
        _file(tmp_path, "torchvision", "torchvision.io.decode_image", "process", 400.0),
        _file(tmp_path, "albumentationsx", "native", "process", 300.0),
        _file(tmp_path, "torchvision", "simplejpeg", "process", 500.0),
        _file(tmp_path, "albumentationsx", "simplejpeg", "process", 600.0),
        _file(tmp_path, "albumentationsx", "simplejpeg", "thread", 900.0),
    ]
    frame = tidy.load(files)
    assert sorted(frame["decoder"]) == ["native"] * 2 + ["simplejpeg"] * 3
    assert "torchvision.io.decode_image" in set(frame["decoder_call"])
    labels = sorted(g.short_label for g in groups.iter_groups(frame))
    assert any(label.endswith("simplejpeg decoder") for label in labels)
    assert any(label.endswith("simplejpeg decoder · thread loader") for label in labels)
    assert len(labels) == 3  # native, simplejpeg, simplejpeg under threads: never ranked together
    table = speedups.compute(frame)
    fastest = table[table["is_fastest"]]
    assert sorted(zip(fastest["decoder"], fastest["library"], strict=True)) == [
        ("native", "torchvision"), ("simplejpeg", "albumentationsx"),
        ("simplejpeg", "albumentationsx"),
    ]  # fmt: skip
    # The loaders table divides a thread row by the process row of the same decoder.
    loaders_rows = loaders_table.table(frame)
    (row,) = loaders_rows.itertuples()
    assert (row.decoder, row.loader, row.library) == ("simplejpeg", "thread", "albumentationsx")
    assert row.ratio_vs_process == pytest.approx(1.5, rel=0.02)


def test_a_library_that_takes_no_decoded_image_gives_unsupported_rows() -> None:
    from augbench.measuring.engines.dataloader.job import decoder_problem

    status, reason = decoder_problem("pil", "dali")
    assert status == "unsupported" and "own pipeline decodes" in reason
    assert decoder_problem("native", "dali") is None


def test_other_regimes_keep_the_call_and_no_decoder_group(tmp_path: Path) -> None:
    metadata = {
        "machine": "m", "regime": "micro", "library": "torchvision",
        "dataset": {"key": "d-0123456789ab", "name": "d"}, "benchmark_params": {"num_images": 8},
    }  # fmt: skip
    row = {**ok_row([1.0, 1.0, 1.0], [0.1] * 3, warmup_iterations=1), "decoder": "decode_image"}
    path = tmp_path / "micro.json"
    write_result_file(path, metadata, {"HorizontalFlip": row})
    frame = tidy.load([path])
    assert frame["decoder"].isna().all() and list(frame["decoder_call"]) == ["decode_image"]
    assert isinstance(groups.normalized(frame), pd.DataFrame)


def test_feed_workers_and_the_recipes_outside_the_sweep_keep_the_plan_small() -> None:
    """``feed_workers`` limits the other decoders and loaders to those worker counts; recipes
    outside ``sweep_transforms`` are measured with each library's own decode in processes."""
    chosen = config(
        cpu_dataloader={
            "transforms": ["HorizontalFlip", "GaussianBlur"],
            "sweep_transforms": ["HorizontalFlip"], "other_workers": [2], "shard_size": 1,
            "decoders": ["native", "pil"], "loaders": ["process", "thread"],
            "feed_workers": [2],
        }
    )  # fmt: skip
    added = [p for p in dataloader_outputs(chosen) if "-pil" in p or "-thread" in p]
    assert added and all("/decode-w2-" in p for p in added)  # not at 0 workers
    assert all(p.endswith("-s000.json") for p in added)  # the swept recipe's shard only
    assert len(added) == 3 * len({p.split("/")[-2] for p in added})  # pil, thread, pil-thread
    paper = config(preset="paper")
    assert paper["cpu_dataloader"]["feed_workers"] == [8]


def test_the_answer_names_the_fastest_feed_and_its_gain_over_the_default() -> None:
    from augbench.analysis import feeds

    def row(library: str, decoder: str, loader: str, rate: float) -> dict:
        values = [rate * f for f in (0.98, 1.0, 1.02, 0.99, 1.01)]
        return {
            "regime": "cpu_dataloader", "scope": "decode", "workers": 2, "batch_size": 4,
            "status": "ok", "library": library, "decoder": decoder, "loader": loader,
            "median_throughput": rate, "process_throughputs": values, "under_load": False,
        }  # fmt: skip

    rows = pd.DataFrame(
        [
            row("albumentationsx", "native", "process", 300.0),
            row("torchvision", "native", "process", 400.0),
            row("albumentationsx", "simplejpeg", "thread", 600.0),
        ]
    )
    best = rows.iloc[1]  # the library ranking's winner, on the default feed
    found = feeds.answer(rows, best)
    assert (found["feed_library"], found["feed_decoder"], found["feed_loader"]) == (
        "albumentationsx", "simplejpeg", "thread",
    )  # fmt: skip
    assert found["feed_gain"] == pytest.approx(2.0, rel=0.05)  # over albumentationsx's default
    assert found["feed_answer"].startswith(
        "AlbumentationsX with the simplejpeg decoder and the thread loader: 2.00x"
    )
    only = feeds.answer(rows.iloc[:2], best)
    assert only["feed_library"] is None and only["feed_answer"] == feeds.ONLY_DEFAULT
    assert list(feeds.default_rows(rows)["library"]) == ["albumentationsx", "torchvision"]


def test_gpu_rows_decoded_on_the_device_are_their_own_group(tmp_path: Path) -> None:
    """A GPU DataLoader row names its decoder (native: the workers'; nvjpeg: the device's) and
    is compared only with rows of the same one; a row written before the decoder was a column
    names only its call and reads as native."""
    metadata = {
        "machine": "m", "regime": "gpu_dataloader", "scope": "decode", "library": "torchvision",
        "dataset": {"key": "d-0123456789ab", "name": "d"},
        "benchmark_params": {"num_images": 8, "workers": 2, "batch_size": 4},
    }  # fmt: skip
    calls = {
        "older": "torchvision.io.decode_image(read_file(path), RGB) in DataLoader workers",
        "native": "native",
        "nvjpeg": "nvjpeg",
    }
    paths = []
    for name, decoder in calls.items():
        row = {**ok_row([1.0, 1.0, 1.0], [0.1] * 3, warmup_iterations=1), "decoder": decoder,
               "variant": "per-sample", "scope": "decode", "workers": 2}  # fmt: skip
        paths.append(tmp_path / f"{name}.json")
        write_result_file(paths[-1], {**metadata, "library": "torchvision"}, {"Identity": row})
    frame = tidy.load(paths)
    assert sorted(frame["decoder"]) == ["native", "native", "nvjpeg"]
    assert calls["older"] in set(frame["decoder_call"])
    labels = [g.short_label for g in groups.iter_groups(frame)]
    assert any(label.endswith("nvjpeg decoder") for label in labels)
    assert len(labels) == 2
