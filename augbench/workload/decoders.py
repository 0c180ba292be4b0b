"""The JPEG decoders, declared once: what the decoders table measures (docs/cpu_dataloader.md).

A :class:`Decoder` names the Python package it imports (import name and the PyPI pin its env
installs), the system library it needs beyond that (PyTurboJPEG's ``libturbojpeg``, with the
Debian package that provides it), the call it makes and the layout of what it returns. Every
declared decoder reads the file's bytes and decodes them to RGB; ``native`` stands for the library's
own decode (its adapter's ``decode``, the decoder the cpu_dataloader rows use).

Read on the driver (the config's enum of names, the plan) without importing any decoder; in a
library's env, :meth:`Decoder.load` imports one and returns its decode function, or raises
:class:`Unavailable` with a one-line reason (its package or its system library is missing): only
that decoder's rows are lost. :func:`convert` turns a decoder's output into a library's native
input (what its augmentations take), so a loader can time decode and conversion together.
"""

from __future__ import annotations

import ctypes.util
import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from augbench.workload.adapters.base import (
    BCHW_FLOAT,
    CHW_TENSOR,
    DECODED_LAYOUTS,
    HWC_NUMPY,
    PIL_IMAGE,
)

# The layouts decoders deliver and libraries take are declared with the adapters (a library's
# is its adapter's ``decoded_layout``).

NATIVE = "native"
# The rows of the decoders table: their regime label (never ranked with a regime's rows) and scope.
REGIME = "decoders"
SCOPE = "decode_only"
# Timed values per decoder: the stopping rule's bounds (augbench.measuring.stopping). Each value is
# a whole number of passes over the job's images, at most MAX_IMAGES of the regime's (a value of 64
# images of 4 MP lasts about 3 s on one core; a decoder's rate needs no more distinct files).
MIN_VALUES = 5
MAX_VALUES = 15
MAX_IMAGES = 64
# The library env the decoders table runs in where it is configured: it has numpy, OpenCV,
# Pillow and torchvision, and its lock adds simplejpeg and PyTurboJPEG (envs/albumentationsx.in).
# Elsewhere the first configured library's env: the decoders it lacks are `skipped` rows.
ENV_LIBRARY = "albumentationsx"


class UnknownDecoder(ValueError):
    """A decoder name that is not declared; the message names the valid ones."""


class Unavailable(RuntimeError):
    """A declared decoder that cannot run in this env; the message is one line saying why."""


class DecodeError(RuntimeError):
    """A file a decoder could not decode; the message is the decoder's own error, in one line."""


@dataclass(frozen=True)
class Decoder:
    """One JPEG decoder (module docstring). ``module`` and ``distribution``/``pin``: the
    package it imports and the PyPI release its env installs (empty for ``native``, whose
    package is the library's own); ``system_library``: the shared library (the name ctypes looks
    up) it loads beyond its package, ``system_package`` the Debian package providing it."""

    name: str
    call: str
    layout: str
    module: str = ""
    distribution: str = ""
    pin: str = ""
    system_library: str = ""
    system_package: str = ""

    def problem(self) -> str | None:
        """Why it cannot run in this process's env, in one line; None where it can (its import
        is not attempted: :meth:`load` reports what importing it raises)."""
        if self.module and importlib.util.find_spec(self.module) is None:
            pinned = f"{self.distribution}=={self.pin}" if self.pin else self.distribution
            return f"{self.name}: Python package {self.module} not installed (PyPI {pinned})"
        if self.system_library and ctypes.util.find_library(self.system_library) is None:
            return (
                f"{self.name}: lib{self.system_library}.so not found; install {self.system_package}"
            )
        return None

    def load(self, library: str = "") -> Callable[[Path], Any]:
        """Its decode function (path -> output in :attr:`layout`), imported and set up here;
        ``native``: ``library``'s adapter decode. Raises :class:`Unavailable` (one line)."""
        problem = self.problem()
        if problem is not None:
            raise Unavailable(problem)
        try:
            if self.name == NATIVE:
                return _native(library)
            return _LOADERS[self.name]()
        except (ImportError, OSError, RuntimeError) as exc:
            # The first sentence: a loader's advice (downloads, other releases) is not a reason.
            raise Unavailable(f"{self.name}: {one_line(exc).split('. ')[0]}") from exc

    def version(self) -> str | None:
        """The installed version of its package (None: native, or not installed)."""
        if not self.distribution:
            return None
        import importlib.metadata

        try:
            return importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return None


DECODERS: tuple[Decoder, ...] = (
    Decoder(NATIVE, "the library's own decode (its adapter's decode: the cpu_dataloader rows')",
            layout=""),
    Decoder("pil", "PIL.Image.open(BytesIO(data)).convert('RGB'), then numpy.asarray",
            HWC_NUMPY, module="PIL", distribution="pillow"),
    Decoder("opencv", "cv2.imdecode(data, IMREAD_COLOR) + cv2.cvtColor(BGR2RGB)", HWC_NUMPY,
            module="cv2", distribution="opencv-python-headless"),
    Decoder("torchvision", "torchvision.io.decode_jpeg(read_file(path), ImageReadMode.RGB)",
            CHW_TENSOR, module="torchvision", distribution="torchvision"),
    Decoder("simplejpeg", "simplejpeg.decode_jpeg(data, colorspace='RGB')", HWC_NUMPY,
            module="simplejpeg", distribution="simplejpeg", pin="1.9.0"),
    Decoder("turbojpeg", "turbojpeg.TurboJPEG().decode(data, pixel_format=TJPF_RGB)", HWC_NUMPY,
            module="turbojpeg", distribution="PyTurboJPEG", pin="1.8.3",
            system_library="turbojpeg", system_package="libturbojpeg0"),
)  # fmt: skip
BY_NAME: dict[str, Decoder] = {d.name: d for d in DECODERS}
NAMES: tuple[str, ...] = tuple(BY_NAME)
# The GPU DataLoader's decoders (gpu_dataloader.decoders, its decode scope): ``native`` decodes in
# the DataLoader workers (torchvision.io.decode_image, augbench.measuring.engines.gpu_dataloader);
# ``nvjpeg`` leaves the workers the files' bytes and decodes each batch on the device in one
# batched torchvision.io.decode_jpeg call (nvJPEG on CUDA).
NVJPEG = "nvjpeg"
DEVICE_DECODERS: tuple[Decoder, ...] = (
    Decoder(NATIVE, "torchvision.io.decode_image(read_file(path), RGB) in DataLoader workers",
            CHW_TENSOR, module="torchvision", distribution="torchvision"),
    Decoder(NVJPEG, "DataLoader workers read the files' bytes into tensors of their own; "
            "torchvision.io.decode_jpeg(the batch's bytes, ImageReadMode.RGB, device) decodes them "
            "on the device in one call (nvJPEG on CUDA)",
            CHW_TENSOR, module="torchvision", distribution="torchvision"),
)  # fmt: skip
DEVICE_BY_NAME: dict[str, Decoder] = {d.name: d for d in DEVICE_DECODERS}
DEVICE_NAMES: tuple[str, ...] = tuple(DEVICE_BY_NAME)
# A decoder besides native is a dimension of a DataLoader result's name: in cpu_dataloader's
# before its loader, ``decode-w2`` -> ``decode-w2-simplejpeg`` (-> ``decode-w2-simplejpeg-thread``);
# in gpu_dataloader's after its scope, ``decode_w2_...`` -> ``decode-nvjpeg_w2_...``. The regex of
# that part, empty for native: tried last, so it is never read as the start of what follows.
SEPARATOR = "-"
PATTERN = (
    "("
    + "".join(SEPARATOR + n + "|" for n in dict.fromkeys((*NAMES, *DEVICE_NAMES)) if n != NATIVE)
    + ")"
)


def _declared(by_name: dict[str, Decoder], name: str, what: str, valid: str) -> Decoder:
    try:
        return by_name[name]
    except KeyError:
        raise UnknownDecoder(f"unknown {what} {name!r}; {valid}: {', '.join(by_name)}") from None


def get(name: str) -> Decoder:
    """The declared decoder ``name``; :class:`UnknownDecoder` names the valid ones."""
    return _declared(BY_NAME, name, "decoder", "valid decoders")


def suffix(name: str) -> str:
    """The part of a cpu_dataloader result's name a decoder adds after its setting:
    ``simplejpeg`` -> ``-simplejpeg`` (``decode-w2-simplejpeg``); ``native`` -> ``''``."""
    return "" if get(name).name == NATIVE else f"{SEPARATOR}{name}"


def from_suffix(text: str) -> str:
    """:func:`suffix` reversed."""
    return get(text.removeprefix(SEPARATOR)).name if text else NATIVE


def device_decoder(name: str) -> Decoder:
    """The GPU DataLoader's decoder ``name``; :class:`UnknownDecoder` names the valid ones."""
    return _declared(DEVICE_BY_NAME, name, "GPU DataLoader decoder", "valid")


def device_suffix(name: str) -> str:
    """The part of a gpu_dataloader result's name a decoder adds after its scope: ``nvjpeg`` ->
    ``-nvjpeg`` (``decode-nvjpeg_w2_per-sample_s000``); ``native`` -> ``''``."""
    return "" if device_decoder(name).name == NATIVE else f"{SEPARATOR}{name}"


def device_from_suffix(text: str) -> str:
    """:func:`device_suffix` reversed."""
    return device_decoder(text.removeprefix(SEPARATOR)).name if text else NATIVE


def any_from_suffix(text: str) -> str:
    """A training result's decoder part read back: a CPU decoder's (the cpu feed's) or a device
    decoder's (the GPU feed's: nvjpeg)."""
    name = text.removeprefix(SEPARATOR)
    return device_decoder(name).name if name in DEVICE_BY_NAME else from_suffix(text)


def non_native(names: list[str] | tuple[str, ...]) -> list[str]:
    """The configured decoders besides ``native`` (the decoders table runs where any is)."""
    return [name for name in names if name != NATIVE]


def one_line(exc: BaseException) -> str:
    """``Type: message`` with the message's whitespace (newlines included) collapsed."""
    message = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def layout_of(decoder: Decoder, library: str) -> str:
    """What ``decoder`` delivers in ``library``'s env (native: the library's own layout)."""
    return decoder.layout or library_layout(library)


def library_layout(library: str) -> str:
    from augbench.workload import adapters

    layout = adapters.get(adapters.base_of(library)).decoded_layout
    if not layout:
        raise ValueError(f"{library} takes no decoded image on the CPU (its own pipeline decodes)")
    return layout


def decode_file(function: Callable[[Path], Any], decoder: Decoder, path: Path) -> Any:
    """``function(path)`` (a :meth:`Decoder.load` result); a file it cannot decode raises
    :class:`DecodeError` with the decoder's own error in one line, or the shape of the empty
    image it returned."""
    try:
        output = function(path)
    except Exception as exc:
        raise DecodeError(f"{decoder.name} could not decode {path.name}: {one_line(exc)}") from exc
    # Some decoders hand back an empty array for data they cannot read (PyTurboJPEG on a file
    # that is not a JPEG) instead of raising.
    if getattr(output, "ndim", None) is not None and 0 in tuple(output.shape):
        raise DecodeError(
            f"{decoder.name} could not decode {path.name}: empty image {tuple(output.shape)}"
        )
    return output


def touch(output: Any, layout: str) -> int:
    """Read the last value of a decoded image (the clock stops after it): the output exists in
    memory, computed, whatever the decoder defers."""
    if layout == PIL_IMAGE:
        width, height = output.size
        return int(output.getpixel((width - 1, height - 1))[0])
    # By index, never through a reshape: that copies an output that is not row-major (decode_jpeg's
    # channels-last 3xHxW tensor), a copy no decoder makes.
    last = output[(-1,) * output.ndim]
    if layout in (CHW_TENSOR, BCHW_FLOAT):
        return int(last.item() * (255 if layout == BCHW_FLOAT else 1))
    return int(last)


def to_hwc(output: Any, layout: str) -> Any:
    """A decoded image of ``layout`` as a numpy HxWx3 uint8 array (a view where one exists)."""
    import numpy as np

    if layout == HWC_NUMPY:
        return output
    if layout == PIL_IMAGE:
        return np.asarray(output)
    if layout == CHW_TENSOR:
        return output.permute(1, 2, 0).numpy()
    if layout == BCHW_FLOAT:
        import torch

        scaled = (output[0] * 255.0).round().clamp(0, 255).to(torch.uint8)
        return scaled.permute(1, 2, 0).numpy()
    raise ValueError(f"unknown layout {layout!r}; known: {', '.join(DECODED_LAYOUTS)}")


def convert(output: Any, layout: str, library: str) -> Any:
    """A decoder's output (of ``layout``) as ``library``'s native input: unchanged where the
    layouts agree, else through HWC uint8 and the adapter's ``from_array`` (exactly what the
    library's own decoder returns: type, dtype, shape and strides)."""
    from augbench.workload import adapters

    if layout == library_layout(library):
        return output
    return adapters.get(library).from_array(to_hwc(output, layout))


class LoadStep:
    """A chosen decoder as the per-sample load step of a loader: a file's path to ``library``'s
    native input, the decode and the conversion both (the cpu_dataloader decode scope times them
    together, as it times a library's own decode). Made in the job, where :class:`Unavailable`
    and the ValueError of a library that takes no decoded image (DALI) lose that setting's rows
    only; picklable, so a worker started by any method sets the decoder up again on first use."""

    def __init__(self, name: str, library: str) -> None:
        from augbench.workload import adapters

        self.decoder = get(name)
        self.library = library
        self.target = library_layout(library)
        self.layout = layout_of(self.decoder, library)
        self.adapter = adapters.get(library)
        self._function: Callable[[Path], Any] | None = self.decoder.load(library)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_function": None}

    def __call__(self, path: Any) -> Any:
        if self._function is None:
            self._function = self.decoder.load(self.library)
        output = decode_file(self._function, self.decoder, Path(path))
        if self.layout == self.target:
            return output
        return self.adapter.from_array(to_hwc(output, self.layout))


# -- the decode functions (imported in the library's env only) --------------------------------
def _native(library: str) -> Callable[[Path], Any]:
    from augbench.workload import adapters

    if not library:
        raise ValueError("the native decoder is a library's: name the library")
    adapter = adapters.get(library)
    adapter.import_library()
    return adapter.decode


def _pil() -> Callable[[Path], Any]:
    import io

    import numpy as np
    from PIL import Image

    def decode(path: Path) -> Any:
        with Image.open(io.BytesIO(Path(path).read_bytes())) as image:
            return np.asarray(image.convert("RGB"))

    return decode


def _opencv() -> Callable[[Path], Any]:
    import cv2
    import numpy as np

    def decode(path: Path) -> Any:
        data = np.frombuffer(Path(path).read_bytes(), dtype=np.uint8)
        bgr = cv2.imdecode(data, cv2.IMREAD_COLOR)
        if bgr is None:  # OpenCV returns None for data it cannot decode
            raise ValueError("cv2.imdecode returned None (not a decodable image)")
        return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)

    return decode


def _torchvision() -> Callable[[Path], Any]:
    from torchvision.io import ImageReadMode, decode_jpeg, read_file

    def decode(path: Path) -> Any:
        return decode_jpeg(read_file(str(path)), mode=ImageReadMode.RGB)

    return decode


def _simplejpeg() -> Callable[[Path], Any]:
    import simplejpeg

    def decode(path: Path) -> Any:
        return simplejpeg.decode_jpeg(Path(path).read_bytes(), colorspace="RGB")

    return decode


def _turbojpeg() -> Callable[[Path], Any]:
    import turbojpeg

    # The library ctypes finds (Decoder.problem checked there is one), loaded once.
    jpeg = turbojpeg.TurboJPEG(ctypes.util.find_library("turbojpeg"))

    def decode(path: Path) -> Any:
        return jpeg.decode(Path(path).read_bytes(), pixel_format=turbojpeg.TJPF_RGB)

    return decode


_LOADERS: dict[str, Callable[[], Callable[[Path], Any]]] = {
    "pil": _pil,
    "opencv": _opencv,
    "torchvision": _torchvision,
    "simplejpeg": _simplejpeg,
    "turbojpeg": _turbojpeg,
}
