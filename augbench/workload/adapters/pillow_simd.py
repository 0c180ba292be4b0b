"""Pillow-SIMD: the drop-in fork of Pillow with SIMD (SSE4/AVX2) resampling, filters and colour
conversions. It installs the same ``PIL`` module as Pillow, so everything Pillow's adapter does
(decoder, mappings, recipe tail) is the same code here, and every Pillow row has its SIMD twin.

Pillow-SIMD ships no wheels: its env compiles it from source with the flags its documentation
recommends (``CC="cc -mavx2"``), which needs a C compiler, the JPEG and zlib headers and Python's
headers. Where one is missing the env build stops in one line naming the Debian packages, and only
this library's jobs are lost (augbench.planning.provision). Its env holds no Pillow: the lock drops
the Pillow requirement of torchvision (one module, two distributions; ``replaces_distributions``).

Every row records which build was imported (:meth:`PillowSimdAdapter.provenance`): the
distribution that owns the imported ``PIL`` package, its version, and how many instructions of
the compiled core use the 256-bit AVX registers (0 for a build without AVX2), beside the CPU
features of the machine that ran it.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sysconfig
import tempfile
from collections.abc import Mapping as EnvMapping
from pathlib import Path
from typing import Any

from augbench.workload.adapters.base import LOCK_SHARED
from augbench.workload.adapters.pillow import PillowAdapter

# The instruction set the build targets: AVX2, as Pillow-SIMD's installation notes recommend for
# x86-64 machines of the last decade (it falls back to SSE4 code where AVX2 is not compiled in).
SIMD_FLAGS = "-mavx2"
# The headers the build includes and the Debian package that installs each.
BUILD_HEADERS = {"jpeglib.h": "libjpeg-dev", "zlib.h": "zlib1g-dev"}
COMPILER_PACKAGE = "build-essential"
# CPU features worth recording with a row: what the SIMD code paths can use.
SIMD_CPU_FEATURES = ("sse4_1", "sse4_2", "avx", "avx2", "avx512f", "avx512bw")


class PillowSimdAdapter(PillowAdapter):
    name = "pillow_simd"
    title = "Pillow-SIMD"
    color = "#882255"
    distribution = "pillow-simd"
    sibling = "pillow"
    lock_mode = LOCK_SHARED  # Pillow is the same module: resolved apart from Pillow's envs
    replaces_distributions = ("pillow",)
    build_packages = (COMPILER_PACKAGE, *BUILD_HEADERS.values())

    def _unsupported_reasons(self) -> dict[str, str]:
        # Pillow's operations exactly: what Pillow lacks, Pillow-SIMD lacks.
        return {
            name: f"pillow_simd (Pillow's operations): {reason}"
            for name, reason in super()._unsupported_reasons().items()
        }

    @classmethod
    def compiler(cls, environ: EnvMapping[str, str]) -> str:
        """The C compiler the build uses: the machine's ``CC`` (default ``cc``)."""
        return (environ.get("CC") or "cc").split()[0]

    @classmethod
    def build_variables(cls, environ: EnvMapping[str, str]) -> dict[str, str]:
        return {"CC": f"{environ.get('CC') or 'cc'} {SIMD_FLAGS}"}

    @classmethod
    def build_problem(cls) -> str | None:
        compiler = cls.compiler(os.environ)
        if shutil.which(compiler) is None:
            return (
                f"Pillow-SIMD is compiled from source and no C compiler was found ({compiler}); "
                f"install the Debian package {COMPILER_PACKAGE} (or set CC)"
            )
        missing = [
            package
            for header, package in BUILD_HEADERS.items()
            if not _header_found(compiler, header)
        ]
        python_h = Path(sysconfig.get_paths()["include"]) / "Python.h"
        if not python_h.exists():
            missing.append("python3-dev")
        if missing:
            return (
                "Pillow-SIMD is compiled from source and its headers are missing; install the "
                f"Debian packages {' '.join(missing)}"
            )
        return None

    def provenance(self) -> dict[str, Any]:
        from PIL import Image

        return {
            **super().provenance(),
            "imported_from": owning_distribution(Path(Image.__file__)),
            "PIL_version": getattr(__import__("PIL"), "__version__", "unknown"),
            "build_flags": SIMD_FLAGS,
            "avx2_instructions": ymm_instructions(Path(Image.core.__file__)),
            "cpu_features": cpu_features(),
        }


def _header_found(compiler: str, header: str) -> bool:
    with tempfile.TemporaryDirectory(prefix="augbench-header-") as tmp:
        source = Path(tmp) / "check.c"
        source.write_text(f"#include <{header}>\n")
        done = subprocess.run(
            [compiler, "-E", str(source), "-o", os.devnull], capture_output=True, text=True
        )
    return done.returncode == 0


def owning_distribution(module_file: Path) -> str:
    """The installed distribution whose files include ``module_file`` (``pillow-simd`` where the
    SIMD build is the one imported)."""
    site = module_file.resolve().parents[1]
    for dist in importlib.metadata.distributions(path=[str(site)]):
        for record in dist.files or ():
            if (site / record).resolve() == module_file.resolve():
                return f"{dist.metadata['Name']} {dist.version}"
    return "unknown"


def ymm_instructions(library: Path) -> int | None:
    """Instructions of a compiled library that use the 256-bit AVX registers (``%ymm``), counted
    from its disassembly: above 0 only where it was built for AVX/AVX2. None: objdump is missing."""
    objdump = shutil.which("objdump")
    if objdump is None:
        return None
    done = subprocess.run([objdump, "-d", str(library)], capture_output=True, text=True)
    return sum(1 for line in done.stdout.splitlines() if "%ymm" in line)


def cpu_features() -> list[str]:
    """The SIMD features of this machine's CPU (/proc/cpuinfo) that the build can use."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines()
                  if line.startswith("flags")), [])  # fmt: skip
    return [f for f in SIMD_CPU_FEATURES if f in flags]
