"""Layout checks inside one library environment (run by tests/test_layout_envs.py with
``.venvs/<library>/bin/python``): the cached input versus a fresh decode, and what
``Adapter.materialize`` copies. Writes a JSON report: {check: {"ok": bool, "detail": ...}}.

argv: library, report path, JPEG paths...
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from augbench.measuring import media
from augbench.workload import adapters, catalog, layout


def _same_memory(a: Any, b: Any) -> bool:
    """The same buffer (data_ptr / first element address), not merely overlapping."""
    if isinstance(a, np.ndarray):
        return a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
    if hasattr(a, "data_ptr"):
        return a.data_ptr() == b.data_ptr()
    return a.im is b.im


def main() -> int:
    library, report_path, *paths = sys.argv[1:]
    adapter = adapters.get(library)
    adapter.import_library()
    files = [Path(p) for p in paths]
    report: dict[str, dict[str, Any]] = {}

    def check(name: str, ok: bool, **detail: Any) -> None:
        report[name] = {"ok": bool(ok), "detail": detail}

    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "media.pkl"
        info = media.build_cache(adapter, files, cache)
        stored = media.load_cache(adapter, cache)
        contiguous = media.load_cache(adapter, cache, "contiguous")
    check("build_cache records the round trip", info["native_layout_reproduced"], info=info)
    for i, path in enumerate(files):
        fresh = adapter.decode(path)
        want = {k: layout.describe(fresh).get(k) for k in media.LAYOUT_KEYS}
        got = {k: layout.describe(stored[i]).get(k) for k in media.LAYOUT_KEYS}
        same_pixels = np.array_equal(adapter.to_array(fresh), adapter.to_array(stored[i]))
        check(f"stored input {path.name} has the decoder's layout", want == got and same_pixels,
              decoder=want, stored=got, same_pixels=same_pixels)  # fmt: skip
        if hasattr(fresh, "contiguous"):
            c = contiguous[i]
            check(f"contiguous variant of {path.name} is row-major, same pixels",
                  c.is_contiguous() and bool((c == stored[i]).all()))  # fmt: skip

    image = stored[0]
    cases: list[tuple[str, Any, bool]] = []  # (name, output, expect a copy)
    if hasattr(image, "data_ptr"):  # torch
        import torch

        cases += [
            ("owned channels-last", image.clone(memory_format=torch.preserve_format), False),
            ("owned contiguous", image.contiguous(), False),
            ("crop view", image[..., 10:50, 20:70], True),
            ("the input itself", image, True),
        ]
    elif isinstance(image, np.ndarray):
        cases += [
            ("owned contiguous", image.copy(), False),
            ("negative-stride view", image[:, ::-1], True),
            ("crop view", image[10:50, 20:70], True),
            ("the input itself", image, True),
        ]
    else:  # PIL
        cases += [("new image", image.copy(), False), ("the input itself", image, True)]
    for name in ("HorizontalFlip", "RandomCrop224", "GaussianBlur"):
        if adapter.supports(name):
            out = adapter.build(name, catalog.get(name).params)(image)
            cases.append((f"{name} output", out, layout.needs_copy(out, image)))
    for name, out, expect_copy in cases:
        done = adapter.materialize(out, image)
        copied = not _same_memory(done, out)
        d_out, d_done = layout.describe(out), layout.describe(done)
        order_kept = d_out["memory_format"] in ("strided", d_done["memory_format"])
        ok = copied == expect_copy and not layout.needs_copy(done, image)
        ok = ok and (d_out["memory_format"] != "channels_last" or order_kept)
        check(f"materialize: {name}", ok, copied=copied, expect_copy=expect_copy, output=d_out,
              materialized=d_done)  # fmt: skip
    Path(report_path).write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
