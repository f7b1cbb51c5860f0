"""What every cluster component gives the rest of the lab (minikube, sim, ...)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.localcmd import LocalCommand
from gpulab.kube import KUBECONFIG_ENV

#: The interpreter the lab's helper commands run on. The Makefile and the dynamic
#: provider shim put the project's virtualenv first on PATH, so this is its python; a
#: bare name keeps machine paths out of command lines (and out of resource diffs).
PYTHON = "python3"


def kube_command(
    name: str,
    args: Sequence[pulumi.Input[str]],
    kubeconfig: pulumi.Input[str],
    *,
    triggers: Sequence[Any],
    timeout: int,
    purpose: str,
    opts: pulumi.ResourceOptions,
) -> LocalCommand:
    """``python3 -m gpulab.kube <args>`` against the lab's cluster.

    The kubeconfig travels as a secret in the environment (``GPULAB_KUBECONFIG``), never
    on the command line; the command re-runs when one of ``triggers`` changes.
    """
    return LocalCommand(
        name,
        create=[PYTHON, "-m", "gpulab.kube", *args],
        environment=pulumi.Output.secret({KUBECONFIG_ENV: kubeconfig}),
        triggers=list(triggers),
        timeout=timeout,
        purpose=purpose,
        opts=opts,
    )


def pod_uid(pod: k8s.core.v1.Pod) -> pulumi.Output[Any]:
    """The Pod's UID: changes exactly when the Pod is (re)created."""
    return pod.metadata.apply(lambda m: m.get("uid") if isinstance(m, dict) else m.uid)


def parse_json_stdout(stdout: pulumi.Output[str], what: str) -> pulumi.Output[Any]:
    """The JSON object a helper command printed; a clear error when it printed something else."""

    def load(text: str) -> Any:
        try:
            return json.loads(text.strip().splitlines()[-1]) if text and text.strip() else {}
        except ValueError as exc:
            raise ValueError(f"{what} printed no JSON object on its last stdout line: {exc}") from exc

    return stdout.apply(load)


class ClusterOutputs:
    """Attributes a cluster component exposes.

    Attributes:
        kind: the variant, ``"minikube"`` | ``"sim"`` | ...
        kubeconfig: flattened kubeconfig text (secret).
        kubernetes_version: the server's gitVersion.
        ready: the resource whose completion means the API server answers.
    """

    kind: str
    kubeconfig: pulumi.Output[str]
    kubernetes_version: pulumi.Output[str]
    ready: pulumi.Resource
