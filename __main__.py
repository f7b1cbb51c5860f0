"""gpu-lab: a Kubernetes lab where a GPU is a schedulable resource (entry point).

Config is parsed and the host is checked before any resource exists (program/edge.py); the
variant the config names is asked of the registry here, at the edge, and passed in; then one
Lab component builds everything, top down (program/lab.py), and its outputs are the stack's
(written through the typed model gpulab.core.outputs.LabOutputs), from which the baseline
card is made.
"""

import pulumi

from gpulab.config.lab import ConfigError
from gpulab.core.shutdown import skip_final_collection
from gpulab.host.nvsmi import NvidiaSmiParseError
from gpulab.host.preflight import PreflightError
from program.edge import load_config, probe_and_preflight, stop_quietly_on_interrupt
from program.lab import Lab, LabArgs
from variants import registry

stop_quietly_on_interrupt()
# The SDK's and pulumi_kubernetes' objects are not collected once more at exit (0.3 s).
skip_final_collection()
try:
    cfg = load_config()
    variant = registry.get(cfg.cluster)
    facts = probe_and_preflight(cfg, variant)
except (ConfigError, PreflightError, NvidiaSmiParseError) as exc:
    # The message names every cause and its first fix; a traceback would only bury it.
    raise pulumi.RunError(str(exc)) from exc

lab = Lab("gpu-lab", LabArgs(cfg, facts, variant))
for key, value in lab.outputs.items():
    pulumi.export(key, value)
