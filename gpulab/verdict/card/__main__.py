"""``python -m gpulab.verdict.card`` (see :mod:`gpulab.verdict.card.cli`)."""

from __future__ import annotations

import sys

from gpulab.verdict.card.cli import main

if __name__ == "__main__":
    sys.exit(main())
