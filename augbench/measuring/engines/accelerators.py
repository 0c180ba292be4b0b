"""The training regime's accelerators: what one training step on a batch is.

- ``model``: forward + backward + SGD step of a torchvision model with random weights
  (:func:`model_accelerator`: ResNet-50 with AMP and channels_last on CUDA, ResNet-18 on a reduced
  input on the CPU);
- ``sleep:<ms>``: a stand-in that sleeps ``ms`` per batch, releasing the GIL as a GPU step does;
- ``cpu:<ms>``: a stand-in of ``ms`` of the main thread's CPU time per batch, competing with the
  loader's workers for the cores as a CPU model's step does.

torch and torchvision are imported only when a model is built.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SLEEP = re.compile(r"^sleep:(?P<ms>\d+(\.\d+)?)$")
CPU_STEP = re.compile(r"^cpu:(?P<ms>\d+(\.\d+)?)$")
MODELS: dict[str, str] = {"cuda": "resnet50", "cpu": "resnet18"}


@dataclass
class Accelerator:
    """One training step on a batch (``step``), what the rows call it, and its settings."""

    label: str
    step: Callable[[Any], None]
    settings: dict[str, Any]


def stand_in(spec: str) -> re.Match[str] | None:
    """The ``sleep:<ms>`` or ``cpu:<ms>`` stand-in ``spec`` names (None for ``model``)."""
    return SLEEP.match(spec) or CPU_STEP.match(spec)


def stand_in_accelerator(spec: str) -> Accelerator:
    match = stand_in(spec)
    assert match is not None, spec
    ms = float(match["ms"])
    return sleep_accelerator(ms) if SLEEP.match(spec) else cpu_accelerator(ms)


def cpu_accelerator(ms: float) -> Accelerator:
    """``ms`` of this thread's CPU time per batch: fixed work, as a CPU model's step is, so a
    core shared with the workers stretches its wall time as it stretches that step's."""

    def step(batch: Any) -> None:
        clock = time.thread_time
        end = clock() + ms / 1000.0
        while clock() < end:
            pass

    label = f"cpu-{ms:g}ms"
    return Accelerator(label, step, {"accelerator": f"cpu:{ms:g}", "model": label, "device": "cpu"})


def sleep_accelerator(ms: float) -> Accelerator:
    def step(batch: Any) -> None:
        time.sleep(ms / 1000.0)

    label = f"sleep-{ms:g}ms"
    return Accelerator(label, step, {"accelerator": f"sleep:{ms:g}", "model": label})


def model_accelerator(device: str, cpu_input_size: int, model: str = "auto") -> Accelerator:
    """A real step: the model's forward and backward on the batch and an SGD step; on CUDA
    with AMP (autocast + GradScaler) and channels_last, synchronized before the step returns."""
    import torch
    import torchvision

    name = MODELS[device] if model == "auto" else model
    net = getattr(torchvision.models, name)(weights=None).to(device)
    net.train()
    cuda = device == "cuda"
    if cuda:
        net = net.to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler("cuda") if cuda else None
    size = None if cuda else cpu_input_size

    def step(batch: Any) -> None:
        x = batch.to(device, non_blocking=True)
        if cuda:
            x = x.contiguous(memory_format=torch.channels_last)
        if size is not None and x.shape[-1] != size:
            x = torch.nn.functional.interpolate(
                x, size=(size, size), mode="bilinear", antialias=False
            )
        labels = torch.zeros(x.shape[0], dtype=torch.long, device=device)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device, dtype=torch.float16, enabled=cuda):
            loss = loss_fn(net(x), labels)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            torch.cuda.synchronize()
        else:
            loss.backward()
            optimizer.step()

    side = "224px" if cuda else f"{cpu_input_size}px"
    amp = "amp-" if cuda else ""
    return Accelerator(
        f"{name}-{side}-{amp}{device}",
        step,
        {
            "accelerator": "model",
            "model": name,
            "model_input": side,
            "device": device,
            "amp": cuda,
            "channels_last": cuda,
            "optimizer": "SGD(lr=0.1, momentum=0.9)",
        },
    )


def choose_device(requested: str) -> str:
    if requested != "auto":
        return requested
    try:
        import torch
    except ImportError:  # the DALI env: no torch, DALI's own probe says whether a GPU is there
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def out_of_memory_errors() -> tuple[type[BaseException], ...]:
    """The exception a model too large for its GPU raises (none where torch is absent)."""
    try:
        import torch
    except ImportError:
        return ()
    return (torch.cuda.OutOfMemoryError,)
