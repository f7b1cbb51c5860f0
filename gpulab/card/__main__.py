"""``python -m gpulab.card`` (see :mod:`gpulab.card.cli`)."""

from __future__ import annotations

import sys

from gpulab.card.cli import main

if __name__ == "__main__":
    sys.exit(main())
