"""The simulated lab's ClusterPolicy status: written where no operator process runs."""

from __future__ import annotations

import time
from typing import Any

from gpulab.core.names import OPERATOR_NAMESPACE
from gpulab.kube.client import Waiter


def simulate_clusterpolicy(api: Any, state: str, timeout: float = 120) -> None:
    """Simulated lab only: write ClusterPolicy ``cluster-policy`` ``status.state`` (the gate's
    ``--simulate-clusterpolicy STATE`` does it first, in the gate's own process).

    No operator process runs against the simulated control plane, so nothing else would
    ever set the status. The object is annotated ``gpulab.dev/simulated-status: "true"``
    and the status carries a condition saying it was simulated.

    Raises:
        GateError: the ClusterPolicy does not appear within ``timeout`` seconds.
    """
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    custom = client.CustomObjectsApi(api)
    args = ("nvidia.com", "v1", "clusterpolicies", "cluster-policy")

    def exists() -> bool | None:
        try:
            custom.get_cluster_custom_object(*args)
            return True
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    Waiter(timeout).until("ClusterPolicy cluster-policy to exist", exists, lambda: "no ClusterPolicy")
    custom.patch_cluster_custom_object(
        *args, {"metadata": {"annotations": {"gpulab.dev/simulated-status": "true"}}}
    )
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    status = {
        "status": {
            "state": state,
            "namespace": OPERATOR_NAMESPACE,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if state == "ready" else "False",
                    "reason": "Simulated",
                    "message": "simulated by gpu-lab: no operator process runs in the simulated lab",
                    "lastTransitionTime": now,
                }
            ],
        }
    }
    custom.patch_cluster_custom_object_status(*args, status)
