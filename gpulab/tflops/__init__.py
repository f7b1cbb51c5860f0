"""The TFLOPS benchmark: dense matmul rates on one GPU, against the datasheet's peak.

``python -m gpulab.tflops --json`` (:mod:`~gpulab.tflops.benchmark`, with
:mod:`~gpulab.tflops.measure`, :mod:`~gpulab.tflops.clocks` and :mod:`~gpulab.tflops.peaks`)
runs on the GPU host and, unchanged, in the benchmark Pod: components/benchmark.py ships those
modules (and this file) into the Pod, so they import only the standard library and each other
at module level (torch, cupy and pynvml inside functions). :mod:`~gpulab.tflops.report` boils
a result down to the ``measuredTflops`` output; it is not shipped.

May import: nothing of the project outside this package (the Pod has only these files).
"""
