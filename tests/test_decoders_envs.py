"""The decoders table's engine (augbench/measuring/engines/decoders.py) in library envs on a tiny
staged dataset: in the env that carries every decoder (augbench.workload.decoders.ENV_LIBRARY) each
decoder whose system library is here is measured and the others are `skipped` rows saying what to
install; with a decoder's package not importable its rows are `skipped`, naming the package, and a
corrupt JPEG is an `error` row with the decoder's own message in one line. Each decoder's output
converted to each library's native input has exactly that library's form."""

from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, jpeg_manifest, run_engine

from augbench.workload import decoders

pytestmark = pytest.mark.envs

ALL = ",".join(decoders.NAMES)


def test_every_decoder_here_is_measured_and_the_others_say_why(
    albumentationsx_env: Path, tmp_path: Path
) -> None:
    manifest = jpeg_manifest(tmp_path, count=4)
    payload = run_engine(
        albumentationsx_env, "decoders", "--library", "albumentationsx", "--decoders", ALL,
        "--manifest", str(manifest), "--num-images", "4", "--min-values", "3",
        "--max-values", "4", output=tmp_path / "out.json",
    )  # fmt: skip
    assert payload["metadata"]["regime"] == decoders.REGIME
    rows = payload["results"]
    assert list(rows) == list(decoders.NAMES)
    turbo_here = ctypes.util.find_library("turbojpeg") is not None
    for name, row in rows.items():
        assert row["decoder"] == name and row["threads"] == 1
        if name == "turbojpeg" and not turbo_here:
            assert row["status"] == "skipped"
            assert row["reason"] == "turbojpeg: libturbojpeg.so not found; install libturbojpeg0"
            continue
        assert row["status"] == "ok", row.get("reason")
        assert row["ci_low"] <= row["median_throughput"] <= row["ci_high"]
        assert 3 <= row["num_successful_runs"] <= 4 and row["passes_per_value"] >= 1
    assert rows["native"]["decoder_call"] == "cv2.imread + cv2.cvtColor(BGR2RGB)"
    assert rows["simplejpeg"]["decoder_version"] == "1.9.0"
    assert rows["torchvision"]["output_layout"] == decoders.DECODED_LAYOUTS[decoders.CHW_TENSOR]


def test_missing_packages_are_skipped_and_a_corrupt_jpeg_is_the_decoders_error(
    torchvision_env: Path, tmp_path: Path
) -> None:
    manifest = jpeg_manifest(tmp_path, count=3)
    (tmp_path / "images" / "1.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a JPEG")
    rows = run_engine(
        torchvision_env, "decoders", "--library", "torchvision", "--decoders", ALL,
        "--manifest", str(manifest), "--num-images", "3", "--min-values", "1",
        "--max-values", "1", output=tmp_path / "out.json", hide=("cv2",),
    )["results"]  # fmt: skip
    # OpenCV made unimportable, as in an env without it.
    assert rows["opencv"]["status"] == "skipped"
    assert rows["opencv"]["reason"] == (
        "opencv: Python package cv2 not installed (PyPI opencv-python-headless)"
    )
    decoding = ["native", "pil", "torchvision", "simplejpeg"]
    if ctypes.util.find_library("turbojpeg") is not None:
        decoding.append("turbojpeg")
    else:
        assert rows["turbojpeg"]["status"] == "skipped"
    for name in decoding:
        reason = rows[name]["reason"]
        assert rows[name]["status"] == "error" and "\n" not in reason
        assert reason.startswith(f"{name} could not decode 1.jpg: "), reason


def test_each_decoders_output_converts_to_each_librarys_native_input(
    albumentationsx_env: Path, tmp_path: Path
) -> None:
    from PIL import Image

    jpeg = tmp_path / "a.jpg"
    Image.new("RGB", (37, 23), (10, 200, 30)).save(jpeg)
    report_path = tmp_path / "report.json"
    names = [d.name for d in decoders.DECODERS if d.name not in ("native", "turbojpeg")]
    proc = subprocess.run(
        [str(albumentationsx_env), str(REPO / "tests" / "helpers" / "decoder_layouts.py"),
         str(report_path), str(jpeg), *names],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(report_path.read_text())
    assert len(report) == len(names) * 4  # albumentationsx, torchvision, pillow, kornia
    failed = {check: r["detail"] for check, r in report.items() if not r["ok"]}
    assert not failed, json.dumps(failed, indent=1)


def test_dataloader_rows_with_a_chosen_decoder_are_ok_and_name_it(
    albumentationsx_env: Path, torchvision_env: Path, tmp_path: Path
) -> None:
    """A decode-scope setting with a decoder besides native: ok rows whose decoder and call are
    the chosen one's, its output converted to the library's input (numpy for AlbumentationsX,
    a CHW tensor for torchvision), under worker processes and threads alike; its rows only."""
    manifest = jpeg_manifest(tmp_path, count=8)
    cases = [
        (
            albumentationsx_env,
            "albumentationsx",
            "decode-w2-simplejpeg,decode-w2-simplejpeg-thread",
        ),
        (torchvision_env, "torchvision", "decode-w2-pil"),
    ]
    for python, library, settings in cases:
        outputs = [tmp_path / f"{library}-{s}.json" for s in settings.split(",")]
        subprocess.run(
            [str(python), "-m", "augbench.measuring.engines.cpu_dataloader", "--library", library,
             "--settings", settings, "--outputs", *map(str, outputs), "--manifest", str(manifest),
             "--num-images", "8", "--transforms", "HorizontalFlip", "--batch-size", "4",
             "--batches-per-run", "2", "--num-runs", "3", "--baseline-runs", "1",
             "--machine", "test"],
            check=True, cwd=REPO, capture_output=True, text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        for setting, output in zip(settings.split(","), outputs, strict=True):
            payload = json.loads(output.read_text())
            row = payload["results"]["HorizontalFlip"]
            decoder = setting.split("-")[2]
            assert row["status"] == "ok", row
            assert row["decoder"] == decoder
            assert row["decoder_call"] == decoders.get(decoder).call
            assert row["loader"] == ("thread" if setting.endswith("-thread") else "process")
            assert payload["metadata"]["decode"]["decoder"] == decoder
            assert payload["metadata"]["benchmark_params"]["baseline_runs"] == 0
            assert not row.get("bare_loop_throughputs")
            assert len(row["throughputs"]) >= 3


def test_a_decoder_missing_here_loses_only_its_rows(torchvision_env: Path, tmp_path: Path) -> None:
    """With OpenCV not importable (an env without it) the opencv setting's rows are skipped,
    saying so."""
    payload = run_engine(
        torchvision_env, "cpu_dataloader", "--library", "torchvision", "--scope", "decode",
        "--workers", "1", "--decoder", "opencv", "--manifest",
        str(jpeg_manifest(tmp_path, count=4)), "--num-images", "4", "--transforms",
        "HorizontalFlip", "--batch-size", "2", output=tmp_path / "opencv.json", hide=("cv2",),
    )  # fmt: skip
    (row,) = payload["results"].values()
    assert row["decoder"] == "opencv" and row["status"] == "skipped"
    assert row["reason"] == "opencv: Python package cv2 not installed (PyPI opencv-python-headless)"


def test_training_feeds_its_loader_with_the_chosen_decoder(
    torchvision_env: Path, tmp_path: Path
) -> None:
    """The training regime reads cpu_dataloader.decoders: its cpu feed's workers decode with
    simplejpeg (an ok row naming it, the call its declaration's), and a decoder missing from the
    env (OpenCV made unimportable) loses only its rows, saying why."""
    manifest = str(jpeg_manifest(tmp_path, count=8))
    common = ["--library", "torchvision", "--workers", "1", "--manifest", manifest,
              "--num-images", "8", "--transforms", "HorizontalFlip", "--batch-size", "4",
              "--accelerator", "sleep:5", "--steps", "4", "--warmup-steps", "1",
              "--model-steps", "2", "--blocks", "2"]  # fmt: skip
    chosen = run_engine(
        torchvision_env, "training", *common, "--decoder", "simplejpeg",
        output=tmp_path / "simplejpeg.json",
    )  # fmt: skip
    (row,) = chosen["results"].values()
    assert row["status"] == "ok", row
    assert row["decoder"] == "simplejpeg" and row["feed"] == "cpu"
    assert row["decoder_call"] == decoders.get("simplejpeg").call
    assert chosen["metadata"]["benchmark_params"]["decoder"] == "simplejpeg"
    missing = run_engine(
        torchvision_env, "training", *common, "--decoder", "opencv",
        output=tmp_path / "opencv.json", hide=("cv2",),
    )  # fmt: skip
    (row,) = missing["results"].values()
    assert row["status"] == "skipped" and row["decoder"] == "opencv"
    assert "cv2 not installed" in row["reason"]


def test_the_gpu_feed_decodes_on_the_device_with_nvjpeg(
    torchvision_env: Path, tmp_path: Path
) -> None:
    """--decoder nvjpeg feeds the GPU feed (on CPU tensors here): the workers read the files'
    bytes and the step decodes each batch on the device; the row names the decoder and what its
    step timed. nvJPEG with the cpu feed is refused in one line."""
    manifest = str(jpeg_manifest(tmp_path, count=8))
    common = ["--library", "torchvision", "--workers", "1", "--manifest", manifest,
              "--num-images", "8", "--transforms", "HorizontalFlip", "--batch-size", "4",
              "--accelerator", "sleep:5", "--steps", "4", "--warmup-steps", "1",
              "--model-steps", "2", "--blocks", "2", "--decoder", "nvjpeg"]  # fmt: skip
    doc = run_engine(
        torchvision_env, "training", *common, "--feeds", "gpu", "--allow-cpu-device-feed",
        "true", output=tmp_path / "nvjpeg.json",
    )  # fmt: skip
    (row,) = doc["results"].values()
    assert row["status"] == "ok", row
    assert (row["feed"], row["decoder"]) == ("gpu", "nvjpeg")
    assert row["decoder_call"] == decoders.device_decoder("nvjpeg").call
    assert "decode_jpeg on cpu" in row["feed_timed"]
    refused = subprocess.run(
        [str(torchvision_env), "-m", "augbench.measuring.engines.training", *common,
         "--feeds", "cpu", "--machine", "t", "--output", str(tmp_path / "x.json")],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert refused.returncode == 2
    assert "--decoder nvjpeg: the gpu feed's only (--feeds gpu)" in refused.stderr
