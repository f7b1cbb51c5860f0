"""What the stack recorded against what is live: the API server endpoint, the smoke node.

The stack records its cluster's API server URL once (``clusterIdentity.server``, the
``cluster-identity`` command: gpulab.kube.identity), from the kubeconfig the cluster
command read at create. That endpoint can change under the lab while the cluster stays the
same (the same ``kube-system`` UID): a minikube restart publishes the API server on a new
host port, a kubeconfig is rewritten to another address of the same server. ``make lab``,
``make verify`` (ops.repair, the liveness check) and ``make destroy``
(ops.teardown) ask the variant where its cluster answers now
(``Variant.kubeconfig``: what a fresh read would give) and, when that is another
endpoint of the recorded cluster, name the value, both endpoints and the variant's fix
(``VariantSpec.moved_fix``), and change nothing.

Another cluster at the variant's address is not decided here: the stack's own kubeconfig
is compared with the recorded identity (gpulab.kube.identity), and the ``cluster-identity``
command stops a run whose kubeconfig reaches another cluster.

The node the smoke Pod ran on (the ``smokeNode`` output) against the cluster's Nodes now
(:func:`node_gone`): a node renamed or made anew under another name (a kind node container
re-made, a host renamed) leaves the smoke, compute and GPU facts of the card describing a
node that is not there; both are named with the fix (``make verify`` measures them again).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from gpulab.core import outputs as out
from gpulab.core.errors import GpuLabError
from gpulab.kube import client as kube
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
        live_kubeconfig = variant.kubeconfig(profile, root, get)
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
        before, live, variant.spec.moved_fix(profile, stack, before.server, live.server)
    )


def node_gone(api: Any, outputs: Mapping[str, Any], stack: str) -> str | None:
    """What to say when the node the stack's smoke Pod ran on (output ``smokeNode``, measured
    at ``smokeMeasuredAt``) is not among the cluster's Nodes now: both named, and the fix;
    None when it is there, when none was recorded, or when the Nodes cannot be listed."""
    recorded = outputs.get(out.SMOKE_NODE)
    if not recorded or not isinstance(recorded, str):
        return None
    try:
        live = kube.node_names(api, timeout=TIMEOUT)
    except GpuLabError:
        return None
    if recorded in live:
        return None
    when = outputs.get(out.SMOKE_MEASURED_AT) or "at the last run"
    shown = ", ".join(live[:8]) + (f" and {len(live) - 8} more" if len(live) > 8 else "") if live else "none"
    return (
        f"the {stack} lab's smoke test ran on node {recorded} (measured {when}), which is not in the "
        f"cluster now (its nodes: {shown}); the smoke, compute and GPU facts on the card are that "
        f"node's.\n  fix: `GPULAB_STACK={stack} make verify` measures them again on the live nodes"
    )
