"""Run Snakemake with the googlebatch executor plugin, its Batch client a recorder, and write the
Batch job request the plugin builds for every job the run would submit.

    python tests/helpers/batch_standin.py OUT.json -- <snakemake arguments>

There is no Batch service here, so the client is the one stand-in (tests/test_batch_spec.py):
everything else is the locked plugin's own code on a real Snakemake run (non-dry, so the source
archive a job deploys is uploaded to the default storage as in a real sweep). Once the executor
exists, each job of the DAG that needs to run goes through ``GoogleBatchExecutor.run_job`` (job
spec, allocation policy, container, the exact command scripts); the requests are written to
OUT.json as ``[{"rule", "wildcards", "request"}]`` (a group job of the profile's groups as
``{"rule": "group", "group", "rules", "jobs", "request"}``) and the process ends without waiting for
jobs.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from google.cloud import batch_v1
from snakemake_executor_plugin_googlebatch import executor as gb


class RecordingBatch:
    """What the plugin calls on ``batch_v1.BatchServiceClient``: create_job only, recorded."""

    def __init__(self) -> None:
        self.requests: list[batch_v1.CreateJobRequest] = []

    def create_job(self, request: batch_v1.CreateJobRequest) -> batch_v1.Job:
        self.requests.append(request)
        return batch_v1.Job(name=f"{request.parent}/jobs/{request.job_id}", uid=request.job_id)


def record_all(out: Path):
    def post_init(self: gb.GoogleBatchExecutor) -> None:
        self.workdir = os.path.realpath(os.path.dirname(self.workflow.persistence.path))
        self.batch = RecordingBatch()
        # The scheduler that would track submissions does not exist yet (it is creating us).
        self.report_job_submission = lambda job_info: None
        recorded: list[dict[str, Any]] = []
        jobs = sorted(self.workflow.dag.needrun_jobs(), key=lambda j: (j.rule.name, str(j)))
        for job in jobs:
            # run_job prints the scripts it builds; keep stdout for Snakemake's own messages.
            with contextlib.redirect_stdout(sys.stderr):
                self.run_job(job)
            request = self.batch.requests[-1]
            recorded.append(
                {
                    "rule": job.rule.name,
                    "wildcards": dict(job.wildcards_dict),
                    "request": json.loads(
                        batch_v1.CreateJobRequest.to_json(request, use_integers_for_enums=False)
                    ),
                }
            )
        # The group jobs the profile's groups make (one VM each): the request of each, to check
        # that a group's VM is sized for its largest member, not for the sum of them.
        groups = {self.workflow.dag.get_job_group(job) for job in jobs} - {None}
        for group in sorted(groups, key=str):
            with contextlib.redirect_stdout(sys.stderr):
                self.run_job(group)
            request = self.batch.requests[-1]
            recorded.append(
                {
                    "rule": "group",
                    "group": group.groupid,
                    "rules": sorted({job.rule.name for job in group.jobs}),
                    "jobs": len(group.jobs),
                    "request": json.loads(
                        batch_v1.CreateJobRequest.to_json(request, use_integers_for_enums=False)
                    ),
                }
            )
        out.write_text(json.dumps(recorded, indent=1))
        print(f"batch stand-in: recorded {len(recorded)} job requests in {out}", flush=True)
        sys.stderr.flush()
        os._exit(0)  # submit nothing; there is no Batch to poll

    return post_init


def main() -> None:
    out = Path(sys.argv[1])
    if sys.argv[2] != "--":
        raise SystemExit(__doc__)
    gb.GoogleBatchExecutor.__post_init__ = record_all(out)
    from snakemake.cli import main as snakemake_main

    snakemake_main(sys.argv[3:])


if __name__ == "__main__":
    main()
