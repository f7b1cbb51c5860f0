"""gpu-lab's pure logic and the commands the components run, one package per job.

Floors, top to bottom (each may import the floors below it, never one above; ``|`` are
neighbours that do not import each other; ``make lint`` checks it with import-linter, the
contracts in pyproject.toml):

* (above this package: the edge (``program``, ``policy``, ``ops``: the operations' commands
  of ``scripts/lab``), the variants and the shared components);
* :mod:`gpulab.verdict`: the checklist's items and verdict, and the baseline card;
* :mod:`gpulab.kube`: the cluster-side checks (gate, smoke, compute, DCGM, CRDs);
* :mod:`gpulab.diagnose` | :mod:`gpulab.host`: diagnosis of cluster state | host facts and checks;
* :mod:`gpulab.config`: the stack config parsed, and what it implies (MIG plan, time-slicing);
* :mod:`gpulab.core` | :mod:`gpulab.tflops`: one-of-each modules | the TFLOPS benchmark.

No module of this package imports ``components``, ``variants``, ``ops`` or ``program``.
"""
