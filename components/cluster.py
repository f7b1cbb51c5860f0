"""What every cluster component gives the rest of the lab (minikube, sim, ...)."""

from __future__ import annotations

import pulumi


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
