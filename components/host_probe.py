"""HostProbe component: the host's GPUs, driver and CUDA ceiling as stack outputs.

The probe runs while the program runs (preview included), before any other resource is
registered, so a host without a working driver stops the deployment with the cause and
the first fix and nothing is created. In the simulated lab it reads a shipped capture
(see gpulab/host/probe.py) and says so (``simulated``).
"""

from __future__ import annotations

import pulumi

from gpulab.host.facts import HostFacts


class HostProbe(pulumi.ComponentResource):
    """Exposes the host's GPU facts (read by ``program.edge.probe_and_preflight``).

    Args:
        name: resource name.
        mode: how they were read: ``"nvidia-smi"`` (here), ``"capture"`` (a shipped
            capture; simulated) or ``"off"`` (no probe: every fact output is None, e.g.
            previewing a GPU stack on a laptop).
        facts: the facts, or None with ``mode="off"``.

    Outputs: ``gpu_count`` (int), ``gpu_models`` (list[str]), ``gpus`` (list[dict], see
    gpulab.core.outputs.HOST_GPUS), ``driver_version`` (str), ``max_cuda`` (str|None),
    ``source`` (str), ``simulated`` (bool), ``topology`` (dict|None: the ``hostTopology``
    output, gpulab.host.topology_probe.output_json), ``node_runtime`` (dict|None: the
    ``nodeRuntime`` output, gpulab.host.node_runtime), ``facts`` (the :class:`HostFacts` or None;
    a plain attribute, known at construction).
    """

    def __init__(
        self,
        name: str,
        mode: str,
        facts: HostFacts | None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        # The facts are also the component's inputs, so policies see them at preview.
        super().__init__(
            "gpulab:host_probe:HostProbe",
            name,
            {
                "mode": mode,
                "source": facts.source if facts else "off",
                "gpuCount": facts.count if facts else None,
                "gpuModels": facts.models if facts else None,
                "driverVersion": facts.driver_version if facts else None,
                "maxCuda": facts.max_cuda if facts else None,
                "simulated": bool(facts and facts.simulated),
            },
            opts,
        )
        self.facts = facts
        for w in facts.warnings if facts else ():
            pulumi.log.warn(w, resource=self)
        self.gpu_count = pulumi.Output.from_input(facts.count if facts else None)
        self.gpu_models = pulumi.Output.from_input(facts.models if facts else None)
        self.gpus = pulumi.Output.from_input(facts.gpus_json() if facts else None)
        self.driver_version = pulumi.Output.from_input(facts.driver_version if facts else None)
        self.max_cuda = pulumi.Output.from_input(facts.max_cuda if facts else None)
        self.source = pulumi.Output.from_input(facts.source if facts else "off")
        self.simulated = pulumi.Output.from_input(bool(facts and facts.simulated))
        self.topology = pulumi.Output.from_input(facts.topology_json() if facts else None)
        runtime = facts.node_runtime if facts else None
        self.node_runtime = pulumi.Output.from_input(runtime.to_json() if runtime else None)
        self.register_outputs(
            {
                "gpuCount": self.gpu_count,
                "gpuModels": self.gpu_models,
                "gpus": self.gpus,
                "driverVersion": self.driver_version,
                "maxCuda": self.max_cuda,
                "source": self.source,
                "simulated": self.simulated,
                "topology": self.topology,
                "nodeRuntime": self.node_runtime,
            }
        )
