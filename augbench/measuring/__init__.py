"""What runs inside a library's env, per timed job: the ``engines`` (one per regime, on a shared
skeleton), staged images (``media``), the stopping rule, quietness and telemetry records, the
allocator setting, the GPU and cloud-machine probes, pipeline builders and the network guard.

Imports only the top-level shared modules and workload/; planning/ and analysis/ import it, never
the reverse.
"""
