"""Loaded by every Python process started with this folder on PYTHONPATH (``site`` imports
``sitecustomize`` at start-up): the modules named in AUGBENCH_TEST_HIDDEN_MODULES (comma-separated)
cannot be imported, and ``importlib.util.find_spec`` finds none of them, as in an env without their
packages. Engines start fresh interpreters (a recipe in its own process, a row in a fresh
interpreter), and each of them inherits the environment: the modules stay hidden there too
(tests/conftest.py: ``run_engine(..., hide=...)``)."""

import os
import sys

for _name in filter(None, os.environ.get("AUGBENCH_TEST_HIDDEN_MODULES", "").split(",")):
    sys.modules[_name] = None  # type: ignore[assignment]
