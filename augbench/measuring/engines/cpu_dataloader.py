"""cpu_dataloader regime job: ``python -m augbench.measuring.engines.cpu_dataloader``.

What it measures and how: augbench.measuring.engines.dataloader (the package's docstring is the
``--help`` text), split by concern into settings, plumbing, timing, baselines, rows and job. The
names other code uses (workflow/scripts/decode_floor.py and loader_transport.py, the tests) are
re-exported here, so they keep working against the one engine.
"""

from __future__ import annotations

# The package exports the thread policy before numpy, torch or cv2 is imported.
import augbench.measuring.engines.dataloader  # noqa: F401  # isort: skip

import sys

from augbench.measuring.engines.dataloader.baselines import (
    BASELINE_FIELDS,
    TRANSPORT_SIZE,
    CroppedLoad,
    DecodeCompanions,
    decode_floor,
    fixed_crop,
    measure_baselines,
    measure_transport,
)
from augbench.measuring.engines.dataloader.decode_floor import DecodeFloor
from augbench.measuring.engines.dataloader.job import main, measure_setting
from augbench.measuring.engines.dataloader.plumbing import (
    EpochSampler,
    LoaderSettings,
    Recipe,
    RecipeDataset,
    build_recipe,
    identity,
    load_items,
    usable_cores,
)
from augbench.measuring.engines.dataloader.rows import (
    REGIME_VS_BARE_ESTIMATOR,
    bare_loop_fields,
    composition_fields,
    recipe_row_fields,
    run_recipe,
)
from augbench.measuring.engines.dataloader.settings import (
    REGIME,
    SCOPES,
    DataLoaderSettings,
    parse_args,
    parse_settings,
)
from augbench.measuring.engines.dataloader.timing import (
    TIMING_NOTE,
    EpochSettings,
    RecipeError,
    measure_loader,
)
from augbench.measuring.engines.preflight import per_sample as preflight

__all__ = [
    "BASELINE_FIELDS",
    "REGIME",
    "REGIME_VS_BARE_ESTIMATOR",
    "SCOPES",
    "TIMING_NOTE",
    "TRANSPORT_SIZE",
    "CroppedLoad",
    "DataLoaderSettings",
    "DecodeCompanions",
    "DecodeFloor",
    "EpochSampler",
    "EpochSettings",
    "LoaderSettings",
    "Recipe",
    "RecipeDataset",
    "RecipeError",
    "bare_loop_fields",
    "build_recipe",
    "composition_fields",
    "decode_floor",
    "fixed_crop",
    "identity",
    "load_items",
    "main",
    "measure_baselines",
    "measure_loader",
    "measure_setting",
    "measure_transport",
    "parse_args",
    "parse_settings",
    "preflight",
    "recipe_row_fields",
    "run_recipe",
    "usable_cores",
]

if __name__ == "__main__":
    sys.exit(main())
