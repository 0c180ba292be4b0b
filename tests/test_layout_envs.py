"""Native input layout and the materialization rule, checked by the real libraries in their envs
(tests/helpers/layout_probe.py): the stored micro input has exactly the layout of a fresh decode
(type, dtype, shape, strides, same pixels); ``materialize`` returns an output that already owns
dense memory (contiguous or channels-last) without copying it (same data pointer) and copies views
and the input itself, keeping a channels-last output channels-last."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.test_equivalence import LIBRARIES, REPO, library_python

pytestmark = pytest.mark.envs


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    from skimage import data

    folder = tmp_path_factory.mktemp("jpegs")
    paths = []
    for name, image in (("astronaut", data.astronaut()), ("coffee", data.coffee()[:301, :257])):
        path = folder / f"{name}.jpg"
        Image.fromarray(np.ascontiguousarray(image)).save(path, quality=90)
        paths.append(path)
    return paths


@pytest.mark.parametrize("library", LIBRARIES)
def test_native_input_and_materialize(library: str, jpegs: list[Path], tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    proc = subprocess.run(
        [str(library_python(library)), str(REPO / "tests" / "helpers" / "layout_probe.py"),
         library, str(report_path), *map(str, jpegs)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(report_path.read_text())
    assert any(name.startswith("stored input") for name in report)
    assert any(name.startswith("materialize") for name in report)
    failed = {name: r["detail"] for name, r in report.items() if not r["ok"]}
    assert not failed, json.dumps(failed, indent=1)
