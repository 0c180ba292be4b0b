"""Timing engines, one per regime. They run inside a library's environment.

Importing this package switches library telemetry off (augbench.measuring.telemetry) before
any engine imports a benchmarked library: the launcher (augbench.planning.provision) already sets it
for workflow jobs; this covers engines started directly (tests, tools/).

It also takes an engine process's quietness start (augbench.measuring.quietness): ``python -m
augbench.measuring.engines.<engine>`` imports this package before the engine's own module, so the
reading precedes the thread settings, the library import and every measurement, in every engine,
even in those that build their skeleton.Job only when their rows are done. The result file's end
reading is taken in skeleton.write_result.
"""

from augbench.measuring import quietness, telemetry

telemetry.apply_off()
quietness.engine_process_started()
