"""The JPEG decoders' declarations (augbench/workload/decoders.py), the decoders table's plan and
its table, in the driver's env: what it has (numpy, Pillow) runs for real, the rest is declared or
faked. The decoders themselves in a library env: tests/test_decoders_envs.py."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO
from PIL import Image

from augbench import paths
from augbench.analysis import decoders as decoders_table
from augbench.analysis import peer_decoders, tidy
from augbench.planning import regimes, sweep
from augbench.planning.config import ConfigError, deep_merge, resolve
from augbench.results import non_ok_row, ok_row, write_result_file
from augbench.workload import decoders


def config(**extra: object) -> dict:
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    settings = {"preset": "smoke", "machine": "m", "dataset": {"archive": None}, **extra}
    return resolve(deep_merge(base, settings), REPO)


# -- the declarations ---------------------------------------------------------------------------
def test_every_decoder_is_declared_once_with_its_package_and_layout() -> None:
    assert decoders.NAMES == ("native", "pil", "opencv", "torchvision", "simplejpeg", "turbojpeg")
    for decoder in decoders.DECODERS:
        if decoder.name == decoders.NATIVE:
            assert not decoder.module and not decoder.layout  # the library's own decode
            continue
        assert (
            decoder.module and decoder.distribution and decoder.layout in decoders.DECODED_LAYOUTS
        )
    turbo = decoders.get("turbojpeg")
    assert (turbo.system_library, turbo.system_package) == ("turbojpeg", "libturbojpeg0")
    assert decoders.get("torchvision").layout == decoders.CHW_TENSOR


def test_the_pinned_decoders_are_in_the_lock_of_the_env_they_run_in() -> None:
    lock = (REPO / "envs" / f"{decoders.ENV_LIBRARY}.txt").read_text().lower()
    for decoder in decoders.DECODERS:
        if decoder.pin:
            assert f"{decoder.distribution.lower()}=={decoder.pin}" in lock, decoder.name
        elif decoder.distribution:  # an unpinned one is pinned there by its library's lock
            assert f"\n{decoder.distribution.lower()}==" in lock, decoder.name


def test_an_unknown_decoder_raises_one_line_naming_the_valid_ones() -> None:
    with pytest.raises(decoders.UnknownDecoder) as caught:
        decoders.get("libjpeg")
    message = str(caught.value)
    assert "\n" not in message and "'libjpeg'" in message
    assert all(name in message for name in decoders.NAMES)


def test_a_missing_package_is_a_one_line_reason_and_load_refuses() -> None:
    missing = decoders.Decoder(
        "ghost", "ghost.decode(data)", decoders.HWC_NUMPY, module="augbench_no_such_module",
        distribution="ghost-jpeg", pin="1.0",
    )  # fmt: skip
    reason = "ghost: Python package augbench_no_such_module not installed (PyPI ghost-jpeg==1.0)"
    assert missing.problem() == reason
    with pytest.raises(decoders.Unavailable, match="not installed"):
        missing.load("albumentationsx")


def test_a_missing_system_library_names_the_debian_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As if PyTurboJPEG were installed and libturbojpeg were not.
    found = decoders.importlib.util.find_spec

    def find_spec(name: str) -> object:
        return object() if name == "turbojpeg" else found(name)

    monkeypatch.setattr(decoders.importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(decoders.ctypes.util, "find_library", lambda name: None)
    assert decoders.get("turbojpeg").problem() == (
        "turbojpeg: libturbojpeg.so not found; install libturbojpeg0"
    )


def test_the_native_decoder_is_the_librarys_own() -> None:
    assert decoders.layout_of(decoders.get("native"), "torchvision") == decoders.CHW_TENSOR
    assert decoders.layout_of(decoders.get("native"), "pillow") == decoders.PIL_IMAGE
    assert decoders.layout_of(decoders.get("pil"), "pillow") == decoders.HWC_NUMPY
    with pytest.raises(ValueError, match="its own pipeline decodes"):
        decoders.library_layout("dali")


# -- decoding with what the driver's env has (numpy, Pillow) ------------------------------------
@pytest.fixture
def jpeg(tmp_path: Path) -> Path:
    path = tmp_path / "a.jpg"
    pixels = np.random.default_rng(0).integers(0, 255, (40, 56, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path, quality=95)
    return path


def test_pil_decodes_to_hwc_uint8_and_the_output_is_touched(jpeg: Path) -> None:
    decoder = decoders.get("pil")
    image = decoders.decode_file(decoder.load(), decoder, jpeg)
    assert image.shape == (40, 56, 3) and image.dtype == np.uint8
    assert decoders.touch(image, decoder.layout) == int(image[-1, -1, -1])
    assert decoder.version() == Image.__version__


class _NoReshape(np.ndarray):
    def reshape(self, *args: object, **kwargs: object) -> np.ndarray:
        raise AssertionError("touch reshaped (a copy of an output that is not row-major)")


def test_touch_reads_the_last_value_by_index_without_copying() -> None:
    image = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    strided = image.view(_NoReshape)[:, ::-1]  # not row-major: a reshape would copy it
    assert decoders.touch(strided, decoders.HWC_NUMPY) == int(image[-1, 0, -1])


@pytest.mark.parametrize("content", [b"not a jpeg at all", "truncated"])
def test_a_corrupt_jpeg_fails_with_the_decoders_own_error_in_one_line(
    jpeg: Path, content: bytes | str
) -> None:
    bad = jpeg.with_name("bad.jpg")
    data = jpeg.read_bytes()
    bad.write_bytes(data[: len(data) // 3] if content == "truncated" else content)
    decoder = decoders.get("pil")
    with pytest.raises(decoders.DecodeError) as caught:
        decoders.decode_file(decoder.load(), decoder, bad)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("pil could not decode bad.jpg: ")
    assert "Error" in message  # the decoder's own exception, named


def test_conversion_to_each_numpy_and_pil_library_layout(jpeg: Path) -> None:
    hwc = np.asarray(Image.open(jpeg).convert("RGB"))
    # HWC numpy: AlbumentationsX's own input, unchanged (no copy).
    assert decoders.convert(hwc, decoders.HWC_NUMPY, "albumentationsx") is hwc
    # To Pillow: a PIL image exactly as Pillow's decoder returns one.
    image = decoders.convert(hwc, decoders.HWC_NUMPY, "pillow")
    assert isinstance(image, Image.Image) and image.mode == "RGB" and image.size == (56, 40)
    assert np.array_equal(np.asarray(image), hwc)
    # From Pillow's image back to HWC numpy.
    back = decoders.convert(image, decoders.PIL_IMAGE, "albumentationsx")
    assert back.flags.c_contiguous and np.array_equal(back, hwc)
    assert decoders.convert(image, decoders.PIL_IMAGE, "pillow") is image
    # Torch layouts (torchvision, Kornia) in a torch env: tests/test_decoders_envs.py.


# -- the plan, the config and the table -----------------------------------------------------------
def test_the_table_job_runs_only_where_a_decoder_besides_native_is_configured() -> None:
    assert config()["cpu_dataloader"]["decoders"] == ["native"]
    plain = sweep.Sweep(config(), "d-0123456789ab")
    assert not [j for j in plain.jobs() if j.rule == "decoders"]
    assert paths.DECODERS_TABLE in plain.table_outputs().values()  # the regime's table
    chosen = config(cpu_dataloader={"decoders": ["native", "simplejpeg"]})
    jobs = [j for j in sweep.Sweep(chosen, "d-0123456789ab").jobs() if j.rule == "decoders"]
    assert len(jobs) == 1 and jobs[0].library == decoders.ENV_LIBRARY
    assert jobs[0].outputs == (
        "results/raw/m/d-0123456789ab/cpu_dataloader/albumentationsx/decoders.json",
    )
    kind = regimes.KINDS["decoders"]
    wildcards = {"machine": "m", "dataset": "d", "library": "x"}
    flags = kind.args(sweep.Sweep(chosen, "d-0123456789ab"), kind, wildcards)
    assert flags["decoders"] == ["native", "simplejpeg"] and flags["num-images"] == 12
    many = config(cpu_dataloader={"decoders": ["pil"], "num_images": 1000})
    assert kind.args(sweep.Sweep(many, "d"), kind, wildcards)["num-images"] == decoders.MAX_IMAGES


def test_without_its_env_library_the_job_runs_in_the_first_configured_one() -> None:
    chosen = config(libraries=["pillow", "torchvision"], cpu_dataloader={"decoders": ["pil"]})
    jobs = [j for j in sweep.Sweep(chosen, "d").jobs() if j.rule == "decoders"]
    assert [j.library for j in jobs] == ["pillow"]


def test_the_table_job_follows_the_resolution_sweep_of_its_regime() -> None:
    chosen = config(
        cpu_dataloader={"decoders": ["native", "pil"]}, resolutions=[256],
        resolution_regimes=["micro", "cpu_dataloader"],
    )  # fmt: skip
    s = sweep.Sweep(chosen, "d", ("d-r256",))
    assert sorted(j.dataset for j in s.jobs() if j.rule == "decoders") == ["d", "d-r256"]


def test_an_unknown_decoder_in_the_config_stops_the_run_naming_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        config(cpu_dataloader={"decoders": ["native", "libjpeg"]})
    message = str(caught.value)
    assert "cpu_dataloader.decoders" in message
    assert all(name in message for name in decoders.NAMES)


def _result(tmp_path: Path) -> Path:
    ok = ok_row([900.0, 1000.0, 1100.0], [0.1, 0.1, 0.1], warmup_iterations=2, num_images=2)
    rows = {
        "native": {**ok, "decoder": "native", "threads": 1, "scope": decoders.SCOPE},
        "simplejpeg": {
            **ok_row([2000.0, 2100.0, 2200.0], [0.1] * 3, warmup_iterations=2),
            "decoder": "simplejpeg", "threads": 1, "decoder_version": "1.9.0",
        },
        "turbojpeg": {
            **non_ok_row("skipped", "turbojpeg: libturbojpeg.so not found; install libturbojpeg0"),
            "decoder": "turbojpeg", "threads": 1,
        },
    }  # fmt: skip
    metadata = {
        "machine": "m", "regime": decoders.REGIME, "scope": decoders.SCOPE,
        "library": "albumentationsx",
        "dataset": {"key": "d-0123456789ab", "name": "d", "mean_megapixels": 0.25},
        "benchmark_params": {"num_images": 2},
    }  # fmt: skip
    out = tmp_path / "decoders.json"
    write_result_file(out, metadata, rows)
    return out


def test_the_table_has_one_row_per_decoder_in_declared_order(tmp_path: Path) -> None:
    frame = tidy.load([_result(tmp_path)])
    assert set(frame["regime"]) == {decoders.REGIME}  # never a cpu_dataloader row
    table = decoders_table.table(frame)
    assert list(table["decoder"]) == ["native", "simplejpeg", "turbojpeg"]
    native = table.iloc[0]
    assert native["img_s_per_core"] == 1000.0 and native["library_env"] == "albumentationsx"
    assert (native["ci_low"], native["ci_high"], native["n"]) == (900.0, 1100.0, 3)
    assert native["image_size"] == "as staged" and native["megapixels_per_s"] == 250.0
    skipped = table.iloc[2]
    assert skipped["status"] == "skipped" and "install libturbojpeg0" in skipped["reason"]
    assert np.isnan(skipped["img_s_per_core"]) and skipped["n"] == 0
    assert list(table.columns[:12]) == [
        "machine", "dataset", "image_size", "megapixels", "decoder", "library_env",
        "img_s_per_core", "ci_low", "ci_high", "ci_level", "n", "megapixels_per_s",
    ]  # fmt: skip
    # Without decoder rows: the columns, no row.
    assert list(decoders_table.table(frame.iloc[0:0]).columns) == list(decoders_table.COLUMNS)


def test_the_engine_refuses_an_unknown_decoder_before_measuring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from augbench.measuring.engines import decoders as engine

    with pytest.raises(SystemExit):
        engine.parse_args(
            ["--library", "albumentationsx", "--decoders", "pil,libjpeg", "--manifest", "m.json",
             "--num-images", "2", "--machine", "m", "--output", str(tmp_path / "o.json")]
        )  # fmt: skip
    assert "unknown decoder 'libjpeg'; valid decoders: native, pil" in capsys.readouterr().err
    settings = engine.parse_args(
        ["--library", "pillow", "--decoders", "native,pil", "--manifest", "m.json",
         "--num-images", "2", "--machine", "m", "--output", str(tmp_path / "o.json")]
    )  # fmt: skip
    assert settings.decoders == ("native", "pil") and settings.min_values == decoders.MIN_VALUES
    with pytest.raises(AttributeError):  # a frozen record
        settings.library = "x"  # type: ignore[misc]


def test_bytes_io_is_what_pil_reads(jpeg: Path) -> None:
    # The pil decoder decodes the file's bytes, as every declared decoder does.
    assert "BytesIO" in decoders.get("pil").call
    assert np.array_equal(
        decoders.get("pil").load()(jpeg), np.asarray(Image.open(io.BytesIO(jpeg.read_bytes())))
    )


def test_a_cpu_the_peer_measured_gets_its_published_rate_beside_each_decoder(
    tmp_path: Path,
) -> None:
    """Rows of a machine reporting a CPU imread_benchmark measured (its name in either case,
    with or without trademark marks) carry that decoder's published single-thread rate and its
    runs' range; a native row, and every row of a CPU it did not measure (a VM's hidden name),
    carry none."""
    payload = json.loads(_result(tmp_path).read_text())
    payload["metadata"]["system_info"] = {
        "processor": "Intel(R) Xeon(R) Platinum 8581C CPU @ 2.30GHz"
    }
    emerald = tmp_path / "emerald.json"
    emerald.write_text(json.dumps(payload))
    table = decoders_table.table(tidy.load([emerald])).set_index("decoder")
    published = table.loc["simplejpeg"]
    assert published["peer_img_s_per_core"] == 735.3
    assert (published["peer_run_low"], published["peer_run_high"]) == (733.8, 736.0)
    assert published["peer_cpu"] == "INTEL(R) XEON(R) PLATINUM 8581C CPU @ 2.30GHz"
    assert "imread_benchmark" in published["peer_source"]
    assert table.loc["turbojpeg"]["peer_img_s_per_core"] == 708.2  # skipped here, published there
    assert np.isnan(table.loc["native"]["peer_img_s_per_core"])
    payload["metadata"]["system_info"] = {"processor": "Intel(R) Xeon(R) Processor"}
    hidden = tmp_path / "hidden.json"
    hidden.write_text(json.dumps(payload))
    none = decoders_table.table(tidy.load([hidden]))
    assert none["peer_img_s_per_core"].isna().all() and set(none["peer_cpu"]) == {""}
    assert peer_decoders.cpu_key("AMD EPYC 9B14") == peer_decoders.cpu_key("amd epyc  9B14")
