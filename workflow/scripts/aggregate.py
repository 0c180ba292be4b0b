"""Rule aggregate: tidy all_results.csv plus per-regime speedups/throughputs and coverage."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from augbench.analysis import dataloader, gpu, speedups, tidy
from augbench.logs import redirect_to_log

with redirect_to_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    frame = tidy.load([Path(p) for p in sm.input.results])
    frame.to_csv(sm.output.all, index=False)
    for regime in sm.params.regimes:
        part = frame[frame["regime"] == regime]
        speedups.compute(part).to_csv(sm.output[f"speedups_{regime}"], index=False)
        speedups.throughput_table(part).to_csv(sm.output[f"throughputs_{regime}"], index=False)
    if "cpu_dataloader" in sm.params.regimes:
        dataloader.worker_scaling(frame).to_csv(
            sm.output.worker_scaling_cpu_dataloader, index=False
        )
        dataloader.starvation(frame, sm.params.throughput_targets).to_csv(
            sm.output.starvation_cpu_dataloader, index=False
        )
    speedups.coverage(frame).to_csv(sm.output.coverage, index=False)
    if hasattr(sm.output, "gpu_vs_cpu_ratio"):  # present when a GPU regime is configured
        gpu.gpu_vs_cpu_ratio(frame).to_csv(sm.output.gpu_vs_cpu_ratio, index=False)
        gpu.throughput_vs_memory(frame).to_csv(sm.output.gpu_memory, index=False)
    print(f"{len(frame)} rows from {len(sm.input.results)} result files")
