"""Which cluster: the identity a stack records for its cluster, and the check that a run still
reaches that cluster before it changes anything.

A kubeconfig can keep working while it reaches another cluster: a port freed by a lab whose
control plane died and taken by another lab's, a minikube profile deleted and made again
under the same name, a context in an ``existing`` lab's kubeconfig pointed elsewhere. So the
lab records, when its cluster is made (or first pointed at), an :class:`Identity`:

* ``server``: the API server URL of the kubeconfig's current context;
* ``caSha256``: the SHA-256 fingerprint of the cluster CA certificate it trusts (DER, hex),
  None where the kubeconfig names none (a file path it cannot read, or TLS verification off);
* ``kubeSystemUid``: ``metadata.uid`` of the ``kube-system`` Namespace, which the API server
  creates once per cluster (its etcd data) and never changes: the cluster's own identity.

Two identities are the same cluster when their ``kubeSystemUid`` values are equal; where one
of them has none (not readable), when server and CA fingerprint are equal. Every check the
lab runs (the gate, the smoke and compute checks, ``make lab``/``verify``/``destroy``'s
liveness check) reads the live identity first and stops, naming both, when it differs
(:class:`IdentityMismatchError`).

The same cluster at another API server endpoint (a minikube restart publishes its port 8443
on a new host port; a kubeconfig rewritten to another address of the same API server) is a
change too, named with both values and the fix (:class:`EndpointChangedError`), never
accepted in silence: the stack's Kubernetes provider was built from the recorded
kubeconfig, and pulumi-kubernetes plans a replacement of the provider whenever the active
cluster of its kubeconfig changes (v4.25.0 ``provider/pkg/provider/provider.go``,
``DiffConfig``), which replaces every Kubernetes object of the lab (pulumi v3.274.1
``pkg/resource/deploy/step_generator.go``, ``providerChanged``: ``ReplaceKeys: provider``).

CLI (``python -m gpulab.kube.identity``; the kubeconfig text in ``$GPULAB_KUBECONFIG``):

* ``record``: prints the live identity as JSON. Run by the stack's ``cluster-identity``
  command (components/identity.py). When pulumi-command re-runs it as an in-place update (the
  kubeconfig changed), the previous stdout arrives in ``$PULUMI_COMMAND_STDOUT``
  (pulumi-command's update contract, ``addPreviousOutputInEnv``); a different cluster then
  fails the update, naming both, before the Kubernetes provider or any object changes.
  ``record --then MODULE ARGS...`` then runs the GPU stack's pre-release check (one of
  :data:`PRE_RELEASE`: ``gpulab.kube.crd_check``) in the same process, against the cluster
  just verified, its report on stderr; the identity is printed only when it passes, and its
  exit code is the command's. One process, not two, is the first contact with the cluster.
* ``check --recorded JSON``: exit 0 when the cluster answers and is the recorded one, 1 (with
  the message) otherwise.

Exit codes: 0 the same cluster (or recorded now), 1 another cluster or no answer, 2 usage.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from contextlib import redirect_stdout
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import yaml

from gpulab.core import yamlio
from gpulab.core.errors import GpuLabError
from gpulab.kube import client as kube
from gpulab.kube.client import KUBECONFIG_ENV, GateError

#: The environment variable that carries the identity recorded at create to every check.
IDENTITY_ENV: Final = "GPULAB_CLUSTER_IDENTITY"
#: pulumi-command's update contract: the previous stdout of the resource being updated.
PREVIOUS_STDOUT_ENV: Final = "PULUMI_COMMAND_STDOUT"
#: The checks ``record --then`` may run once the identity is verified: modules whose CLI is
#: ``main(argv) -> exit code`` (imported only when named).
PRE_RELEASE: Final = frozenset({"gpulab.kube.crd_check"})


class IdentityError(GpuLabError, RuntimeError):
    """The identity could not be read (the cluster did not answer, the kubeconfig is unusable)."""


class IdentityMismatchError(IdentityError):
    """The kubeconfig reaches another cluster than the one the stack recorded; names both."""

    def __init__(self, recorded: Identity, live: Identity, fix: str) -> None:
        self.recorded, self.live = recorded, live
        super().__init__(
            "this kubeconfig reaches another cluster than the one this stack recorded when it "
            f"was created; nothing was changed.\n  recorded: {recorded.describe()}\n  now:      "
            f"{live.describe()}\n  fix: {fix}"
        )


class EndpointChangedError(IdentityError):
    """The recorded cluster (the same ``kube-system`` UID) answers at another API server
    endpoint than the one recorded; names both values and the fix."""

    def __init__(self, recorded: Identity, live: Identity, fix: str) -> None:
        self.recorded, self.live = recorded, live
        same = f"kube-system uid {live.kube_system_uid}" if live.kube_system_uid else "the same server and CA"
        super().__init__(
            f"the API server endpoint of this stack's cluster changed since it was recorded (the same "
            f"cluster: {same}); nothing was changed.\n  recorded: {recorded.server}\n  live:     "
            f"{live.server}\n  fix: {fix}"
        )


@dataclass(frozen=True)
class Identity:
    """A cluster's identity (see module docstring). ``created_at``: when it was recorded (UTC
    ISO 8601), informational; ``stack``: the stack that recorded it (named in the fix)."""

    server: str
    ca_sha256: str | None
    kube_system_uid: str | None
    created_at: str | None = None
    stack: str | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"server", "caSha256", "kubeSystemUid"[, "createdAt"]}`` (the stack output's shape)."""
        doc: dict[str, Any] = {
            "server": self.server,
            "caSha256": self.ca_sha256,
            "kubeSystemUid": self.kube_system_uid,
        }
        if self.created_at:
            doc["createdAt"] = self.created_at
        if self.stack:
            doc["stack"] = self.stack
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Identity:
        """The inverse of :meth:`to_json`.

        Raises:
            IdentityError: ``doc`` has no ``server``.
        """
        if not isinstance(doc, Mapping) or not doc.get("server"):
            raise IdentityError(f"not a cluster identity (no server): {str(doc)[:200]}")
        return cls(
            str(doc["server"]),
            doc.get("caSha256") or None,
            doc.get("kubeSystemUid") or None,
            doc.get("createdAt") or None,
            doc.get("stack") or None,
        )

    def describe(self) -> str:
        """One line naming the cluster: ``https://127.0.0.1:32766 (CA sha256:ab12cd34…,
        kube-system uid 5f0e…)``."""
        ca = f"CA sha256:{self.ca_sha256[:16]}" if self.ca_sha256 else "no CA pinned"
        uid = f"kube-system uid {self.kube_system_uid}" if self.kube_system_uid else "kube-system not read"
        return f"{self.server} ({ca}, {uid})"

    def same_cluster(self, other: Identity) -> bool:
        """True when ``other`` is this cluster (see module docstring for the rule)."""
        if self.kube_system_uid and other.kube_system_uid:
            return self.kube_system_uid == other.kube_system_uid
        return self.server == other.server and self.ca_sha256 == other.ca_sha256

    def moved(self, other: Identity) -> bool:
        """True when ``other`` is this cluster at another API server endpoint."""
        return self.same_cluster(other) and self.server != other.server


def _current_cluster(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    contexts = {c.get("name"): c.get("context") or {} for c in doc.get("contexts") or []}
    clusters = {c.get("name"): c.get("cluster") or {} for c in doc.get("clusters") or []}
    current = doc.get("current-context")
    if current in contexts:
        name = contexts[current].get("cluster")
        if name in clusters:
            return clusters[name]
    if len(clusters) == 1:
        return next(iter(clusters.values()))
    raise IdentityError("the kubeconfig has no current context naming one of its clusters")


def ca_fingerprint(pem_or_der: bytes) -> str:
    """SHA-256 (hex) of the first certificate's DER bytes; PEM or DER input."""
    text = pem_or_der.decode("ascii", errors="ignore")
    if "-----BEGIN CERTIFICATE-----" in text:
        body = text.split("-----BEGIN CERTIFICATE-----", 1)[1].split("-----END CERTIFICATE-----", 1)[0]
        try:
            der = base64.b64decode("".join(body.split()), validate=True)
        except binascii.Error as exc:
            raise IdentityError(f"the cluster CA certificate is not valid PEM: {exc}") from exc
    else:
        der = pem_or_der
    return hashlib.sha256(der).hexdigest()


def from_kubeconfig(text: str) -> tuple[str, str | None]:
    """``(server, CA fingerprint or None)`` of the kubeconfig's current cluster.

    Raises:
        IdentityError: not a kubeconfig, or no current cluster.
    """
    try:
        doc = yamlio.load(text)
    except yaml.YAMLError as exc:
        raise IdentityError(f"the kubeconfig is not YAML: {exc}") from exc
    if not isinstance(doc, Mapping):
        raise IdentityError("the kubeconfig is not a YAML mapping")
    cluster = _current_cluster(doc)
    server = str(cluster.get("server") or "")
    if not server:
        raise IdentityError("the kubeconfig's current cluster has no server")
    data = cluster.get("certificate-authority-data")
    if data:
        try:
            return server, ca_fingerprint(base64.b64decode(data))
        except (binascii.Error, ValueError) as exc:
            raise IdentityError(f"certificate-authority-data is not base64: {exc}") from exc
    path = cluster.get("certificate-authority")
    if path:
        try:
            return server, ca_fingerprint(Path(os.path.expanduser(str(path))).read_bytes())
        except OSError:
            return server, None
    return server, None


def read(kubeconfig: str, api: Any = None, timeout: float = 10) -> Identity:
    """The live identity of the cluster ``kubeconfig`` reaches: server and CA from the text,
    ``kube-system``'s UID from the API server (one GET, ``timeout`` seconds).

    Raises:
        IdentityError: the kubeconfig is unusable, or the API server did not answer in time
            (the message says which, and what the API server's readiness check says).
    """
    server, ca = from_kubeconfig(kubeconfig)
    if api is None:
        try:
            api = kube.load_clients(kubeconfig)
        except GpuLabError as exc:
            raise IdentityError(str(exc)) from exc
    uid = kube.kube_system_uid(api, timeout=timeout)
    return Identity(server, ca, uid)


def verify(recorded: Identity, live: Identity, fix: str, endpoint_fix: str | None = None) -> None:
    """Raise :class:`IdentityMismatchError` (naming both, with ``fix``) unless ``live`` is
    ``recorded``'s cluster; and :class:`EndpointChangedError` (both servers, ``endpoint_fix``)
    when it is, at another endpoint, unless ``endpoint_fix`` is None (the caller compares the
    endpoint itself)."""
    if not recorded.same_cluster(live):
        raise IdentityMismatchError(recorded, live, fix)
    if endpoint_fix is not None and recorded.moved(live):
        raise EndpointChangedError(recorded, live, endpoint_fix)


#: The kubeconfig extension (top-level ``extensions``, client-go's ``Config.Extensions``) that
#: carries the recorded identity to the lab's checks; kubectl and the clients ignore it.
EXTENSION: Final = "gpulab.dev/cluster-identity"


def embed(kubeconfig: str, recorded: Mapping[str, Any] | None) -> str:
    """``kubeconfig`` with the recorded identity as its :data:`EXTENSION` (what the lab's
    checks are given; the Kubernetes provider gets the plain one). ``recorded`` None or
    empty: ``kubeconfig`` unchanged."""
    if not recorded:
        return kubeconfig
    doc = yamlio.load(kubeconfig)
    if not isinstance(doc, dict):
        return kubeconfig
    others = [e for e in doc.get("extensions") or [] if (e or {}).get("name") != EXTENSION]
    doc["extensions"] = [*others, {"name": EXTENSION, "extension": dict(recorded)}]
    return str(yaml.safe_dump(doc, sort_keys=False))


def embedded(kubeconfig: str) -> Identity | None:
    """The identity :func:`embed` put in ``kubeconfig``, or None."""
    try:
        doc = yamlio.load(kubeconfig)
    except yaml.YAMLError:
        return None
    for ext in (doc.get("extensions") if isinstance(doc, dict) else None) or []:
        if isinstance(ext, dict) and ext.get("name") == EXTENSION:
            return Identity.from_json(ext.get("extension") or {})
    return None


def recorded_from_env(env: Mapping[str, str] | None = None, kubeconfig: str = "") -> Identity | None:
    """The identity to check against: ``$GPULAB_CLUSTER_IDENTITY`` (JSON), else the one
    embedded in ``kubeconfig`` (:func:`embed`); None when neither is there.

    Raises:
        IdentityError: the variable is set but is not an identity.
    """
    env = os.environ if env is None else env
    text = (env.get(IDENTITY_ENV) or "").strip()
    if not text or text == "null":
        return embedded(kubeconfig) if kubeconfig else None
    try:
        return Identity.from_json(json.loads(text))
    except ValueError as exc:
        raise IdentityError(f"${IDENTITY_ENV} is not JSON: {exc}") from exc


def check_identity(api: Any, kubeconfig: str, env: dict[str, str] | None = None) -> None:
    """Stop unless the cluster is the one the stack recorded (``$GPULAB_CLUSTER_IDENTITY``, else
    the identity embedded in ``kubeconfig``: :func:`embed`; nothing to compare when neither is
    there).

    Raises:
        GateError: another cluster (both named), or no answer (the component named).
    """
    try:
        recorded = recorded_from_env(env, kubeconfig)
        if recorded is None:
            return
        verify(
            recorded,
            read(kubeconfig, api),
            mismatch_fix(recorded.stack),
            moved_fix(recorded.stack, recorded.server),
        )
    except IdentityError as exc:
        raise GateError(str(exc)) from exc


def mismatch_fix(stack: str | None) -> str:
    """The fix a mismatch prints, as it runs from the checkout: the stack's objects are in the
    recorded cluster, and another must not be touched."""
    env = f"GPULAB_STACK={stack or '<stack>'}"
    return (
        "this stack's objects live in the recorded cluster: point the lab back at it (the "
        "kubeconfig or context it was built with) and run again, or remove what the stack holds "
        f"there with `{env} make destroy` (it uses the recorded cluster's kubeconfig and deletes "
        f"nothing in the other one; when the recorded cluster is gone for good, `{env} make "
        f"destroy FORGET=1`), then `{env} make lab`"
    )


def moved_fix(stack: str | None, recorded_server: str) -> str:
    """The fix an endpoint change prints where the variant is not known (the record and the
    checks; ``make lab``'s liveness check prints the variant's own, ``VariantSpec.moved_fix``):
    the recorded address again, or the lab's objects made anew at the new one."""
    env = f"GPULAB_STACK={stack or '<stack>'}"
    return (
        f"make the cluster answer at {recorded_server} again (the kubeconfig or context the stack was "
        "built with), or make the lab anew at the new address with "
        f"`{env} make destroy && {env} make lab`: the stack's Kubernetes provider was built with the "
        "recorded address, and Pulumi would replace every object of the lab to use another one"
    )


def _previous(env: Mapping[str, str]) -> Identity | None:
    text = (env.get(PREVIOUS_STDOUT_ENV) or "").strip()
    if not text:
        return None
    try:
        return Identity.from_json(json.loads(text.splitlines()[-1]))
    except (ValueError, IdentityError):
        return None  # not ours (an older command's output): record afresh


def main(argv: Sequence[str] | None = None) -> int:
    """CLI (see module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m gpulab.kube.identity")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="print the cluster's identity (compared with the previous one)")
    r.add_argument("--stack", default=None, help="the stack recording it (named in a mismatch's fix)")
    r.add_argument(
        "--then",
        nargs=argparse.REMAINDER,
        default=[],
        metavar="MODULE ARGS",
        help=f"once verified, run this pre-release check in this process ({', '.join(sorted(PRE_RELEASE))})",
    )
    c = sub.add_parser("check", help="exit 0 when the cluster is the recorded one")
    c.add_argument("--recorded", required=True, help="the recorded identity, JSON")
    c.add_argument("--timeout", type=float, default=10)
    args = ap.parse_args(argv)
    then = list(getattr(args, "then", None) or [])
    if then and then[0] not in PRE_RELEASE:
        ap.error(f"--then {then[0]}: not a pre-release check (one of {', '.join(sorted(PRE_RELEASE))})")
    kubeconfig = os.environ.get(KUBECONFIG_ENV, "")
    try:
        if not kubeconfig:
            raise IdentityError(f"${KUBECONFIG_ENV} is empty: no kubeconfig to read the cluster's identity")
        if args.cmd == "check":
            recorded = Identity.from_json(json.loads(args.recorded))
            verify(
                recorded,
                read(kubeconfig, timeout=args.timeout),
                mismatch_fix(recorded.stack),
                moved_fix(recorded.stack, recorded.server),
            )
            print(json.dumps({"sameCluster": True, **recorded.to_json()}, sort_keys=True))
            return 0
        live = read(kubeconfig)
        previous = _previous(os.environ)
        created = datetime.now(UTC).isoformat(timespec="seconds")
        if previous is not None:
            stack = args.stack or previous.stack
            verify(previous, live, mismatch_fix(stack), moved_fix(stack, previous.server))
            created = previous.created_at or created
        live = Identity(live.server, live.ca_sha256, live.kube_system_uid, created, args.stack)
        print(f"[gpulab] cluster identity: {live.describe()}", file=sys.stderr)
    except (GpuLabError, ValueError) as exc:
        print(f"gpu-lab: {exc}", file=sys.stderr)
        return 1
    code = _run_then(then) if then else 0
    if code == 0:
        print(json.dumps(live.to_json(), sort_keys=True))
    return code


def _run_then(then: Sequence[str]) -> int:
    """Run pre-release check ``then`` (``[module, *args]``, module in :data:`PRE_RELEASE`) in
    this process: its ``main(args)``, whose stdout goes to stderr (this command's stdout is the
    identity). Returns its exit code."""
    import importlib

    check = importlib.import_module(then[0])
    with redirect_stdout(sys.stderr):
        code: int = check.main(list(then[1:]))
    return code


if __name__ == "__main__":
    from gpulab.core.shutdown import skip_final_collection

    skip_final_collection()
    sys.exit(main())
