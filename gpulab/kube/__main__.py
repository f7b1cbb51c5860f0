"""``python -m gpulab.kube <check> ...``: :mod:`gpulab.kube.cli`."""

import sys

from gpulab.core.shutdown import skip_final_collection
from gpulab.kube.cli import main

skip_final_collection()
sys.exit(main())
