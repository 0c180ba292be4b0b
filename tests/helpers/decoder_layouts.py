"""Each decoder's output converted to each library's native input, in one library env (run by
tests/test_decoders_envs.py with ``.venvs/<library>/bin/python``): the converted image has exactly
the form the adapter's ``from_array`` gives (type, dtype, shape, strides) and the decoder's pixels.
Writes a JSON report: {"<decoder> -> <library>": {"ok": bool, "detail": ...}}.

argv: report path, JPEG path, decoder names...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from augbench.workload import adapters, decoders


def form(image: Any) -> dict[str, Any]:
    """Type, dtype, shape and strides of an image (a PIL image: its mode and size)."""
    if hasattr(image, "getpixel"):
        return {"type": type(image).__name__, "mode": image.mode, "size": list(image.size)}
    return {
        "type": type(image).__name__,
        "dtype": str(image.dtype),
        "shape": list(image.shape),
        "strides": list(image.stride() if hasattr(image, "stride") else image.strides),
    }


def main() -> int:
    report_path, jpeg, *names = sys.argv[1:]
    report: dict[str, dict[str, Any]] = {}
    for name in names:
        decoder = decoders.get(name)
        output = decoders.decode_file(decoder.load(), decoder, Path(jpeg))
        pixels = np.ascontiguousarray(decoders.to_hwc(output, decoder.layout))
        for library in adapters.names():
            layout = adapters.get(library).decoded_layout
            # DALI decodes in its own pipeline; the forks take their originals' layouts.
            if not layout or library.endswith(("_mit", "_simd")):
                continue
            converted = decoders.convert(output, decoder.layout, library)
            expected = adapters.get(library).from_array(pixels)
            back = np.ascontiguousarray(decoders.to_hwc(converted, layout))
            report[f"{name} -> {library}"] = {
                "ok": form(converted) == form(expected) and np.array_equal(back, pixels),
                "detail": {"converted": form(converted), "expected": form(expected)},
            }
    Path(report_path).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
