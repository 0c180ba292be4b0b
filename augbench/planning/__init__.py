"""What the driver decides before any job runs: the resolved ``config``, the ``regimes`` and their
job kinds, the ``sweep`` of every timed job, the dataset and its derived resolutions, each job's
launcher (``provision``), and the models that price and place a run: ``cost``, ``memory``, the
starvation model, the ``plan`` with its ETA, executor ``profile`` and SLURM.

Imports the shared modules, workload/ and measuring/ (the engines' own functions count the cost);
analysis/ reads it, never the reverse.
"""
