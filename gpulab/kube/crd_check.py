"""Before the Helm release: the operator's CRDs already in the cluster versus the chart's.

Helm installs the CRDs of a chart's ``crds/`` directories only when they are absent, and
never upgrades or deletes them ("There is no support at this time for upgrading or deleting
CRDs using Helm", Helm's chart best practices); the GPU Operator's upgrade guide therefore
applies ``crds/`` with ``kubectl apply`` before ``helm upgrade`` (its pre-upgrade hook,
``operator.upgradeCRD``, runs only on an upgrade, in the operator image, and skips the
``resource.nvidia.com`` CRDs). So a release installed over CRDs another chart version left
(a destroy keeps them; a chartVersion bump never touches them) runs the new operator against
the old schema: the API server prunes the fields it does not know, and the operator may
deploy nothing (NVIDIA/gpu-operator#431, #139; edgelesssys/contrast#2599).

:func:`compare` (pure) sorts each CRD of the chart into a :class:`CrdVerdict`:

=================  ====================================================================
``absent``         not in the cluster: Helm installs it
``same``           the cluster's has the chart's versions, served/storage flags and schema
``differs``        another chart version's (versions, schema or the controller-gen
                   version differ, or its labels name an older chart): applying the
                   chart's CRD upgrades it in place; objects stay
``newer``          its labels or annotations name a newer chart version: applying would
                   downgrade it
``incompatible``   the cluster stores objects in a version the chart's CRD no longer has
                   (``status.storedVersions``): the API server refuses the update
``foreign``        another Helm release owns it (``meta.helm.sh/release-name``)
=================  ====================================================================

CLI (the lab runs it before the release; the kubeconfig comes in ``$GPULAB_KUBECONFIG``,
as for :mod:`gpulab.kube`)::

    python -m gpulab.kube.crd_check [--chart DIR] [--nfd] [--apply] [--release NAME --namespace NS]
        [--values JSON]

prints one JSON object (``chart``, ``chartVersion``, ``crds``: the verdicts, ``applied``,
``created``, ``blocked``; with ``--values``, ``compat``: :mod:`gpulab.kube.compat`'s report) and
exits 0 when the release may go ahead (every CRD ``absent`` or ``same``, or ``differs`` and
upgraded with ``--apply``; no compatibility problem), 1 when one stops it (the cause and the
fix on stderr: without ``--apply`` the ``kubectl apply`` to run), 2 on usage errors.

``--apply`` (a cluster the lab owns) also creates the ``absent`` CRDs once nothing stops the
release: the chart's files as they are, as Helm's ``crds/`` install would create them (no
release labels: Helm v3.18.6 ``action/install.go`` ``installCRDs``), each waited for until its
``Established`` condition is ``True``, read every 50 ms (:func:`create_absent`). Helm then
skips them ("already present") and with them its own wait, which polls every 2 s
(``kube/wait.go``) and then rebuilds its REST mapper: up to 2.6 s of the sim lab's `up`.

``--values`` is the JSON of the chart values the lab sets (``helm_values``): the compatibility
checks (:mod:`gpulab.kube.compat`: the chart's ``kubeVersion``, the APIs its templates
render, the ConfigMaps its sharing and MIG configs name) run against it. Without ``--chart``
(a repository chart, not on disk before Helm pulls it) only the ConfigMap references are
checked.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from gpulab.core import fixes_operator, yamlio
from gpulab.core.errors import GpuLabError
from gpulab.core.names import OPERATOR_NAMESPACE, OPERATOR_RELEASE
from gpulab.core.rawapi import read_json
from gpulab.kube import chart_apis, compat
from gpulab.kube.client import GateError, Waiter, load_clients

__all__ = [
    "STATES",
    "ChartCrd",
    "CrdCheckError",
    "CrdVerdict",
    "chart_crds",
    "compare",
    "create_absent",
    "fingerprint",
    "main",
]

#: Verdict states, as in the module docstring; the first two let the release go ahead.
STATES: Final = ("absent", "same", "differs", "newer", "incompatible", "foreign")
_NFD_SUBCHART: Final = "node-feature-discovery"
_GEN_ANNOTATION: Final = "controller-gen.kubebuilder.io/version"
_VERSION_RE: Final = re.compile(r"v?(\d+(?:\.\d+)*)")
#: Labels and annotations that name the chart version a CRD came with.
_VERSION_TAGS: Final = ("helm.sh/chart", "app.kubernetes.io/version")
#: How long a created CRD may take to be Established: Helm's own bound for the CRDs it
#: creates (``installCRDs``: ``Wait(totalItems, 60*time.Second)``), and how often it is read.
ESTABLISHED_TIMEOUT: Final = 60.0
_ESTABLISHED_EVERY: Final = 0.05

Json = Mapping[str, Any]


class CrdCheckError(GpuLabError, RuntimeError):
    """The check cannot run (chart unreadable, API server refused); the message says why."""


@dataclass(frozen=True)
class ChartCrd:
    """A CRD of the chart: ``file`` relative to the chart directory, ``doc`` the parsed YAML."""

    name: str
    file: str
    doc: Json


@dataclass(frozen=True)
class CrdVerdict:
    """How the cluster's copy of one chart CRD compares: ``state`` (:data:`STATES`),
    ``reasons`` (what differs, in words), ``file`` (the chart's file), ``fix`` (``""`` when
    nothing is to be done)."""

    name: str
    state: str
    file: str
    reasons: tuple[str, ...] = ()
    fix: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state,
            "file": self.file,
            "reasons": list(self.reasons),
            "fix": self.fix,
        }


def chart_crds(chart_dir: Path, nfd: bool) -> list[ChartCrd]:
    """The CRDs Helm installs from ``chart_dir``'s ``crds/`` (and the node-feature-discovery
    subchart's when ``nfd``), sorted by name.

    Raises:
        CrdCheckError: a file is not YAML.
    """
    dirs = [chart_dir / "crds"] + ([chart_dir / "charts" / _NFD_SUBCHART / "crds"] if nfd else [])
    found: dict[str, ChartCrd] = {}
    for directory in dirs:
        for path in sorted(directory.glob("*.y*ml")):
            try:
                docs = list(yamlio.load_all(path.read_text(encoding="utf-8")))
            except (OSError, yaml.YAMLError) as exc:
                raise CrdCheckError(f"cannot read {path}: {exc}") from exc
            for doc in docs:
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    name = str(doc["metadata"]["name"])
                    found[name] = ChartCrd(name, str(path.relative_to(chart_dir)), doc)
    return [found[n] for n in sorted(found)]


def chart_version(chart_dir: Path) -> str:
    """``version`` of the chart's Chart.yaml (``"v26.7.0"``), ``""`` when unreadable."""
    try:
        doc = yamlio.load((chart_dir / "Chart.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return ""
    return str(doc.get("version") or "") if isinstance(doc, dict) else ""


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def fingerprint(crd: Json) -> dict[str, Any]:
    """What decides whether two copies of a CRD are the same definition: group, scope, kind,
    and per version ``served``, ``storage`` and a digest of its schema, subresources and
    printer columns (the API server keeps these as given)."""
    spec = crd.get("spec") or {}
    versions = {}
    for v in spec.get("versions") or []:
        rest = {k: v.get(k) for k in ("schema", "subresources", "additionalPrinterColumns", "deprecated")}
        versions[str(v.get("name"))] = {
            "served": bool(v.get("served")),
            "storage": bool(v.get("storage")),
            "digest": _digest(rest),
        }
    return {
        "group": spec.get("group"),
        "scope": spec.get("scope"),
        "kind": (spec.get("names") or {}).get("kind"),
        "versions": versions,
    }


def _parse(version: str) -> tuple[int, ...] | None:
    m = _VERSION_RE.search(version)
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


def _labelled_version(live: Json) -> str:
    """The chart version the cluster's copy names: ``helm.sh/chart`` (``gpu-operator-v25.3.0``)
    or ``app.kubernetes.io/version``, in its labels or annotations; ``""`` when none."""
    meta = live.get("metadata") or {}
    tags = {**(meta.get("annotations") or {}), **(meta.get("labels") or {})}
    chart = str(tags.get(_VERSION_TAGS[0]) or "")
    if chart.startswith("gpu-operator-") or chart.startswith(_NFD_SUBCHART + "-"):
        return chart.rsplit("-", 1)[-1]
    return str(tags.get(_VERSION_TAGS[1]) or "")


def compare(
    chart: ChartCrd,
    live: Json | None,
    version: str,
    *,
    release: str = OPERATOR_RELEASE,
    namespace: str = OPERATOR_NAMESPACE,
    chart_dir: str = "<chart>",
) -> CrdVerdict:
    """The verdict on the cluster's copy ``live`` (a ``kubectl get crd -o json`` object, None
    when absent) of ``chart``'s CRD; ``version`` is the chart's (``v26.7.0``)."""
    if live is None:
        return CrdVerdict(chart.name, "absent", chart.file)
    meta = live.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    owner = annotations.get("meta.helm.sh/release-name")
    owner_ns = annotations.get("meta.helm.sh/release-namespace")
    if owner and (owner, owner_ns) != (release, namespace):
        return CrdVerdict(
            chart.name,
            "foreign",
            chart.file,
            (f"Helm release {owner_ns}/{owner} owns it",),
            f"uninstall that release or keep this one's CRDs out of it (helm -n {owner_ns} status {owner})",
        )
    want, have = fingerprint(chart.doc), fingerprint(live)
    chart_versions = set(want["versions"])
    stored = [str(v) for v in (live.get("status") or {}).get("storedVersions") or []]
    dropped = sorted(v for v in stored if v not in chart_versions)
    if dropped:
        return CrdVerdict(
            chart.name,
            "incompatible",
            chart.file,
            (f"objects are stored as {', '.join(dropped)}, which the chart's CRD does not define",),
            fixes_operator.crd_stored_versions(chart.name, ", ".join(dropped)),
        )
    labelled = _labelled_version(live)
    ours, theirs = _parse(version), _parse(labelled)
    if ours is not None and theirs is not None and theirs > ours:
        return CrdVerdict(
            chart.name,
            "newer",
            chart.file,
            (f"it names chart version {labelled}, newer than {version}",),
            f"use chart {labelled} or newer (scripts/pulumi config set gpu-lab:chartVersion {labelled}), "
            "or apply "
            f"{chart.file} on purpose: {fixes_operator.apply_crds(chart_dir, [chart.file])}",
        )
    reasons = []
    if labelled and theirs != ours:
        reasons.append(f"it names chart version {labelled}, the chart is {version}")
    for key in ("group", "scope", "kind"):
        if want[key] != have[key]:
            reasons.append(f"{key} {have[key]} instead of {want[key]}")
    for name in sorted(chart_versions | set(have["versions"])):
        w, h = want["versions"].get(name), have["versions"].get(name)
        if h is None:
            reasons.append(f"version {name} missing")
        elif w is None:
            reasons.append(f"version {name} not in the chart's")
        elif (w["served"], w["storage"]) != (h["served"], h["storage"]):
            reasons.append(
                f"version {name} served/storage {h['served']}/{h['storage']} instead of "
                f"{w['served']}/{w['storage']}"
            )
        elif w["digest"] != h["digest"]:
            reasons.append(f"version {name} has another schema")
    gen_chart = (chart.doc.get("metadata") or {}).get("annotations", {}).get(_GEN_ANNOTATION)
    gen_live = annotations.get(_GEN_ANNOTATION)
    if reasons and gen_chart != gen_live:
        reasons.append(f"controller-gen {gen_live} instead of {gen_chart}")
    if not reasons:
        return CrdVerdict(chart.name, "same", chart.file)
    return CrdVerdict(
        chart.name, "differs", chart.file, tuple(reasons), fixes_operator.apply_crds(chart_dir, [chart.file])
    )


def _upgraded(chart: ChartCrd, live: Json) -> dict[str, Any]:
    """The chart's CRD as an update of ``live``: its resourceVersion (an update, never a
    delete: the objects stay), and the live labels and annotations the chart does not set,
    except those naming a chart version (they would name the old one)."""
    body = json.loads(json.dumps(chart.doc))
    meta = body.setdefault("metadata", {})
    live_meta = live.get("metadata") or {}
    meta["resourceVersion"] = live_meta.get("resourceVersion")
    for key in ("labels", "annotations"):
        kept = {k: v for k, v in (live_meta.get(key) or {}).items() if k not in _VERSION_TAGS}
        merged = {**kept, **(meta.get(key) or {})}
        if merged:
            meta[key] = merged
    return body


def run(
    api: Any, chart_dir: Path, nfd: bool, apply: bool, release: str, namespace: str
) -> tuple[dict[str, Any], int, list[ChartCrd]]:
    """Read the cluster's copies, compare, upgrade the ``differs`` ones when ``apply``.

    Returns ``(report, exit code, the chart's CRDs the cluster does not have)``.

    Raises:
        CrdCheckError: the API server refused a read or an update.
    """
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    ext = client.ApiextensionsV1Api(api)
    version = chart_version(chart_dir)
    verdicts: list[CrdVerdict] = []
    lives: dict[str, Any] = {}
    for crd in chart_crds(chart_dir, nfd):
        try:
            live = read_json(ext.read_custom_resource_definition, crd.name)
        except ApiException as exc:
            if exc.status != 404:
                raise CrdCheckError(f"reading CRD {crd.name} failed: {exc.status} {exc.reason}") from exc
            live = None
        lives[crd.name] = (crd, live)
        verdicts.append(
            compare(crd, live, version, release=release, namespace=namespace, chart_dir=str(chart_dir))
        )
    applied: list[str] = []
    if apply:
        for v in verdicts:
            if v.state == "differs":
                crd, live = lives[v.name]
                try:
                    # The client sends a plain dict as is (no model round trip drops a field).
                    body: Any = _upgraded(crd, live)
                    ext.replace_custom_resource_definition(v.name, body)
                except ApiException as exc:
                    raise CrdCheckError(
                        f"upgrading CRD {v.name} to {version} failed: {exc.status} {exc.reason}; fix: {v.fix}"
                    ) from exc
                print(f"upgraded customresourcedefinition/{v.name} to chart {version}", file=sys.stderr)
                applied.append(v.name)
    blocked = [v for v in verdicts if v.state not in ("absent", "same") and v.name not in applied]
    for v in blocked:
        print(f"crd {v.name}: {v.state}: {'; '.join(v.reasons)}\n  fix: {v.fix}", file=sys.stderr)
    report = {
        "chart": str(chart_dir),
        "chartVersion": version,
        "crds": [v.to_json() for v in verdicts],
        "applied": applied,
        "created": [],
        "blocked": [v.name for v in blocked],
    }
    absent = [lives[v.name][0] for v in verdicts if v.state == "absent"]
    return report, 1 if blocked else 0, absent


def create_absent(
    api: Any,
    crds: Sequence[ChartCrd],
    timeout: float = ESTABLISHED_TIMEOUT,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[str]:
    """Create each of ``crds`` from the chart's file as it is, then wait until every one is
    ``Established`` (module docstring), with the lab's own wait (:class:`gpulab.kube.client.Waiter`:
    a transient API error is retried, progress goes to stderr). Returns their names, in order.

    Raises:
        CrdCheckError: the API server refused a create or a read, a CRD's names conflict with
            another's (``NamesAccepted`` ``False``: the API server will not serve it), or one
            was not Established within ``timeout`` seconds.
    """
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    ext = client.ApiextensionsV1Api(api)
    for crd in crds:
        try:
            # The client sends a plain dict as is (no model round trip drops a field).
            ext.create_custom_resource_definition(dict(crd.doc))
        except ApiException as exc:
            raise CrdCheckError(
                f"creating CRD {crd.name} from the chart's {crd.file} failed: {exc.status} {exc.reason}"
            ) from exc
        print(f"created customresourcedefinition/{crd.name}", file=sys.stderr)
    waiting = [crd.name for crd in crds]
    refused: list[str] = []
    reading = ""  # the CRD read last: the one a refused read names

    def established() -> bool | None:
        nonlocal reading
        for name in list(waiting):
            reading = name
            status = read_json(ext.read_custom_resource_definition, name).get("status") or {}
            state = {c.get("type"): c for c in status.get("conditions") or []}
            if (state.get("Established") or {}).get("status") == "True":
                waiting.remove(name)
            elif (state.get("NamesAccepted") or {}).get("status") == "False":
                said = state["NamesAccepted"].get("message") or "no message"
                refused.append(
                    f"CRD {name}: its names are not accepted ({said}); find the CRD that holds them: "
                    "scripts/kubectl get crd"
                )
        return True if not waiting else None

    wait = Waiter(
        timeout,
        interval=_ESTABLISHED_EVERY,
        first_interval=_ESTABLISHED_EVERY,
        clock=clock,
        sleep=sleep,
        api=api,
    )
    try:
        wait.until(
            "the chart's CRDs to be Established",
            established,
            lambda: (
                f"CRD(s) {', '.join(waiting)} not Established within {timeout:.0f}s; "
                f"scripts/kubectl get crd {waiting[0]} -o yaml (status.conditions)"
            ),
            stop=lambda _: refused[0] if refused else None,
        )
    except ApiException as exc:
        raise CrdCheckError(f"reading CRD {reading} failed: {exc.status} {exc.reason}") from exc
    except GateError as exc:
        raise CrdCheckError(str(exc)) from exc
    return [crd.name for crd in crds]


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry (module docstring): prints the report; exit 0 go ahead, 1 stop, 2 usage."""
    ap = argparse.ArgumentParser(prog="python -m gpulab.kube.crd_check")
    ap.add_argument("--chart", help="the gpu-operator chart directory (a local chart)")
    ap.add_argument("--nfd", action="store_true", help="the node-feature-discovery subchart is on")
    ap.add_argument(
        "--apply",
        action="store_true",
        help="upgrade CRDs that differ (never newer ones); create absent ones once the release may go ahead",
    )
    ap.add_argument("--release", default=OPERATOR_RELEASE)
    ap.add_argument("--namespace", default=OPERATOR_NAMESPACE)
    ap.add_argument("--values", help="the chart values the lab sets, as JSON (compatibility checks)")
    args = ap.parse_args(argv)
    chart_dir = Path(args.chart) if args.chart else None
    if chart_dir is not None and not (chart_dir / "crds").is_dir():
        print(f"crd_check: {chart_dir} has no crds/ directory (not a gpu-operator chart)", file=sys.stderr)
        return 2
    try:
        values = json.loads(args.values) if args.values else None
    except ValueError as exc:
        print(f"crd_check: --values is not JSON: {exc}", file=sys.stderr)
        return 2
    if chart_dir is None and values is None:
        print("crd_check: give --chart, --values or both", file=sys.stderr)
        return 2

    try:
        api = load_clients()
        report: dict[str, Any] = {"chart": None, "crds": [], "applied": [], "created": [], "blocked": []}
        code = 0
        absent: list[ChartCrd] = []
        if chart_dir is not None:
            report, code, absent = run(api, chart_dir, args.nfd, args.apply, args.release, args.namespace)
        if values is not None:
            compat_report, problems = _compat(api, chart_dir, values, args.namespace)
            report["compat"] = compat_report
            if problems:
                print(compat.describe(problems), file=sys.stderr)
                code = 1
        # Only once nothing stops the release: a stopped one leaves nothing made.
        if args.apply and code == 0 and absent:
            report["created"] = create_absent(api, absent)
    except GpuLabError as exc:
        print(f"crd_check: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(report, sort_keys=True))
    return code


def _compat(
    api: Any, chart_dir: Path | None, values: Mapping[str, Any], namespace: str
) -> tuple[dict[str, Any], list[compat.Problem]]:
    """:func:`gpulab.kube.compat.check` against the live cluster behind ``api``.

    Raises:
        CrdCheckError: the server did not answer a read (the version, discovery, a ConfigMap).
    """
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core = client.CoreV1Api(api)

    def config_map(name: str) -> Mapping[str, Any] | None:
        try:
            found: Mapping[str, Any] = api.sanitize_for_serialization(
                core.read_namespaced_config_map(name, namespace)
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise CrdCheckError(
                f"reading ConfigMap {namespace}/{name} failed: {exc.status} {exc.reason}"
            ) from exc
        return found

    def elsewhere(name: str) -> list[str]:
        items = core.list_config_map_for_all_namespaces(field_selector=f"metadata.name={name}").items
        return sorted(
            str(c.metadata.namespace) for c in items if c.metadata and c.metadata.namespace != namespace
        )

    try:
        version = str(client.VersionApi(api).get_code().git_version)
        return compat.check(
            chart_dir, values, namespace, version, compat.served_reader(api), config_map, elsewhere
        )
    except (ApiException, RuntimeError) as exc:
        if isinstance(exc, CrdCheckError):
            raise
        raise CrdCheckError(f"the compatibility check could not read the cluster: {exc}") from exc
    except chart_apis.ChartReadError as exc:
        raise CrdCheckError(f"the compatibility check cannot read the chart: {exc}") from exc


if __name__ == "__main__":
    sys.exit(main())
