"""Image-augmentation throughput benchmark: catalog, adapters, timing engines, results, analysis.

Modules are split by what runs where: ``matrix``, ``policy``, ``catalog``, ``results`` and
``analysis`` are imported by the Snakemake driver; ``adapters`` and ``engines`` run inside the
per-library environments and import the benchmarked library lazily.
"""
