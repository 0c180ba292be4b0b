"""Write docs/transforms.md from the catalog and the adapters (run after changing either).

uv run python tools/maintenance/render_transforms_doc.py [--output PATH]
"""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from augbench.workload.transforms_doc import DOC_PATH, render  # noqa: E402

if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument(
        "--output", type=Path, default=ROOT / DOC_PATH, help="where to write (default: the page)"
    )
    target = p.parse_args().output
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render())
    print(f"wrote {target}")
