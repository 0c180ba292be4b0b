"""Driver-side analysis: reading result files, tidy tables, speedups, diagnostics, figures."""
