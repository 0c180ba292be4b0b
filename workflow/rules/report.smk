# The HTML report (`snakemake --report report.html`) opens on the answer: its first screen, the
# workflow description (workflow/report/workflow.rst), includes the answer page rendered as HTML
# here, since the report shows a markdown file as raw text.


rule answer_html:
    input:
        page=RECOMMENDATION["page"],
    output:
        html=report(
            RECOMMENDATION["html"],
            caption="../report/answer_html.rst",
            category="Answer",
            labels={"table": "answer", "results": "results"},
        ),
    log:
        "logs/analysis/answer_html.log",
    localrule: True
    conda:
        "../../envs/driver.yaml"
    params:
        analysis_code=ANALYSIS_CODE,
    script:
        "../scripts/answer_html.py"
