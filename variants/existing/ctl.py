"""An existing cluster (any kubeconfig and context): read it, census it, clean up after the chart.

The ``existing`` variant has no cluster lifecycle: the lab installs the GPU Operator, the
smoke test and the checks into a cluster somebody else runs (multi-node, managed, or the
simulated control plane). This module holds what that needs:

* pure helpers: :func:`select_context` and :func:`minify` (the kubeconfig of one context,
  flattened: certificate files inlined as ``*-data``; the user's file is only read, never
  written), :func:`chart_crds` (the CRDs a gpu-operator chart directory installs, NFD's
  included when enabled) and :func:`removal_plan`;
* a CLI run by the ExistingCluster component as ``python3 -m variants.existing.ctl ...``:

  - ``census --kubeconfig-path P --context C --crd NAME... [--adopt NAMESPACE...]`` asks the
    API server for its version, the nodes that advertise or are labelled with GPUs, which of
    the listed CRDs exist already (before the chart is installed), the nodes' ``nvidia.com/``
    labels and the UIDs of the adopted namespaces and of what is in them. Prints one JSON
    object: ``{"kubernetesVersion", "gpuNodes": [{"name", "allocatable", "capacity"}],
    "preexistingCrds": [...], "gpuLabels": {node: {key: value}}, "foreignObjects": {ref:
    uid}}``. Read-only.
  - ``crd-plan --crd NAME... [--keep NAME...]`` prints ``{"remove": [...], "keep": [...]}``
    without contacting the cluster.
  - ``remove-crds --kubeconfig-path P --context C --crd NAME... [--keep NAME...]`` deletes
    every listed CRD that is not kept and waits until each is gone (the API server deletes
    its custom resources first); a CRD that is already gone is success.
  - ``leftovers --kubeconfig-path P --context C --outputs FILE [--crd NAME...]`` after
    destroy: the leftover census (:mod:`variants.existing.leftovers`: the chart's CRDs, the
    operator's namespace, the ``nvidia.com/`` node labels that were not there before the
    lab) and the ``no-leftovers`` checklist item against the stack outputs saved before
    destroy (``FILE``, ``pulumi stack output --json``: ``leftovers``, ``gpuLabelsBefore``,
    and the chart and NFD setting the CRD list comes from unless ``--crd`` names them), and
    with ``foreignObjects`` whether each object the lab did not create is there with its UID.
    Exit 0 when destroy left only what ``leftovers`` listed and removed nothing it did not
    create, 1 otherwise. Read-only.

The kubeconfig is read by path and context at the time the command runs, so a rotated
token or an exec credential plugin keeps working at destroy time; no credential is ever on
a command line. Exit codes: 0 success, 1 failure (cause and first fix on stderr), 2 usage.

Helm leaves the CRDs of a chart's ``crds/`` directories behind on uninstall (FIELD-NOTES:
"CRDs stay after helm uninstall unless operator.cleanupCRD=true"; that hook runs the
operator image, which does not run against a simulated control plane).
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import yaml

from gpulab.core import outputs as out
from gpulab.core import yamlio
from gpulab.core.errors import GpuLabError
from gpulab.core.names import GPU_RESOURCE, WHOLE_GPU_RESOURCES
from gpulab.core.rawapi import read_json
from gpulab.verdict.items import leftovers as checklist_leftovers
from variants.base import Action, ctl_main
from variants.existing import leftovers

#: CRDs the gpu-operator chart v26.7.0 installs from ``crds/`` (checked against the chart
#: by tests/unit/variants/existing/test_ctl.py), used when the chart comes from a repository.
OPERATOR_CRDS: Final = (
    "clusterpolicies.nvidia.com",
    "computedomaincliques.resource.nvidia.com",
    "computedomains.resource.nvidia.com",
    "gpuclusters.nvidia.com",
    "nvidiadrivers.nvidia.com",
)
#: CRDs of the node-feature-discovery subchart (installed when ``nfd.enabled``).
NFD_CRDS: Final = (
    "nodefeaturegroups.nfd.k8s-sigs.io",
    "nodefeaturerules.nfd.k8s-sigs.io",
    "nodefeatures.nfd.k8s-sigs.io",
)
NFD_SUBCHART: Final = "node-feature-discovery"
#: kubeconfig fields that may name a file, and the inline field ``minify`` replaces them with.
_FILE_FIELDS: Final = (
    ("cluster", "certificate-authority", "certificate-authority-data"),
    ("user", "client-certificate", "client-certificate-data"),
    ("user", "client-key", "client-key-data"),
)


class KubeconfigError(GpuLabError, ValueError):
    """The kubeconfig cannot serve the requested context; the message says why.

    ``about`` is ``"file"`` (unreadable, not a kubeconfig, a certificate file missing) or
    ``"context"`` (no such context, none current, or it names an undefined cluster/user).
    """

    def __init__(self, message: str, about: str = "file") -> None:
        super().__init__(message)
        self.about = about


def resource_of(crd: str) -> str:
    """The ``kubectl``-style name of a CRD, as listed in the ``leftovers`` output."""
    return f"customresourcedefinition/{crd}"


# --------------------------------------------------------------------------- kubeconfig


def _named(doc: Mapping[str, Any], section: str) -> dict[str, dict[str, Any]]:
    entries = doc.get(section) or []
    if not isinstance(entries, list):
        raise KubeconfigError(f"{section} is not a list")
    return {str(e.get("name")): dict(e) for e in entries if isinstance(e, dict) and e.get("name")}


def select_context(doc: Mapping[str, Any], context: str = "") -> tuple[str, dict[str, Any]]:
    """``(name, context entry)`` for ``context``, or for ``current-context`` when empty.

    Raises:
        KubeconfigError: no such context (the message lists those there are), no current
            context, or the context names a cluster or user the file lacks.
    """
    if not isinstance(doc, Mapping) or doc.get("kind") not in (None, "Config"):
        raise KubeconfigError("not a kubeconfig (kind is not Config)")
    contexts = _named(doc, "contexts")
    name = context or str(doc.get("current-context") or "")
    if not name:
        raise KubeconfigError(
            f"no context given and the file has no current-context; allowed: {', '.join(contexts) or 'none'}",
            "context",
        )
    if name not in contexts:
        raise KubeconfigError(
            f"context {name!r} is not in the file; allowed: {', '.join(contexts) or 'none'}", "context"
        )
    entry = contexts[name].get("context") or {}
    for section, key in (("clusters", "cluster"), ("users", "user")):
        ref = entry.get(key)
        if key == "user" and not ref:
            continue  # a context may name no user (e.g. anonymous access)
        if str(ref) not in _named(doc, section):
            raise KubeconfigError(
                f"context {name!r} names {key} {ref!r}, which the file does not define", "context"
            )
    return name, dict(entry)


def minify(doc: Mapping[str, Any], context: str, base_dir: Path) -> dict[str, Any]:
    """The kubeconfig of one context, self-contained (``kubectl config view --minify --flatten``).

    Keeps only the context, its cluster and its user, sets ``current-context``, and inlines
    the certificate files a cluster or user names (relative paths are relative to
    ``base_dir``, the kubeconfig's directory, as kubectl resolves them). Exec credential
    plugins, tokens and ``tokenFile`` stay as they are. ``doc`` is not modified.

    Raises:
        KubeconfigError: see :func:`select_context`; a named certificate file is unreadable.
    """
    name, entry = select_context(doc, context)
    cluster = _named(doc, "clusters")[str(entry["cluster"])]
    user_name = entry.get("user")
    user = _named(doc, "users")[str(user_name)] if user_name else None
    out: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "current-context": name,
        "contexts": [{"name": name, "context": entry}],
        "clusters": [_inline(cluster, "cluster", base_dir)],
        "users": [_inline(user, "user", base_dir)] if user else [],
    }
    return out


def _inline(entry: Mapping[str, Any], section: str, base_dir: Path) -> dict[str, Any]:
    body = dict(entry.get(section) or {})
    for where, path_key, data_key in _FILE_FIELDS:
        if where != section or not body.get(path_key):
            continue
        path = Path(str(body.pop(path_key))).expanduser()
        path = path if path.is_absolute() else base_dir / path
        try:
            body[data_key] = base64.b64encode(path.read_bytes()).decode()
        except OSError as exc:
            raise KubeconfigError(
                f"{section} {entry.get('name')!r}: cannot read {path_key} {path}: {exc}"
            ) from exc
    return {"name": entry.get("name"), section: body}


def load_kubeconfig(path: str, context: str = "") -> tuple[str, str]:
    """``(minified kubeconfig YAML, context name)`` read from the file at ``path``.

    Raises:
        KubeconfigError: unreadable or not YAML, or see :func:`minify`.
    """
    p = Path(path).expanduser()
    try:
        doc = yamlio.load(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise KubeconfigError(f"cannot read {p}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"{p} is not YAML: {exc}") from exc
    if not isinstance(doc, dict):
        raise KubeconfigError(f"{p} is not a kubeconfig")
    name, _ = select_context(doc, context)
    return yaml.safe_dump(minify(doc, name, p.parent), sort_keys=False), name


# --------------------------------------------------------------------------- CRDs


def _crd_names_in(directory: Path) -> list[str]:
    names: list[str] = []
    for f in sorted(directory.glob("*.yaml")) + sorted(directory.glob("*.yml")):
        for doc in yamlio.load_all(f.read_text(encoding="utf-8")):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                names.append(str(doc["metadata"]["name"]))
    return names


def chart_crds(chart_dir: Path, nfd: bool) -> list[str]:
    """The CRD names Helm installs from ``chart_dir``: its ``crds/`` and, when ``nfd``, the
    node-feature-discovery subchart's ``crds/`` (sorted). Helm installs a disabled
    subchart's CRDs not at all, and never deletes any of them on uninstall."""
    names = _crd_names_in(chart_dir / "crds")
    if nfd:
        names += _crd_names_in(chart_dir / "charts" / NFD_SUBCHART / "crds")
    return sorted(set(names))


def operator_crds(chart_path: str | None, nfd: bool) -> list[str]:
    """CRDs the release will leave: read from a local chart, else the v26.7.0 list."""
    if chart_path:
        return chart_crds(Path(chart_path), nfd)
    return sorted([*OPERATOR_CRDS, *(NFD_CRDS if nfd else ())])


def removal_plan(crds: Sequence[str], keep: Sequence[str]) -> dict[str, list[str]]:
    """``{"remove": CRDs the lab created, "keep": CRDs that existed before it}`` (sorted)."""
    kept = set(keep)
    return {
        "remove": sorted(c for c in set(crds) if c not in kept),
        "keep": sorted(c for c in set(crds) if c in kept),
    }


def gpu_nodes(nodes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Nodes (JSON dicts) that advertise ``nvidia.com/gpu`` (or, renamed by time-slicing,
    ``nvidia.com/gpu.shared``) or carry ``nvidia.com/gpu.present``: ``[{"name", "allocatable",
    "capacity"}]``, the counts of the name with more allocatable (a renamed node keeps the old
    name at 0 for a while; None: neither name)."""
    found = []
    for n in nodes:
        st = n.get("status") or {}
        labels = (n.get("metadata") or {}).get("labels") or {}
        have = {**(st.get("capacity") or {}), **(st.get("allocatable") or {})}
        names = [k for k in WHOLE_GPU_RESOURCES if k in have]
        key = max(names, key=lambda k: int(str(have[k])), default=GPU_RESOURCE)
        alloc = (st.get("allocatable") or {}).get(key)
        cap = (st.get("capacity") or {}).get(key)
        if alloc is None and cap is None and labels.get("nvidia.com/gpu.present") != "true":
            continue
        found.append(
            {
                "name": (n.get("metadata") or {}).get("name"),
                "allocatable": int(alloc) if alloc is not None else None,
                "capacity": int(cap) if cap is not None else None,
            }
        )
    return found


# --------------------------------------------------------------------------- cluster I/O


class ClusterError(GpuLabError, RuntimeError):
    """The cluster could not be read or changed; ``str()`` names the cause and the fix."""


def _api(path: str, context: str) -> Any:
    from kubernetes import client, config

    conf = client.Configuration()
    try:
        config.load_kube_config(config_file=path, context=context or None, client_configuration=conf)
    except Exception as exc:  # the loader raises ConfigException, OSError, ValueError...
        raise ClusterError(
            f"cannot load context {context!r} from {path}: {exc}\n  fix: check gpu-lab:kubeconfigPath "
            "and gpu-lab:kubeContext (kubectl --kubeconfig <path> config get-contexts)"
        ) from exc
    return client.ApiClient(conf)


def census(path: str, context: str, crds: Sequence[str], adopted: Sequence[str] = ()) -> dict[str, Any]:
    """What the cluster is before the lab touches it (see module docstring); ``adopted``: the
    namespaces of ``adoptExisting``, whose objects are counted by UID."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    api = _api(path, context)
    try:
        version = client.VersionApi(api).get_code().git_version
        nodes = [api.sanitize_for_serialization(n) for n in client.CoreV1Api(api).list_node().items]
        crd_list = read_json(client.ApiextensionsV1Api(api).list_custom_resource_definition)
        present = {str(c["metadata"]["name"]) for c in crd_list.get("items") or []}
        foreign = leftovers.foreign_objects(api, adopted)
    except (ApiException, OSError) as exc:
        raise ClusterError(
            f"the API server of context {context!r} did not answer: {exc}\n  fix: kubectl --context "
            f"{context} get nodes must work from this machine"
        ) from exc
    except Exception as exc:  # urllib3 connection errors have no common base worth importing
        raise ClusterError(f"cannot reach the API server of context {context!r}: {exc}") from exc
    return {
        "kubernetesVersion": version,
        "nodes": len(nodes),
        "gpuNodes": gpu_nodes(nodes),
        "preexistingCrds": sorted(c for c in crds if c in present),
        # The labels before the lab: destroy's leftovers are the ones added after (leftovers.py).
        "gpuLabels": leftovers.gpu_labels(nodes),
        # What the lab did not create and must leave: compared by UID after destroy.
        "foreignObjects": foreign,
    }


def leftover_census(
    path: str, context: str, outputs: Mapping[str, Any], crds: Sequence[str]
) -> dict[str, Any]:
    """The leftover census after destroy, with the ``no-leftovers`` item (``"item"``) judged
    against the stack ``outputs`` saved before it; ``crds`` (empty: from the outputs' chart
    source and NFD setting, :func:`operator_crds`) are the chart's CRDs to look for.

    Raises:
        ClusterError: the cluster cannot be reached or read.
    """
    from kubernetes.client.rest import ApiException

    raw_stack = outputs.get(out.GPU_STACK)
    stack: Mapping[str, Any] = raw_stack if isinstance(raw_stack, Mapping) else {}
    found = stack.get("mode") == "found"
    # A found GPU stack: the lab installed no chart (its CRDs and namespace are someone
    # else's); what it created is its own namespace (labNamespace) and the Pods in it.
    namespace = str(stack.get("namespace") or "") if found else leftovers.OPERATOR_NAMESPACE
    if found:
        crds = ()
    elif not crds:
        source = str(outputs.get(out.CHART_SOURCE) or "")
        nfd = bool((outputs.get(out.OPERATOR_COMPONENTS) or {}).get("nfd", True))
        crds = operator_crds(source[len("local:") :] if source.startswith("local:") else None, nfd)
    before = outputs.get(out.GPU_LABELS_BEFORE)
    foreign = outputs.get(out.FOREIGN_OBJECTS)
    api = _api(path, context)
    try:
        doc = leftovers.read(
            api,
            crds,
            before if isinstance(before, Mapping) else None,
            namespace,
            {str(k): str(v) for k, v in foreign.items()} if isinstance(foreign, Mapping) else None,
        )
    except (ApiException, OSError) as exc:
        raise ClusterError(f"the API server of context {context!r} did not answer: {exc}") from exc
    doc["promised"] = [str(x) for x in outputs.get(out.LEFTOVERS) or []]
    doc["item"] = checklist_leftovers.evaluate(out.LabOutputs.from_json(outputs), doc).to_json()
    return doc


def remove_crds(
    path: str, context: str, crds: Sequence[str], keep: Sequence[str], timeout: float = 300
) -> dict[str, Any]:
    """Delete the CRDs of :func:`removal_plan` and wait until each is gone.

    An API server that does not answer at all counts as a cluster that is gone (as the
    lab's Kubernetes provider treats it, ``deleteUnreachable``): nothing is deleted, the
    CRDs that may remain are printed, and the result says ``"unreachable": true``.

    Raises:
        ClusterError: the kubeconfig cannot be loaded, a delete was refused, or a CRD was
            still there after ``timeout`` seconds.
    """
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    plan = removal_plan(crds, keep)
    ext = client.ApiextensionsV1Api(_api(path, context))
    try:
        client.VersionApi(ext.api_client).get_code()
    except ApiException:
        pass  # it answered
    except Exception as exc:  # connection refused, DNS, TLS: nobody there
        print(
            f"the API server of context {context!r} does not answer ({str(exc).splitlines()[0]}); "
            f"treating the cluster as gone. If it is not, these CRDs remain: {', '.join(plan['remove'])}",
            file=sys.stderr,
        )
        return {"removed": [], "kept": plan["keep"], "unreachable": True}
    for name in plan["remove"]:
        try:
            ext.delete_custom_resource_definition(name)
            print(f"deleting customresourcedefinition/{name}", file=sys.stderr)
        except ApiException as exc:
            if exc.status != 404:
                raise ClusterError(f"deleting CRD {name} failed: {exc.status} {exc.reason}") from exc
    deadline = time.monotonic() + timeout
    pending = list(plan["remove"])
    while pending:
        still = []
        for name in pending:
            try:
                ext.read_custom_resource_definition(name)
                still.append(name)
            except ApiException as exc:
                if exc.status != 404:
                    raise ClusterError(f"reading CRD {name} failed: {exc.status} {exc.reason}") from exc
        pending = still
        if pending and time.monotonic() > deadline:
            raise ClusterError(
                f"CRDs still present after {timeout:.0f}s: {', '.join(pending)} (their custom "
                "resources may carry finalizers)\n  fix: kubectl get <crd> -A, remove the finalizers, retry"
            )
        if pending:
            time.sleep(1)
    for name in plan["keep"]:
        print(f"keeping customresourcedefinition/{name}: it existed before the lab", file=sys.stderr)
    return {"removed": plan["remove"], "kept": plan["keep"], "unreachable": False}


# --------------------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python3 -m variants.existing.ctl")
    sub = ap.add_subparsers(dest="cmd", required=True)

    def where(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--kubeconfig-path", required=True)
        sp.add_argument("--context", default="")

    def crds(sp: argparse.ArgumentParser, keep: bool) -> None:
        sp.add_argument("--crd", action="append", default=[], help="a CRD name (repeatable)")
        if keep:
            sp.add_argument("--keep", action="append", default=[], help="a CRD to leave (repeatable)")

    c = sub.add_parser("census", help="version, GPU nodes, CRDs present (read-only)")
    where(c)
    crds(c, keep=False)
    c.add_argument("--adopt", action="append", default=[], help="an adopted namespace (repeatable)")
    p = sub.add_parser("crd-plan", help="which CRDs remove-crds would delete (no cluster access)")
    crds(p, keep=True)
    r = sub.add_parser("remove-crds", help="delete the CRDs the lab created")
    where(r)
    crds(r, keep=True)
    r.add_argument("--timeout", type=float, default=300)
    left = sub.add_parser("leftovers", help="after destroy: what it left, against the outputs (read-only)")
    where(left)
    crds(left, keep=False)
    left.add_argument("--outputs", required=True, help="the stack outputs JSON saved before destroy")
    return ap


def _leftovers(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    try:
        outputs = json.loads(Path(args.outputs).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ClusterError(f"cannot read the stack outputs {args.outputs}: {exc}") from exc
    doc = leftover_census(args.kubeconfig_path, args.context, outputs, args.crd)
    return doc, 0 if doc["item"]["status"] == "pass" else 1


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; prints one JSON object; exit 0 ok, 1 failure, 2 usage."""
    args = _parser().parse_args(argv)
    actions: dict[str, Action] = {
        "census": lambda: (census(args.kubeconfig_path, args.context, args.crd, args.adopt), 0),
        "crd-plan": lambda: (removal_plan(args.crd, args.keep), 0),
        "remove-crds": lambda: (
            remove_crds(args.kubeconfig_path, args.context, args.crd, args.keep, args.timeout),
            0,
        ),
        "leftovers": lambda: _leftovers(args),
    }
    return ctl_main("existing_ctl", actions[args.cmd], (ClusterError,), sort_keys=True)


if __name__ == "__main__":
    sys.exit(main())
