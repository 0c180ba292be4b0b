"""The bad-input table: every case a user can hand the workflow wrongly, and what must happen.

The cases live with the code they exercise, each run through the real rule or CLI, each checking
that the output has no traceback and that an earlier result file is untouched:

- tests/test_bad_inputs_dataset.py: archives (too few images, RGBA / grayscale / palette / CMYK /
  16-bit images, undecodable files, empty archives), through staging and a micro job;
- tests/test_bad_inputs_config.py: command-line and file configuration (coercion of nested
  `--config` values, unknown keys with the nearest valid one, unknown presets, regimes,
  transforms, placements, jobs whose predicted memory does not fit the memory given or their
  cloud machine), through `snakemake -n`;
- tests/test_bad_inputs_analysis.py: results to re-plot (one regime only, unreadable files, empty
  folders, other tools' files, several machines), through `snakemake plots`.

This module is the index: it holds the three tables together and checks the table is what it
claims (at least 20 cases, unique names, each with an expected outcome).
"""

from __future__ import annotations

import test_bad_inputs_analysis as analysis
import test_bad_inputs_config as config
import test_bad_inputs_dataset as dataset


def case_name(case: object) -> str:
    return str(getattr(case, "id", None) or getattr(case, "name", ""))


TABLE = {
    "dataset": [case_name(c) for c in dataset.TABLE],
    "config": [case_name(c) for c in config.TABLE],
    "analysis": [case_name(c) for c in analysis.TABLE],
}


def test_the_table_has_at_least_twenty_named_cases() -> None:
    names = [f"{area}/{name}" for area, cases in TABLE.items() for name in cases]
    assert len(names) >= 20, names
    assert all(name.split("/", 1)[1] for name in names)
    assert len(set(names)) == len(names)
    assert all(len(cases) >= 5 for cases in TABLE.values())
