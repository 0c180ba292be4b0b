# Figures, report tables, summaries: downstream of a tidy table, never of a benchmark.
#
# {root} is "results" (this workflow's own sweep) or "results/plots/<name>" (results that already
# exist, configured under plot_from). Neither `snakemake plots` (results/plots/<name>) nor
# `snakemake --until figures` (or `snakemake figures`; root "results") schedules a measurement:
# the latter makes every table, figure, summary and the answer from the result files of this
# machine on disk (PLOTS_ONLY, common.smk: no timed job is in its job graph, so neither changed
# settings nor a changed engine re-measure anything), says what the configured sweep still lacks,
# and, with no result on disk, says what to run instead.


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
        plot_products(),
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
