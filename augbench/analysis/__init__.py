"""The driver after a run, the answering side: reading result files, tidy tables, speedups,
diagnostics, figures, the answer page and the lines printed at the end of a run."""
