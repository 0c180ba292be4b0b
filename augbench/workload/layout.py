"""Memory-layout probes of images and transform outputs, and the one materialization rule.

Shared by the adapters (``Adapter.materialize``), the micro engine (input and output layout
recorded with every row) and the lazy-output diagnostic (workflow/scripts/lazy_outputs.py).
Works on numpy arrays, torch tensors and PIL images without importing torch or PIL: a library env
has only the libraries it needs.

The rule (docs/methodology.md): a timed call ends with an output that owns its memory and is fully
computed. An output is copied iff it shares memory with the call's input, or its memory is not
dense (gaps, negative or zero strides). A copy keeps the output's dimension order, so a
channels-last output stays channels-last: no library pays a relayout that another does not.
Outputs already dense and owned (C-contiguous, channels-last, any other dense permutation, a new
PIL image) are returned as they are.
"""

from __future__ import annotations

from math import inf
from typing import Any

import numpy as np


def kind(obj: Any) -> str:
    """'numpy', 'torch', 'pil' or 'other', without importing torch or PIL."""
    if isinstance(obj, np.ndarray):
        return "numpy"
    module = type(obj).__module__
    if module.startswith("torch") and hasattr(obj, "stride") and hasattr(obj, "data_ptr"):
        return "torch"
    if module.startswith("PIL") and hasattr(obj, "getbands"):
        return "pil"
    return "other"


def _dims_outer_to_inner(shape: tuple[int, ...], strides: tuple[int, ...]) -> list[int]:
    """Dimension order of the memory, outermost first (largest |stride|; ties keep dim order).
    A broadcast (zero-stride) dimension counts as outermost: a copy of an expanded grayscale
    CHW tensor comes out row-major CHW, as ``.contiguous()`` would make it."""
    return sorted(range(len(shape)), key=lambda d: (-abs(strides[d]) if strides[d] else -inf, d))


def is_dense(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """True iff the elements fill one block without gaps, overlaps or reversed axes, in any
    dimension order (strides in elements). Size-1 dimensions do not count."""
    # Runs inside the timed loop (materialize): plain loops, no intermediate objects.
    if 0 in shape:
        return True
    dims = sorted((st, sz) for sz, st in zip(shape, strides) if sz != 1)  # noqa: B905
    expected = 1
    for stride, size in dims:
        if stride != expected:
            return False
        expected *= size
    return True


def _torch_strides(t: Any) -> tuple[int, ...]:
    return t.stride()  # a tuple of ints already


def _numpy_strides(a: np.ndarray) -> tuple[int, ...]:
    return tuple(s // a.itemsize for s in a.strides) if a.itemsize else tuple(a.strides)


def memory_format(shape: tuple[int, ...], strides: tuple[int, ...]) -> str:
    """'contiguous' (row-major in the logical dim order), 'channels_last' (a CHW or NCHW tensor
    whose memory is HWC / NHWC), 'dense' (another dense dimension order) or 'strided' (a view with
    gaps, reversed or repeated elements)."""
    if not is_dense(shape, strides):
        return "strided"
    order = [d for d in _dims_outer_to_inner(shape, strides) if shape[d] != 1]
    logical = [d for d in range(len(shape)) if shape[d] != 1]
    if order == logical:
        return "contiguous"
    n = len(shape)
    if n in (3, 4):
        c, h, w = n - 3, n - 2, n - 1
        channels_last = [d for d in [*range(n - 3), h, w, c] if shape[d] != 1]
        if order == channels_last:
            return "channels_last"
    return "dense"


def describe(obj: Any) -> dict[str, Any]:
    """Type, dtype, shape, strides (in elements), contiguity and memory format of an image or
    output; JSON-serialisable, recorded with result rows."""
    k = kind(obj)
    if k == "numpy":
        shape = tuple(int(s) for s in obj.shape)
        strides = _numpy_strides(obj)
        return {
            "type": "numpy.ndarray",
            "dtype": str(obj.dtype),
            "shape": list(shape),
            "strides": list(strides),
            "contiguous": bool(obj.flags["C_CONTIGUOUS"]),
            "memory_format": memory_format(shape, strides),
            "is_view": obj.base is not None,
        }
    if k == "torch":
        shape = tuple(int(s) for s in obj.shape)
        strides = _torch_strides(obj)
        return {
            "type": f"{type(obj).__module__}.{type(obj).__name__}",
            "dtype": str(obj.dtype),
            "shape": list(shape),
            "strides": list(strides),
            "contiguous": bool(obj.is_contiguous()),
            "memory_format": memory_format(shape, strides),
            "is_view": bool(obj._base is not None),
            "device": str(obj.device),
        }
    if k == "pil":
        width, height = obj.size
        return {
            "type": "PIL.Image.Image",
            "dtype": f"PIL:{obj.mode}",
            "shape": [height, width, len(obj.getbands())],
            "strides": None,
            "contiguous": True,
            "memory_format": "PIL",  # Pillow's own row storage (RGB kept as 4 bytes per pixel)
            "is_view": False,
        }
    return {"type": f"{type(obj).__module__}.{type(obj).__name__}", "memory_format": "unknown"}


def _torch_span(t: Any) -> tuple[int, int]:
    storage = t.untyped_storage()
    start = int(storage.data_ptr())
    return start, start + int(storage.nbytes())


def shares_memory(a: Any, b: Any) -> bool:
    """True iff ``a`` and ``b`` may share memory (the same object, the same PIL image core, numpy
    buffers whose bounds overlap, torch tensors on overlapping storage)."""
    if a is b:
        return True
    a_np, b_np = isinstance(a, np.ndarray), isinstance(b, np.ndarray)
    if a_np and b_np:
        return bool(np.may_share_memory(a, b))
    a_torch = not a_np and hasattr(a, "untyped_storage")
    b_torch = not b_np and hasattr(b, "untyped_storage")
    if a_torch and b_torch:
        # A view (slice, permute, expand) keeps its base's storage: the same storage pointer.
        # Distinct storages overlap only when both wrap one foreign buffer (torch.from_numpy).
        sa, sb = a.untyped_storage(), b.untyped_storage()
        if sa.data_ptr() == sb.data_ptr():
            return sa.nbytes() > 0
        if a.device != b.device or a.numel() == 0 or b.numel() == 0:
            return False
        a0, a1 = _torch_span(a)
        b0, b1 = _torch_span(b)
        return a0 < b1 and b0 < a1
    if (a_np and b_torch) or (a_torch and b_np):
        arr, ten = (a, b) if a_np else (b, a)
        if ten.device.type != "cpu" or ten.numel() == 0 or arr.size == 0:
            return False
        t0, t1 = _torch_span(ten)
        lo, hi = _byte_bounds(arr)
        return t0 < hi and lo < t1
    if kind(a) == "pil" and kind(b) == "pil":
        return bool(a.im is b.im)
    return False


def _byte_bounds(arr: np.ndarray) -> tuple[int, int]:
    utils = getattr(np.lib, "array_utils", None)  # numpy >= 2; np.byte_bounds before
    return (utils.byte_bounds if utils else np.byte_bounds)(arr)  # type: ignore[attr-defined]


def needs_copy(output: Any, source: Any) -> bool:
    """The materialization rule: copy iff the output shares the input's memory or is not dense."""
    if shares_memory(output, source):
        return True
    if isinstance(output, np.ndarray):
        flags = output.flags
        if flags.c_contiguous or flags.f_contiguous:
            return False
        return not is_dense(output.shape, _numpy_strides(output))
    if hasattr(output, "is_contiguous") and hasattr(output, "stride"):
        return not _torch_dense(output)
    return False


def _torch_dense(t: Any) -> bool:
    """is_dense for a tensor, with the common layouts checked first (this runs per timed call)."""
    if t.is_contiguous():
        return True
    st, sh = t.stride(), t.shape
    if len(sh) == 3 and st == (1, sh[2] * sh[0], sh[0]):  # CHW over HWC memory
        return True
    if len(sh) == 4 and st == (sh[1] * sh[2] * sh[3], 1, sh[3] * sh[1], sh[1]):  # NCHW over NHWC
        return True
    return is_dense(sh, st)


def dense_copy(output: Any) -> Any:
    """A copy that owns its memory, keeps the output's dimension order (a channels-last output
    stays channels-last) and is dense; reversed axes come out in forward order."""
    k = kind(output)
    if k == "pil":
        return output.copy()
    if k not in ("numpy", "torch"):
        raise TypeError(f"cannot copy a {type(output).__module__}.{type(output).__name__}")
    shape = tuple(int(s) for s in output.shape)
    strides = _numpy_strides(output) if k == "numpy" else _torch_strides(output)
    order = _dims_outer_to_inner(shape, strides)
    inverse = [order.index(d) for d in range(len(shape))]
    permuted = [shape[d] for d in order]
    identity = order == list(range(len(shape)))
    if k == "numpy":
        out = np.empty(permuted, dtype=output.dtype)
        out = out if identity else out.transpose(inverse)
        np.copyto(out, output)
        return out
    import torch

    buffer = torch.empty(permuted, dtype=output.dtype, device=output.device)
    return (buffer if identity else buffer.permute(inverse)).copy_(output)


def materialize(output: Any, source: Any) -> Any:
    """``output`` as it is where it already owns dense memory; otherwise its dense copy."""
    return dense_copy(output) if needs_copy(output, source) else output
