"""Image-augmentation throughput benchmark, grouped by what runs where.

- ``workload/``: what is benchmarked (libraries' adapters, the transform catalog, recipes,
  pipelines); read by the driver and by each library's env.
- ``measuring/``: the engines and what they use, run inside a library's env for each timed job.
- ``planning/``: the driver before a run: config, regimes, sweep, dataset, job launch, and the
  cost, memory and starvation models.
- ``analysis/``: the driver after a run: tables, figures, the answer page.
- ``gpu_node/``: the offline GPU node kit, built from all of the above.

Top level: what every part reads (``paths``, ``result_format`` and ``results``, ``policy``,
``intervals``, ``paired``, ``decision``, ``logs``, ``cuda_env``), and ``workflow_inputs``, what
the Snakemake rules ask of a run. Imports run downward in that order: the shared modules, then
workload, measuring, planning, analysis, then workflow_inputs and gpu_node
(tests/test_import_graph.py).
"""
