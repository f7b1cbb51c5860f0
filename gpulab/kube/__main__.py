"""``python -m gpulab.kube <check> ...``: :mod:`gpulab.kube.cli`."""

import sys

from gpulab.kube.cli import main

sys.exit(main())
