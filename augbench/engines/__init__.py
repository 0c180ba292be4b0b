"""Timing engines, one per regime. They run inside a library's environment.

Importing this package switches library telemetry off (augbench.policy.TELEMETRY_OFF_ENV) before
any engine imports a benchmarked library: the launcher (augbench.provision) already sets it for
workflow jobs; this covers engines started directly (tests, tools/).
"""

from augbench.policy import apply_telemetry_off

apply_telemetry_off()
