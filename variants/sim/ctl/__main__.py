"""``python -m variants.sim.ctl up|down|status`` (see :mod:`variants.sim.ctl.cli`)."""

from __future__ import annotations

import sys

from variants.sim.ctl.cli import main

if __name__ == "__main__":
    sys.exit(main())
