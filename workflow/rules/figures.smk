# Figures, report tables, summaries: downstream of a tidy table, never of a benchmark.
#
# {root} is "results" (this workflow's own sweep) or "results/plots/<name>" (results that already
# exist, configured under plot_from). `snakemake plots` (results/plots/<name>) therefore never
# schedules a measurement. `snakemake --until figures` (root "results") needs this workflow's own
# results/tables/all_results.csv, which needs every configured benchmark job: it schedules each
# one whose result is missing or out of date (in a fresh working directory, all of them), and on
# complete, up-to-date results only the aggregation and plotting jobs that are out of date.


wildcard_constraints:
    root=r"results(/plots/[A-Za-z0-9][A-Za-z0-9_.-]*)?",


# One job draws every family (processes forked after the imports, which cost more than the
# drawing). The report lists each PNG with its own caption ({figure} comes from the pattern).
rule draw_figures:
    input:
        table=tidy_table,
    output:
        figures=report(
            directory("{root}/figures"),
            patterns=["{figure}.png"],
            caption="../report/figure.rst",
            category="Figures",
            labels={"figure": "{figure}", "results": "{root}"},
        ),
    log:
        "logs/{root}/draw_figures.log",
    benchmark:
        "benchmarks/analysis/{root}/draw_figures.tsv"
    conda:
        "../../envs/driver.yaml"
    # Figure families are drawn in parallel processes (lowered to --cores where it is larger).
    threads: 2
    params:
        analysis_code=ANALYSIS_CODE,
    script:
        "../scripts/draw_figures.py"


rule speedup_report:
    input:
        table=tidy_table,
    output:
        html=report(
            "{root}/analysis/speedups.html",
            caption="../report/speedups.rst",
            category="Tables",
            labels={"table": "speedups", "results": "{root}"},
        ),
    log:
        "logs/{root}/analysis/speedups.log",
    benchmark:
        "benchmarks/analysis/{root}/speedup_report.tsv"
    conda:
        "../../envs/driver.yaml"
    params:
        analysis_code=ANALYSIS_CODE,
    script:
        "../scripts/speedup_report.py"


rule summary:
    input:
        unpack(summary_extra_inputs),
        table=tidy_table,
    output:
        summary=report(
            "{root}/analysis/summary.md",
            caption="../report/summary.rst",
            category="Tables",
            labels={"table": "summary", "results": "{root}"},
        ),
        diagnostics="{root}/analysis/diagnostics.csv",
        slow="{root}/analysis/slow_rows.csv",
    log:
        "logs/{root}/analysis/summary.log",
    benchmark:
        "benchmarks/analysis/{root}/summary.tsv"
    conda:
        "../../envs/driver.yaml"
    params:
        analysis_code=ANALYSIS_CODE,
    script:
        "../scripts/summarize.py"


rule figures:
    input:
        figure_targets(),
    localrule: True


# -- plotting results that already exist ------------------------------------------------------


rule collect_results:
    output:
        table="results/plots/{name}/tables/all_results.csv",
        coverage="results/plots/{name}/tables/coverage.csv",
        speedups="results/plots/{name}/tables/speedups.csv",
        training="results/plots/{name}/tables/training.csv",
    log:
        "logs/plots/{name}/collect.log",
    conda:
        "../../envs/driver.yaml"
    params:
        analysis_code=ANALYSIS_CODE,
        sources=lambda wildcards: plot_from_sources(wildcards.name),
        # Changes when a result file is added, replaced or removed (rerun trigger "params").
        fingerprint=plot_from_fingerprint,
    script:
        "../scripts/collect_results.py"


rule plots:
    input:
        plot_targets(),
    localrule: True
