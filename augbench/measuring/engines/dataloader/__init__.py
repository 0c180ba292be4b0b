"""cpu_dataloader regime job: one library x scope x worker count x shard of recipes -> one file;
or, with ``--settings``, several (scope, workers) settings of one library and shard in turn, one
file each, in one process (config ``cpu_dataloader.job_per: library``): the library is imported
once instead of once per setting. Each setting is measured exactly as its own job would be (its
own images, loaders, baselines and stopping rule); only the interpreter and imports are shared.

Each recipe (``augbench.workload.recipes``) runs through a real ``torch.utils.data.DataLoader`` with
the configured number of worker processes, batch size, prefetch factor and persistence; PyTorch's
default collation stacks the float32 3x224x224 samples into batches.

Scopes:

- ``memory``: the selected images are decoded once with the library's own decoder, before any
  clock starts, and held in the dataset (workers inherit them by fork); a sample is the recipe.
- ``decode``: the dataset holds file paths; a sample is read + decode (the library's native
  decoder, recorded per row) + the recipe, inside the workers.

Timing (stated in every file's ``benchmark_params``):

1. Preflight: the first sample is built untimed, then ``preflight_items`` samples are timed in the
   main process under the shared ``SlowTransformPolicy``; a slow recipe becomes ``early_stopped``.
2. Warm-up epoch (untimed): ``max(1, workers)`` batches. Its first-batch latency, measured from
   ``iter(loader)`` and including worker start-up, is ``first_batch_s``.
3. Timed epochs of ``batches_per_run`` batches each, in rounds, until the stopping rule
   (``augbench.measuring.stopping``) ends them: at least ``--min-runs``
   (policy.DATALOADER_MIN_RUNS), at most ``num_runs``. The window runs from ``iter(loader)`` to the
   arrival of the last batch in the main process, so every batch's work is inside it and nothing is
   prefetched before the clock starts. With ``persistent_workers`` the workers started by the
   warm-up epoch are reused, so start-up is outside the window; without it each epoch starts its
   workers and the row says ``startup_in_timed_window: true``.

Baselines, measured in the same job (at most ``--baseline-runs`` rounds or epochs; 0: none):

- bare loop, per recipe: a user-written ``Dataset`` + stock ``DataLoader``
  (``augbench.measuring.engines.bare_loop``) with the same recipe objects, batch size, workers,
  prefetch, persistence and thread policy, warmed up the same way, timed in the same rounds.
  ``regime_vs_bare`` = median over rounds of regime epoch / bare epoch (``augbench.paired``).
- decode jobs, per recipe, in the same rounds (order D B M F, then F M B D, ...): the memory-scope
  companion (the same recipe on the job's images decoded once before any clock, through a loader
  with the regime's settings and workers) and the decode floor (the epoch's files decoded by the
  same decoder in ``max(1, min(workers, cores))`` processes and nothing else). Per round the
  expectation is 1/(1/floor + 1/memory); ``decode_composition_ratio`` is the median of decode
  epoch / expectation, with ``decode_composition_source: same_job``.
- transport, once per job: a fixed 224x224 window of each image (copied, as a crop returns it;
  in ``memory`` scope cut before any clock) through the recipe's tail only, in the regime's
  loader: what moving a normalized float32 sample through this DataLoader costs, no augmentation.

The engine, by concern: ``settings`` (its command line), ``plumbing`` (datasets, samplers,
worker start-up, loaders), ``timing`` (warm-up, timed epochs, the stopping rule), ``baselines``
(transport, decode floor, decode companions), ``rows`` (one recipe's row and its bare-loop and
composition fields), ``job`` (one setting's rows and result file, the settings in turn). The
entry point is ``python -m augbench.measuring.engines.cpu_dataloader``.
"""

from augbench.policy import DATALOADER_THREADS

# Before numpy, torch or cv2 is imported, by whichever module of the engine is imported first.
DATALOADER_THREADS.apply_environment()
