"""gpu-lab: a Kubernetes lab where a GPU is a schedulable resource (entry point).

Config is parsed and the host is checked before any resource exists (components/edge.py);
then one Lab component builds everything, top down (components/lab.py), and its outputs
are the stack's (keys: gpulab/outputs.py), from which the baseline card is made.
"""

import pulumi

from components.edge import load_config, probe_and_preflight
from components.lab import Lab, LabArgs
from gpulab.config import ConfigError
from gpulab.nvsmi import NvidiaSmiParseError
from gpulab.preflight import PreflightError

try:
    cfg = load_config()
    facts = probe_and_preflight(cfg)
except (ConfigError, PreflightError, NvidiaSmiParseError) as exc:
    # The message names every cause and its first fix; a traceback would only bury it.
    raise pulumi.RunError(str(exc)) from exc

lab = Lab("gpu-lab", LabArgs(cfg, facts))
for key, value in lab.outputs.items():
    pulumi.export(key, value)
