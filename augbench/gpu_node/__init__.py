"""The GPU regimes on an offline GPU node: a wheel bundle built here, one command there.

An HPC or lab GPU node often has no network, a system Python with torch and torchvision
preinstalled, and room for a few tens of MiB of wheels. The pieces:

- :mod:`augbench.gpu_node.libraries`: which libraries the node runs and what it needs for them,
  read from the library declarations (augbench.workload.adapters: ``gpu_batches``,
  ``node_packages``, ``node_unfit``): a library registered with ``gpu_batches`` joins the kit's plan
  by itself.
- :mod:`augbench.gpu_node.bundle` (``tools/gpu_node/bundle``): on a machine with network, downloads
  the wheels the GPU regimes need beyond what the node has (for the shipped libraries Kornia,
  kornia-rs and tqdm; pip itself), pinned from ``envs/*.txt``, packs this checkout's code and
  the default dataset's source photographs, and writes the plan (:mod:`augbench.gpu_node.plan`)
  and a manifest; refuses a bundle over its size limit.
- ``tools/gpu_node/prove.sh`` (copied into every bundle): on the node, checks the Python version
  and the CUDA device, installs the bundle offline into a temporary folder and starts
  :mod:`augbench.gpu_node.prove`, which runs every step of the plan within its time budget and
  writes OUT (results archive, summary, log).
- :mod:`augbench.gpu_node.sync_check`: the synchronisation check with an injected CUDA sleep
  kernel and its negative control (on a CPU: the stream timer's stand-in).

docs/gpu_regimes.md ("On an offline GPU node") has the commands.
"""
