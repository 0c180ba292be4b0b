"""Which machine a job actually ran on, when it ran on Google Compute Engine.

A cloud sweep labels its result paths with the configured ``machine`` (a wildcard known before any
VM exists); the machine actually used is read here, on the VM, and recorded next to it in every
result file (``metadata.machine_actual`` and ``metadata.system_info.cloud``).

The GCE metadata server is asked only when the DMI product name says this is a Compute Engine VM
(a local file read), or when ``GCE_METADATA_HOST`` names a server explicitly (as google-auth
honours it). Elsewhere no request leaves the machine.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

DMI_PRODUCT_NAME = Path("/sys/class/dmi/id/product_name")
METADATA_IP = "169.254.169.254"
METADATA_TIMEOUT_S = 1.0


def on_gce(dmi_product_name: Path = DMI_PRODUCT_NAME) -> bool:
    try:
        return "Google" in dmi_product_name.read_text()
    except OSError:
        return False


def metadata_host() -> str | None:
    """The metadata server to ask, or None when this is not a GCE VM."""
    explicit = os.environ.get("GCE_METADATA_HOST")
    if explicit:
        return explicit
    return METADATA_IP if on_gce() else None


def _get(host: str, path: str, timeout: float) -> str | None:
    url = f"http://{host}/computeMetadata/v1/instance/{path}"
    request = urllib.request.Request(url, headers={"Metadata-Flavor": "Google"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read().decode().strip()
    except (urllib.error.URLError, OSError, ValueError):
        return None


def gce_instance(timeout: float = METADATA_TIMEOUT_S) -> dict[str, Any] | None:
    """Machine type, zone, provisioning model and GPUs of this VM; None off GCE or unreachable."""
    host = metadata_host()
    if host is None:
        return None
    machine_type = _get(host, "machine-type", timeout)
    if machine_type is None:
        return None
    info: dict[str, Any] = {
        "provider": "gce",
        "metadata_host": host,
        # Full resource names ("projects/123/machineTypes/g2-standard-8"): keep the last part.
        "machine_type": machine_type.rsplit("/", 1)[-1],
        "zone": (_get(host, "zone", timeout) or "").rsplit("/", 1)[-1] or None,
        "preemptible": (_get(host, "scheduling/preemptible", timeout) or "").upper() == "TRUE",
        "instance_id": _get(host, "id", timeout),
    }
    accelerators = _get(host, "accelerators/?recursive=true", timeout)
    if accelerators:
        try:
            info["accelerators"] = json.loads(accelerators)
        except json.JSONDecodeError:
            info["accelerators"] = accelerators
    return info


def machine_actual(configured: str, instance: dict[str, Any] | None) -> str:
    """``gce-<machine type>`` on a Compute Engine VM, else the configured label."""
    if instance and instance.get("machine_type"):
        return f"gce-{instance['machine_type']}"
    return configured
