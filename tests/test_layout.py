"""augbench.workload.layout on numpy arrays and PIL images (the driver env has no torch; torch
tensors are covered in the library envs by tests/test_layout_envs.py)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from augbench.workload import layout
from tests.synthetic import multi_regime


@pytest.fixture
def hwc() -> np.ndarray:
    return np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)


@pytest.mark.parametrize(
    ("shape", "strides", "dense", "fmt"),
    [
        ((4, 5, 3), (15, 3, 1), True, "contiguous"),  # HWC array
        ((3, 4, 5), (1, 15, 3), True, "channels_last"),  # decode_image's CHW tensor
        ((1, 3, 4, 5), (60, 1, 15, 3), True, "channels_last"),  # Kornia's 1x3xHxW
        ((3, 4, 5), (20, 5, 1), True, "contiguous"),  # row-major CHW
        ((4, 5, 3), (15, -3, 1), False, "strided"),  # numpy flip view
        ((3, 2, 2), (1, 15, 3), False, "strided"),  # crop view of a channels-last tensor
        ((3, 4, 5), (0, 5, 1), False, "strided"),  # broadcast grayscale
        ((4, 3, 5), (5, 20, 1), True, "dense"),  # another permutation
    ],
)
def test_density_and_memory_format(shape, strides, dense, fmt) -> None:
    assert layout.is_dense(shape, strides) is dense
    assert layout.memory_format(shape, strides) == fmt


def test_describe_numpy(hwc: np.ndarray) -> None:
    d = layout.describe(hwc[:, ::-1])
    assert d["type"] == "numpy.ndarray" and d["strides"] == [15, -3, 1]
    assert d["memory_format"] == "strided" and not d["contiguous"] and d["is_view"]


def test_materialize_keeps_owned_dense_outputs(hwc: np.ndarray) -> None:
    out = hwc + 1  # a fresh array
    assert layout.materialize(out, hwc) is out
    transposed = np.ascontiguousarray(hwc.transpose(2, 0, 1)).transpose(1, 2, 0)  # dense, not C
    assert layout.materialize(transposed, hwc) is transposed


def test_materialize_copies_views_and_negative_strides(hwc: np.ndarray) -> None:
    flipped = hwc[:, ::-1]
    out = layout.materialize(flipped, hwc)
    assert out is not flipped and not np.shares_memory(out, hwc)
    assert out.flags["C_CONTIGUOUS"] and np.array_equal(out, flipped)
    same = layout.materialize(hwc, hwc)  # returning the input itself is a view of it
    assert same is not hwc and np.array_equal(same, hwc)
    crop = hwc[1:3, 1:4]
    assert layout.needs_copy(crop, hwc)
    assert np.array_equal(layout.materialize(crop, hwc), crop)


def test_copy_keeps_dimension_order(hwc: np.ndarray) -> None:
    chw_view = hwc.transpose(2, 0, 1)[:, 1:3, 1:4]  # channels-last memory, with gaps
    out = layout.dense_copy(chw_view)
    assert layout.memory_format(out.shape, layout._numpy_strides(out)) == "channels_last"
    assert np.array_equal(out, chw_view)


def test_pil_outputs(hwc: np.ndarray) -> None:
    image = Image.fromarray(hwc, mode="RGB")
    flipped = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    assert layout.describe(image)["memory_format"] == "PIL"
    assert layout.materialize(flipped, image) is flipped
    copied = layout.materialize(image, image)
    assert copied is not image and np.array_equal(np.asarray(copied), hwc)


def test_lazy_output_table_flags_rows_over_half(tmp_path) -> None:
    import json

    import pandas as pd

    from augbench.analysis import lazy_outputs, summary

    def row(call_us: float, mat_us: float, strides: list[int]) -> dict:
        total = call_us + mat_us
        return {
            "status": "ok",
            "output": {"type": "numpy.ndarray", "dtype": "uint8", "shape": [4, 5, 3],
                       "strides": strides, "contiguous": strides[1] > 0,
                       "memory_format": "strided" if strides[1] < 0 else "contiguous",
                       "is_view": strides[1] < 0},
            "shares_input_memory": strides[1] < 0, "returns_input": False,
            "same_object_twice": False, "materialize_copies": strides[1] < 0,
            "call_us": call_us, "materialize_us": mat_us, "call_materialize_us": total,
            "call_img_s": 1e6 / call_us, "call_materialize_img_s": 1e6 / total,
            "materialize_share": mat_us / total, "materialize_dominates": mat_us / total > 0.5,
        }  # fmt: skip

    payload = {
        "metadata": {"machine": "m", "library": "albumentationsx", "dataset": {"key": "d-1"}},
        "results": {
            "HorizontalFlip": row(20.0, 1200.0, [15, -3, 1]),
            "GaussianBlur": row(1000.0, 1.0, [15, 3, 1]),
            "ColorJitter": {"status": "unsupported", "reason": "no hue"},
        },
    }
    path = tmp_path / "albumentationsx.json"
    path.write_text(json.dumps(payload))
    frame = lazy_outputs.table([path])
    assert list(lazy_outputs.flagged(frame)["transform"]) == ["HorizontalFlip"]
    page = lazy_outputs.markdown(frame)
    assert (
        "| m | d-1 | albumentationsx | HorizontalFlip | strided [15, -3, 1] | yes | 50,000 | 820 "
        "| 98 % |" in page
    )
    assert "no hue" in page
    csv = tmp_path / "lazy.csv"
    frame.to_csv(csv, index=False)
    text = summary.markdown(multi_regime(), lazy=pd.read_csv(csv))
    section = text.split("## Rows dominated by materialization")[1]
    assert "| albumentationsx | HorizontalFlip |" in section and "GaussianBlur" not in section
