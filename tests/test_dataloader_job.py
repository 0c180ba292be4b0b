"""The cpu_dataloader engine's command line for a job that measures several settings in one
process (config cpu_dataloader.job_per: library): settings and outputs pair up in order, and a
malformed request is a clear error before anything is measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from augbench.measuring.engines import cpu_dataloader
from augbench.policy import SlowTransformPolicy
from augbench.workload import matrix

COMMON = ["--library", "pillow", "--transforms", "HorizontalFlip", "--manifest", "m.json",
          "--num-images", "4", "--machine", "m"]  # fmt: skip


def test_settings_pair_with_outputs_in_order() -> None:
    settings = cpu_dataloader.parse_args(
        [*COMMON, "--settings", "memory-w0,decode-w2", "--outputs", "a.json", "b.json"]
    )
    assert settings.setting_list == (
        ("memory", 0, "native", "process"),
        ("decode", 2, "native", "process"),
    )
    assert settings.outputs == (Path("a.json"), Path("b.json"))
    # The first setting doubles as the single-setting arguments (checks, labels).
    assert (settings.scope, settings.workers, settings.output) == ("memory", 0, Path("a.json"))
    assert [matrix.dataloader_setting(s, w) for s, w, *_ in settings.setting_list] == [
        "memory-w0",
        "decode-w2",
    ]


def test_a_loader_is_a_settings_last_part_and_the_decode_scopes_only() -> None:
    settings = cpu_dataloader.parse_args(
        [*COMMON, "--settings", "decode-w2,decode-w2-thread", "--outputs", "a.json", "b.json"]
    )
    assert settings.setting_list == (
        ("decode", 2, "native", "process"),
        ("decode", 2, "native", "thread"),
    )
    assert settings.loader == "process"
    single = cpu_dataloader.parse_args(
        [*COMMON, "--scope", "decode", "--workers", "2", "--loader", "spdl", "--output", "o.json"]
    )
    assert single.loader == "spdl"
    for bad in ("memory-w2-thread", "decode-w2-fibers"):
        with pytest.raises(Exception, match="loader in"):
            cpu_dataloader.parse_settings(bad)
    with pytest.raises(SystemExit):  # a thread loader measures the decode scope only
        cpu_dataloader.parse_args(
            [*COMMON, "--scope", "memory", "--workers", "2", "--loader", "thread", "--output", "o"]
        )


def test_a_single_setting_job_is_unchanged() -> None:
    settings = cpu_dataloader.parse_args(
        [*COMMON, "--scope", "decode", "--workers", "1", "--output", "o.json"]
    )
    assert settings.setting_list == () and (settings.scope, settings.workers) == ("decode", 1)
    assert settings.loader == "process"


@pytest.mark.parametrize(
    "extra",
    [
        ["--settings", "memory-w0,decode-w2", "--outputs", "a.json"],  # one output short
        ["--settings", "memory-w0", "--outputs", "a.json", "--scope", "memory"],  # both forms
        ["--scope", "memory", "--output", "o.json"],  # no workers
    ],
)
def test_malformed_requests_are_usage_errors(extra: list[str]) -> None:
    with pytest.raises(SystemExit):
        cpu_dataloader.parse_args([*COMMON, *extra])


@pytest.mark.parametrize("text", ["gpu-w0", "memory-2", "memory-wx", "decode"])
def test_a_bad_setting_name_says_what_is_expected(text: str) -> None:
    with pytest.raises(Exception, match="expected <scope>-w<workers>"):
        cpu_dataloader.parse_settings(text)


# Each engine's own required flags; the shared ones (augbench.measuring.engines.cli) are added
# below.
ENGINE_ARGS = {
    "micro": ["--library", "pillow", "--transforms", "HorizontalFlip"],
    "cpu_dataloader": ["--library", "pillow", "--transforms", "HorizontalFlip",
                       "--scope", "memory", "--workers", "0"],
    "gpu_dataloader": ["--library", "torchvision", "--transforms", "HorizontalFlip",
                       "--scope", "memory", "--workers", "0", "--batch-size", "8",
                       "--randomness", "per-sample"],
    "dali": ["--variant", "dali-cpu", "--transforms", "HorizontalFlip", "--batch-size", "8",
             "--num-threads", "1"],
    "pipeline_breakdown": ["--library", "pillow", "--pipelines", "{}"],
    "lazy_outputs": ["--library", "pillow", "--transforms", "HorizontalFlip"],
}  # fmt: skip


@pytest.mark.parametrize("engine", sorted(ENGINE_ARGS))
def test_every_engine_takes_the_shared_flags_and_what_provision_appends(engine: str) -> None:
    import importlib

    module = importlib.import_module(f"augbench.measuring.engines.{engine}")
    argv = [*ENGINE_ARGS[engine], "--num-images", "4", "--machine", "m", "--output", "o.json"]
    # augbench.planning.provision appends the staged manifest and the node's env marker to every
    # engine.
    settings = module.parse_args([*argv, "--manifest", "staged.json", "--env-marker", "env.json"])
    assert (settings.manifest, settings.env_marker) == (Path("staged.json"), Path("env.json"))
    assert (settings.num_images, settings.machine, settings.output) == (4, "m", Path("o.json"))
    if engine != "lazy_outputs":  # a diagnostic: no slow-transform policy
        assert settings.policy == SlowTransformPolicy()
    if engine not in ("lazy_outputs", "pipeline_breakdown"):
        assert settings.shard == ""


def test_the_steady_rate_starts_after_the_first_round_of_batches() -> None:
    """One batch per worker is made from idle at an epoch's start; the steady rate counts the
    images that arrive after that round, over the time since it arrived."""
    from augbench.measuring.engines.dataloader.timing import steady_rate

    # 1 worker, batch 4: the first batch after 0.10 s (its start), then one every 0.05 s.
    one = [(4 * (i + 1), 0.10 + 0.05 * i) for i in range(8)]
    assert steady_rate(one, 1) == pytest.approx(4 / 0.05)
    # 2 workers: batches arrive in pairs every 0.10 s, the first pair after 0.15 s.
    two = [(4 * (i + 1), 0.15 + 0.10 * (i // 2)) for i in range(8)]
    assert steady_rate(two, 2) == pytest.approx(8 / 0.10)
    # The epoch's own rate (32 images over 0.45 s) is below the stream's.
    assert 32 / two[-1][1] < steady_rate(two, 2)
    assert steady_rate(one[:1], 1) is None and steady_rate(two[:2], 2) is None


def test_timed_epoch_records_the_steady_rate_of_a_loader() -> None:
    import time

    from augbench.measuring.engines.dataloader.timing import timed_epoch

    class Batch:
        shape = (4, 3, 8, 8)

    def loader():
        # The epoch's start, long against the 0.03 s after it: the steady rate stays above the
        # epoch's even if a loaded machine stalls the steady part by up to 0.5 s.
        time.sleep(0.2)
        for _ in range(4):
            yield Batch()
            time.sleep(0.01)

    steady: list[float] = []
    images, seconds = timed_epoch(loader(), steady=steady, first_round=1)
    assert images == 16 and len(steady) == 1
    assert steady[0] > images / seconds  # the start is outside the steady rate


def test_a_failure_inside_a_thread_pipeline_names_the_original_error() -> None:
    """A thread loader (SPDL) reports a failed sample as a group of errors raised from the
    library's: the row's reason names that original error, not only the group."""
    from augbench.measuring.engines import skeleton

    try:
        try:
            raise RuntimeError("Invalid thread pool!")
        except RuntimeError as exc:
            raise RuntimeError("the pipeline stage failed 1 times") from exc
    except RuntimeError as exc:
        group = ExceptionGroup("pipeline stages failed", [exc])
    error = cpu_dataloader.RecipeError("warm-up epoch", group)
    assert str(error) == (
        "warm-up epoch: ExceptionGroup: pipeline stages failed (1 sub-exception)"
        " (from RuntimeError: Invalid thread pool!)"
    )
    plain = ValueError("bad crop")
    assert skeleton.describe(plain) == "ValueError: bad crop"
    assert skeleton.error_row(group)["reason"].endswith("(from RuntimeError: Invalid thread pool!)")
