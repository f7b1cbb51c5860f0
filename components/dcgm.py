"""DcgmMetrics component: what the GPU Operator's DCGM exporter reports, sampled beside the compute check.

One command, ``python -m gpulab.kube dcgm`` (gpulab.kube.dcgm): the exporter's ``/metrics``
through the API server's service proxy (Service ``nvidia-dcgm-exporter``, port 9400, in the
operator's namespace), sampled every few seconds for ``seconds``, summed up per GPU UUID
(utilisation %, framebuffer used MiB, power W, temperature C, the driver label). It is created
after the smoke check and, on purpose, with no dependency on the compute check, so the engine
runs both at once and the exporter is read while the compute Pod uses the GPU. It re-runs
whenever the smoke check does (``make verify``).

Only on GPU labs: the Lab does not create it in a simulated lab (no exporter process runs) or
with ``dcgmExporter`` off; the checklist item ``dcgm-reports-gpus`` says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from components.command import check_result, kube_command
from gpulab.core.names import DCGM_EXPORTER_PORT, DCGM_EXPORTER_SERVICE, OPERATOR_NAMESPACE
from gpulab.kube.results import DcgmResult


@dataclass(frozen=True)
class DcgmArgs:
    """Inputs.

    Attributes:
        kubeconfig: the cluster's kubeconfig (secret), for the scrape.
        rerun_when: a value that changes whenever the scrape must run again (the smoke check's
            ``measuredAt``); a trigger of the command.
        namespace: the operator's namespace (the exporter's Service is there).
        seconds: how long to sample (seconds); ``interval``: seconds between two scrapes;
            ``wait``: seconds to wait for the exporter's first answer.
    """

    kubeconfig: pulumi.Input[str]
    rerun_when: pulumi.Input[Any]
    namespace: str = OPERATOR_NAMESPACE
    seconds: float = 10
    interval: float = 2
    wait: float = 120


class DcgmMetrics(pulumi.ComponentResource):
    """The scrape command (see module docstring). Type token ``gpulab:dcgm:DcgmMetrics``.

    Outputs: ``metrics`` (the ``dcgmMetrics`` output: gpulab.kube.dcgm_metrics.summarize's dict) and
    ``measured_at`` (UTC ISO 8601, when the scrape ended).
    """

    def __init__(self, name: str, args: DcgmArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpulab:dcgm:DcgmMetrics", name, None, opts)
        self.scrape = kube_command(
            f"{name}-scrape",
            [
                "dcgm",
                "--namespace",
                args.namespace,
                "--service",
                DCGM_EXPORTER_SERVICE,
                "--port",
                str(DCGM_EXPORTER_PORT),
                "--seconds",
                f"{args.seconds:g}",
                "--interval",
                f"{args.interval:g}",
                "--wait",
                f"{args.wait:g}",
            ],
            args.kubeconfig,
            triggers=[args.rerun_when],
            timeout=int(args.wait + args.seconds) + 60,
            opts=pulumi.ResourceOptions(parent=self),
        )
        facts = check_result(self.scrape.stdout, DcgmResult)
        self.metrics = facts.apply(lambda f: f.dcgm_metrics)
        self.measured_at = facts.apply(lambda f: f.measured_at)
        self.register_outputs({"metrics": self.metrics, "measuredAt": self.measured_at})
