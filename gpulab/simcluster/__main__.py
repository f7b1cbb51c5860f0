"""``python -m gpulab.simcluster up|down|status`` (see :mod:`gpulab.simcluster.cli`)."""

from __future__ import annotations

import sys

from gpulab.simcluster.cli import main

if __name__ == "__main__":
    sys.exit(main())
