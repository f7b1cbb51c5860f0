"""What the stack recorded at create against what is live: the API server endpoint.

The stack records its cluster's API server URL once (``clusterIdentity.server``, the
``cluster-identity`` command: gpulab.kube.identity), from the kubeconfig the cluster
command read at create. That endpoint can change under the lab while the cluster stays the
same (the same ``kube-system`` UID): a minikube restart publishes the API server on a new
host port, a kubeconfig is rewritten to another address of the same server. ``make lab``,
``make verify`` (gpulab.ops.repair, the liveness check) and ``make destroy``
(gpulab.ops.teardown) ask the variant where its cluster answers now
(``Lifecycle.live_kubeconfig``: what a fresh read would give) and, when that is another
endpoint of the recorded cluster, name the value, both endpoints and the variant's fix
(``Lifecycle.moved_fix``), and change nothing.

Another cluster at the variant's address is not decided here: the stack's own kubeconfig
is compared with the recorded identity (gpulab.kube.identity), and the ``cluster-identity``
command stops a run whose kubeconfig reaches another cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from gpulab.core.errors import GpuLabError
from gpulab.kube import identity
from variants.base import Getter, Variant

#: Seconds for the one request that reads the live endpoint's ``kube-system`` UID.
TIMEOUT: Final = 5.0


def moved(
    variant: Variant,
    profile: str,
    root: Path,
    get: Getter,
    recorded: Mapping[str, Any] | None,
    stack: str,
    read: Any = None,
) -> identity.EndpointChangedError | None:
    """The change when the recorded cluster answers at another endpoint than the recorded
    one, by the variant's own read of where it is now; else None.

    None also when nothing was recorded, when the variant cannot tell (no tool, no file), when
    the live endpoint is the recorded one, when it does not answer, and when it reaches another
    cluster (the identity check's case). ``read(kubeconfig, timeout=...)``: the live identity
    (default gpulab.kube.identity.read).
    """
    if not recorded:
        return None
    try:
        before = identity.Identity.from_json(recorded)
        live_kubeconfig = variant.local.live_kubeconfig(profile, root, get)
        if not live_kubeconfig:
            return None
        server, _ = identity.from_kubeconfig(live_kubeconfig)
        if server == before.server:
            return None
        live = (read or identity.read)(live_kubeconfig, timeout=TIMEOUT)
    except (GpuLabError, OSError, ValueError):
        return None  # not readable or not answering there: nothing to compare
    if not before.moved(live):
        return None
    return identity.EndpointChangedError(
        before, live, variant.local.moved_fix(profile, stack, before.server, live.server)
    )
