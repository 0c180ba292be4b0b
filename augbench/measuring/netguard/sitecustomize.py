"""Network guard: imported at interpreter start-up (this folder first on PYTHONPATH) in every
benchmark process when augbench.policy.NETWORK_GUARD_ENV_VAR names a log file
(augbench.planning.provision puts it there; pyperf and DataLoader workers inherit both).

An audit hook (PEP 578) sees every name lookup and connection before it happens. Lookups and
connections that would leave the machine are refused (the call raises ``ConnectionRefusedError``,
so no packet is sent) and written to the log; loopback and Unix-socket traffic (DataLoader
workers, multiprocessing) pass. Each process also logs that the guard is installed, so a test can
tell "no connection was attempted" from "the guard never ran". Stdlib only: it runs in every
library's environment before anything else.
"""

from __future__ import annotations

import json
import os
import sys
import time

LOG = os.environ.get("AUGBENCH_NETWORK_GUARD", "")
_LOCAL_NAMES = {"", "localhost", "ip6-localhost", "::1", "::", "0.0.0.0"}


def _is_local(host: object) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    name = str(host).strip("[]").lower()
    return name in _LOCAL_NAMES or name.startswith("127.") or name.endswith(".localhost")


def _record(event: str, **detail: object) -> None:
    line = {"event": event, "pid": os.getpid(), "time": time.time(), **detail}
    with open(LOG, "a") as fh:
        fh.write(json.dumps(line, default=str) + "\n")


def _refuse(what: str, target: object) -> None:
    _record("refused", what=what, target=target, argv=getattr(sys, "orig_argv", sys.argv))
    raise ConnectionRefusedError(f"augbench network guard: {what} {target!r} refused")


def _hook(event: str, args: tuple) -> None:
    if event == "socket.getaddrinfo" and not _is_local(args[0]):
        _refuse("name lookup", args[0])
    elif event in ("socket.connect", "socket.sendto"):
        address = args[1]
        # AF_UNIX addresses are paths (str/bytes); AF_INET/AF_INET6 ones are (host, port, ...).
        if isinstance(address, tuple) and address and not _is_local(address[0]):
            _refuse(event.removeprefix("socket."), address)


if LOG:
    sys.addaudithook(_hook)
    _record("installed", argv=getattr(sys, "orig_argv", None))
