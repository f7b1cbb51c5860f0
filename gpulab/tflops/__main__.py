"""``python -m gpulab.tflops [--size N] [--dtypes ...] [--json]``: :func:`gpulab.tflops.benchmark.main`."""

import sys

from gpulab.tflops.benchmark import main

sys.exit(main())
