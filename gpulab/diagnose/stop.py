"""When a wait stops: a run-once Pod's evidence says it will not get where the wait waits.

Every wait on one of the lab's Pods (smoke, compute, benchmark: :func:`gpulab.kube.client.wait_finished`)
reads, beside the phase it waits for, the Pod itself, its events (reason and message in
full) and its node, and runs them through :data:`POD_RULES`, a table of :class:`PodRule`:
each rule finds a :class:`Hit` (cause, evidence, fix) and says how the state ends
(:class:`Recovery`):

* ``final``: it does not change without an action (a registry that refused the image, a node
  under disk pressure, an evicted Pod); the wait stops at the first sight;
* ``grace``: it may still change by itself within a bound that upstream behaviour sets
  (:attr:`Recovery.seconds`; :attr:`Recovery.why` says which); the wait stops once it has held
  that long (:class:`StopClock`);
* anything no rule recognises is normal progress: the wait's own timeout applies.

Check before blaming: a rule names a cause only when the facts the Pod's own objects carry
agree with it (:func:`node_pressure` blames the disk only when the node's condition is
``True``; a taint without its condition is named as such: the node lifecycle controller
owns the taint, the kubelet the condition).

Upstream behaviour the bounds rest on (kubernetes v1.34-v1.36, the versions the lab targets):

* the kubelet retries a failed image pull after 10 s, doubling to 300 s
  (``pkg/kubelet/kubelet.go``: ``imageBackOffPeriod``, ``MaxImageBackOff``): a registry that
  is unreachable gets three more attempts within 10 + 20 + 40 = 70 s (:data:`PULL_RETRY_S`);
  a registry that *answered* with a refusal (401/403/404, ``manifest unknown``, ``pull access
  denied``) answers the same to every retry;
* the kubelet keeps a pressure condition ``True`` for ``evictionPressureTransitionPeriod``
  (default 5 m, ``pkg/kubelet/apis/config/v1beta1/defaults.go``) after its signal clears, and
  the node lifecycle controller keeps the matching ``NoSchedule`` taint while the condition
  holds (``node.kubernetes.io/disk-pressure``, ``memory-pressure``, ``pid-pressure``:
  ``staging/src/k8s.io/api/core/v1/well_known_taints.go``): a Pod that does not tolerate it
  stays Pending past any wait of the lab;
* a Pod the kubelet evicted (phase ``Failed``, reason ``Evicted``) is never restarted;
* a volume mount is retried on every Pod sync (``FailedMount``), so a ConfigMap created
  meanwhile recovers it (:data:`MOUNT_RETRY_S`); a sandbox likewise (:data:`SANDBOX_RETRY_S`).

Pure: no I/O. Inputs are ``kubectl get -o json`` items.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from gpulab.config import schema
from gpulab.core import fixes
from gpulab.diagnose.fields import _event_time, _get, _name, _ns, _one_line

Json = Mapping[str, Any]
RecoveryKind = Literal["final", "grace"]

#: A pull refused by an unreachable registry: three more kubelet attempts fit in 70 s.
PULL_RETRY_S: Final = 90.0
#: A failing sandbox or mount is retried on every Pod sync (at most ~10 s apart once the
#: kubelet backs off); a CNI or a ConfigMap that is about to appear does within this.
SANDBOX_RETRY_S: Final = 60.0
MOUNT_RETRY_S: Final = 30.0


@dataclass(frozen=True)
class Recovery:
    """How a state ends: :attr:`kind` (``final`` or ``grace``), :attr:`seconds` (``grace``
    only: how long it may hold before the wait stops) and :attr:`why` (one sentence: the
    upstream behaviour the decision rests on, quoted in the wait's error)."""

    kind: RecoveryKind
    why: str
    seconds: float = 0.0


def final(why: str) -> Recovery:
    """A state that does not recover by itself (``why``: why not)."""
    return Recovery("final", why)


def grace(seconds: float, why: str) -> Recovery:
    """A state that may recover within ``seconds`` (``why``: which upstream behaviour)."""
    return Recovery("grace", why, float(seconds))


@dataclass(frozen=True)
class Hit:
    """What a rule found: ``rule`` (its id), ``subject`` (``pod default/gpu-smoke``),
    ``cause`` (one sentence), ``evidence`` (the message quoted), ``fix`` (commands that
    recover, runnable as printed) and ``recovery``."""

    rule: str
    subject: str
    cause: str
    evidence: str
    fix: str
    recovery: Recovery


@dataclass(frozen=True)
class PodEvidence:
    """One read of a Pod's world: the Pod, its own events (this UID's), its node (None when
    unscheduled or unreadable), and the lab's facts a rule checks against (``profile``:
    the minikube profile the node shell commands name; ``image_key``: the config key that
    sets this Pod's image, e.g. ``smokeImage``)."""

    pod: Json
    events: Sequence[Json] = ()
    node: Json | None = None
    profile: str = "gpu-lab"
    image_key: str = "smokeImage"

    @property
    def subject(self) -> str:
        return f"pod {_ns(self.pod)}/{_name(self.pod)}"

    def messages(self, *reasons: str) -> list[str]:
        """The messages of this Pod's events with one of ``reasons``, oldest first."""
        return [
            str(e.get("message") or "")
            for e in sorted(self.events, key=_event_time)
            if e.get("reason") in reasons
        ]

    def container_states(self) -> list[Json]:
        status = self.pod.get("status") or {}
        return list(status.get("initContainerStatuses") or []) + list(status.get("containerStatuses") or [])


# ---------------------------------------------------------------------------------------
# Image pulls


@dataclass(frozen=True)
class PullError:
    """One class of image-pull error: ``id``, ``pattern`` (searched in the runtime's error
    text: containerd's, Docker's through cri-dockerd, CRI-O's), ``cause`` (one sentence),
    ``final`` (the registry answered: retrying cannot help), ``sources`` (upstream reports,
    ``owner/repo#number``: the unit test quotes one)."""

    id: str
    pattern: re.Pattern[str]
    cause: str
    final: bool
    sources: tuple[str, ...]


def _re(p: str) -> re.Pattern[str]:
    return re.compile(p, re.IGNORECASE)


#: In match order: the first class whose pattern is in the error wins.
PULL_ERRORS: Final[tuple[PullError, ...]] = (
    PullError(
        "pull-rate-limited",
        _re(r"429 Too Many Requests|toomanyrequests|pull rate limit"),
        "the registry refuses more pulls from this address for now (a rate limit; Docker Hub "
        "counts pulls over a 6-hour window, longer than any wait of the lab)",
        True,
        ("docker/docs#21908",),
    ),
    PullError(
        "pull-no-space",
        _re(r"no space left on device"),
        "the node's disk is full: the image's layers cannot be written",
        True,
        ("Shippable/support#1298",),
    ),
    PullError(
        "pull-tls",
        _re(r"x509: certificate|tls: failed to verify certificate|certificate signed by unknown authority"),
        "the node does not trust the registry's TLS certificate",
        True,
        ("NVIDIA/gpu-operator#1519",),
    ),
    PullError(
        "pull-refused",
        _re(
            r"\b40[13]\b|Unauthorized|Forbidden|pull access denied|repository does not exist|"
            r"requested access to the resource is denied|insufficient_scope|authentication required|"
            r"manifest unknown|\bnot found\b|name unknown|denied:"
        ),
        "the registry answered and refused the image: no such name or tag there, or it needs "
        "credentials the node does not send",
        True,
        ("NVIDIA/gpu-operator#1020", "NVIDIA/gpu-operator#273", "NVIDIA/gpu-operator#388"),
    ),
    PullError(
        "pull-unreachable",
        _re(
            r"dial tcp|i/o timeout|no such host|connection refused|connection reset|TLS handshake timeout|"
            r"Client\.Timeout exceeded|context deadline exceeded|\b50[0234]\b|Service Unavailable|"
            r"Bad Gateway|proxyconnect|network is unreachable"
        ),
        "the node could not reach the registry (network, DNS or proxy), or the registry failed "
        "(5xx); the kubelet retries",
        False,
        ("NVIDIA/dcgm-exporter#31",),
    ),
)

_FAILED_PULL_RE: Final = re.compile(r'Failed to pull image "(?P<image>[^"]+)": (?P<error>.+)', re.S)
_PULL_WAITING: Final = frozenset({"ErrImagePull", "ImagePullBackOff"})
_BAD_NAME: Final = frozenset({"InvalidImageName", "ErrImageNeverPull"})


def classify_pull(text: str) -> PullError | None:
    """The first :data:`PULL_ERRORS` class whose pattern is in ``text``, or None."""
    for e in PULL_ERRORS:
        if e.pattern.search(text):
            return e
    return None


def registry_of(image: str) -> str:
    """The registry host of an image reference (``nvcr.io``; ``docker.io`` when the first
    path part is not a host, as the container runtimes resolve it)."""
    first, _, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


#: The lab's pinned image per config key (Pulumi.yaml's defaults, as gpulab.config.lab.LabConfig
#: takes them): a refused image that is not it can go back to it.
IMAGE_DEFAULTS: Final[Mapping[str, str]] = {
    key: str(schema.default(key)) for key in ("smokeImage", "computeImage", "benchmarkImage")
}


def _pull_fix(ev: PodEvidence, error: PullError, image: str) -> str:
    # A Pod whose image no config key pins (the operator's own): the operand keys' form.
    key, ns, name = ev.image_key or "<operand>Image", _ns(ev.pod), _name(ev.pod)
    registry = registry_of(image)
    if error.id == "pull-rate-limited":
        return (
            f"log the node in to {registry} (docker login {registry} on the host, then "
            f"minikube -p {ev.profile} image load {image}), or pull it from a mirror: "
            f"{fixes.config_set((key, '<mirror>/' + image.split('/', 1)[-1]))}"
        )
    if error.id == "pull-no-space":
        return f"{_prune(ev.profile)}; then {fixes.KUBECTL} -n {ns} delete pod {name} && make lab"
    if error.id == "pull-tls":
        return (
            f"add {registry}'s CA to the node's runtime (minikube: copy it to "
            f"~/.minikube/certs and minikube start --embed-certs), or use an image from a "
            f"registry the node trusts: {fixes.config_set((key, '<image>'))}"
        )
    if error.id == "pull-unreachable":
        return (
            f"make {registry} reachable from the node (try: minikube -p {ev.profile} ssh -- curl -sI "
            f"https://{registry}/v2/; behind a proxy, minikube start with HTTPS_PROXY set), then "
            f"{fixes.KUBECTL} -n {ns} delete pod {name} && make lab; or load the image into the node "
            f"(minikube -p {ev.profile} image load {image})"
        )
    pinned = IMAGE_DEFAULTS.get(key)
    back = (
        f"go back to the lab's pinned image ({pinned}): scripts/pulumi config rm gpu-lab:{key} "
        "&& make lab; or "
        if pinned and pinned != image
        else ""
    )
    return (
        f"{back}set an image the registry serves: {fixes.config_set((key, '<image:tag>'))} "
        f"(check it first: docker manifest inspect {image}); a private registry needs its "
        f"credentials on the node (docker login {registry})"
    )


def _rule_pull(ev: PodEvidence) -> Hit | None:
    for cs in ev.container_states():
        waiting = _get(cs, "state", "waiting") or {}
        reason = waiting.get("reason")
        image = str(cs.get("image") or "?")
        if reason in _BAD_NAME:
            return Hit(
                "image-name-invalid",
                f"{ev.subject}/container {cs.get('name')}",
                f"image {image} cannot be used as named ({reason})",
                _one_line(str(waiting.get("message") or reason)),
                f"set a valid, pinned image: {fixes.config_set((ev.image_key, '<registry>/<name>:<tag>'))}",
                final(f"the kubelet reports {reason} for the name itself; no retry changes it"),
            )
        if reason not in _PULL_WAITING:
            continue
        # The refusal is in the waiting message while ErrImagePull, and in the Failed
        # events throughout (during ImagePullBackOff the message is only "Back-off pulling
        # image"): read both, newest event last.
        texts = [str(waiting.get("message") or "")]
        for m in ev.messages("Failed"):
            parsed = _FAILED_PULL_RE.search(m)
            if parsed and parsed.group("image") == image:
                texts.append(parsed.group("error"))
        for text in reversed(texts):
            error = classify_pull(text)
            if error is None:
                continue
            recovery = (
                final(f"the registry answered ({error.id}): every kubelet retry gets the same answer")
                if error.final
                else grace(
                    PULL_RETRY_S,
                    "the kubelet retries an unreachable registry after 10 s, 20 s, 40 s "
                    "(pkg/kubelet/kubelet.go imageBackOffPeriod)",
                )
            )
            return Hit(
                error.id,
                f"{ev.subject}/container {cs.get('name')}",
                f"image {image} cannot be pulled: {error.cause}",
                _one_line(text),
                _pull_fix(ev, error, image),
                recovery,
            )
    return None


# ---------------------------------------------------------------------------------------
# Node pressure, evictions


#: Pressure condition -> (taint key, what to free, fix builder).
PRESSURE: Final[Mapping[str, str]] = {
    "DiskPressure": "node.kubernetes.io/disk-pressure",
    "MemoryPressure": "node.kubernetes.io/memory-pressure",
    "PIDPressure": "node.kubernetes.io/pid-pressure",
}
_TAINT_RE: Final = re.compile(r"\{(node\.kubernetes\.io/(?:disk|memory|pid)-pressure):")


def _prune(profile: str) -> str:
    return (
        f"free the node's disk: minikube -p {profile} ssh -- docker system prune -af "
        "(kind/k3s: crictl rmi --prune on the node; the host: docker system prune -af)"
    )


def _pressure_fix(condition: str, profile: str, node: str) -> str:
    if condition == "DiskPressure":
        wait = f"{fixes.KUBECTL} wait --for=condition=DiskPressure=False node/{node} --timeout=6m"
        return f"{_prune(profile)}; then {wait} && make lab"
    if condition == "MemoryPressure":
        return (
            f"stop what uses the node's memory ({fixes.KUBECTL} top pods -A), or give the node more: "
            f"scripts/pulumi config set gpu-lab:memoryMiB <MiB> && make destroy && make lab"
        )
    pods = f"{fixes.KUBECTL} get pods -A -o wide --field-selector spec.nodeName={node}"
    return f"stop what forks on the node ({pods})"


def node_pressure(node: Json | None) -> list[tuple[str, Json]]:
    """The pressure conditions (``DiskPressure``, ...) that are ``True`` on ``node``, with the
    condition itself."""
    out = []
    for c in _get(node, "status", "conditions") or []:
        if c.get("type") in PRESSURE and c.get("status") == "True":
            out.append((str(c["type"]), c))
    return out


def tolerates(pod: Json, taint_key: str) -> bool:
    """Whether ``pod`` tolerates a ``NoSchedule`` taint ``taint_key`` (an ``Exists``
    toleration of the key, or of every key)."""
    for t in _get(pod, "spec", "tolerations") or []:
        if t.get("effect") not in (None, "", "NoSchedule"):
            continue
        if t.get("key") in (None, "") and t.get("operator") == "Exists":
            return True
        if t.get("key") == taint_key:
            return True
    return False


def _rule_pressure(ev: PodEvidence) -> Hit | None:
    """A Pod Pending behind a pressure taint (FailedScheduling names it), or scheduled on a
    node under pressure it does not tolerate. Checked against the node: the cause is the
    condition only when the node reports it ``True``."""
    status = ev.pod.get("status") or {}
    if status.get("phase") not in (None, "Pending"):
        return None
    tainted = [m for m in ev.messages("FailedScheduling") if _TAINT_RE.search(m)]
    pressure = [(c, d) for c, d in node_pressure(ev.node) if not tolerates(ev.pod, PRESSURE[c])]
    if not tainted and not pressure:
        return None
    node = _name(ev.node) if ev.node else "?"
    if pressure:
        cond, c = pressure[0]
        return Hit(
            "node-pressure",
            f"node {node}",
            f"node {node} reports {cond} ({c.get('reason')}: {c.get('message')}), so the scheduler "
            f"keeps the lab's Pods off it (taint {PRESSURE[cond]}:NoSchedule)",
            _one_line(tainted[-1]) if tainted else f"condition {cond}=True",
            _pressure_fix(cond, ev.profile, node),
            final(
                "the kubelet keeps the condition for evictionPressureTransitionPeriod (5 m) after "
                "the signal clears, and the taint with it"
            ),
        )
    key = _TAINT_RE.search(tainted[-1])
    taint = key.group(1) if key else "?"
    cond = next((k for k, v in PRESSURE.items() if v == taint), "?")
    return Hit(
        "node-pressure",
        ev.subject,
        f"the scheduler names taint {taint}, but no node read here reports {cond}=True: the taint "
        "may be left from a pressure that has passed, or set by hand",
        _one_line(tainted[-1]),
        f"look at the nodes' conditions and taints: {fixes.KUBECTL} describe nodes "
        "| grep -iE 'pressure|taint'; "
        f"a hand-set taint: {fixes.KUBECTL} taint nodes --all {taint}:NoSchedule-",
        grace(SANDBOX_RETRY_S, "the node lifecycle controller removes the taint once the condition is False"),
    )


_CORDONED_RE: Final = re.compile(
    r"node\(s\) were unschedulable|untolerated taint \{node\.kubernetes\.io/unschedulable"
)


def _rule_cordoned(ev: PodEvidence) -> Hit | None:
    """A Pod Pending because its node is cordoned (``spec.unschedulable``): the scheduler's
    "node(s) were unschedulable" (kube-scheduler's NodeUnschedulable plugin,
    ``ErrReasonUnschedulable``) or the cordon's taint ``node.kubernetes.io/unschedulable``;
    checked against the node when it is read."""
    status = ev.pod.get("status") or {}
    if status.get("phase") not in (None, "Pending"):
        return None
    said = [m for m in ev.messages("FailedScheduling") if _CORDONED_RE.search(m)]
    if not said:
        return None
    node = _name(ev.node) if ev.node else "<node>"
    if ev.node is not None and not _get(ev.node, "spec", "unschedulable"):
        return None  # the node read here is not cordoned: another node's, or already undone
    return Hit(
        "node-cordoned",
        ev.subject,
        f"the scheduler finds no schedulable node: {node} is cordoned (kubectl cordon/drain)",
        _one_line(said[-1]),
        f"{fixes.KUBECTL} uncordon {node} && make lab",
        final("a cordoned node stays unschedulable until someone uncordons it"),
    )


def _rule_evicted(ev: PodEvidence) -> Hit | None:
    status = ev.pod.get("status") or {}
    if status.get("phase") != "Failed" or status.get("reason") != "Evicted":
        return None
    message = str(status.get("message") or "")
    cond = "DiskPressure" if "ephemeral-storage" in message or "DiskPressure" in message else ""
    cond = cond or ("MemoryPressure" if "memory" in message else "")
    node = str(_get(ev.pod, "spec", "nodeName") or "?")
    fix = _pressure_fix(cond, ev.profile, node) if cond else f"{fixes.KUBECTL} describe node {node}"
    return Hit(
        "pod-evicted",
        ev.subject,
        f"the kubelet evicted the Pod: {_one_line(message, 200)}",
        _one_line(message),
        f"{fix}; then re-create it: {fixes.KUBECTL} -n {_ns(ev.pod)} delete pod {_name(ev.pod)} && make lab",
        final("an evicted Pod is never restarted"),
    )


# ---------------------------------------------------------------------------------------
# Mounts and sandboxes

_MOUNT_CM_RE: Final = re.compile(r'(configmap|secret) "(?P<name>[^"]+)" not found', re.I)


def _rule_mount(ev: PodEvidence) -> Hit | None:
    for m in reversed(ev.messages("FailedMount")):
        found = _MOUNT_CM_RE.search(m)
        if not found:
            continue
        kind, name, ns = found.group(1).lower(), found.group("name"), _ns(ev.pod)
        return Hit(
            "mount-object-missing",
            ev.subject,
            f"the Pod mounts {kind} {ns}/{name}, which does not exist",
            _one_line(m),
            f"create {kind} {name} in namespace {ns} ({fixes.KUBECTL} -n {ns} create {kind} {name} ...), "
            f"or stop naming it; the kubelet mounts it on its next sync",
            grace(MOUNT_RETRY_S, "the kubelet retries the mount on every Pod sync"),
        )
    return None


def _rule_sandbox(ev: PodEvidence) -> Hit | None:
    failed = ev.messages("FailedCreatePodSandBox")
    if not failed:
        return None
    m = failed[-1]
    runtime = re.search(r'no runtime for "(?P<h>[^"]+)" is configured', m)
    fix = (
        f"configure the {runtime.group('h')} runtime handler on the node (the operator's toolkit "
        f"does: {fixes.KUBECTL} -n gpu-operator get pods -l app=nvidia-container-toolkit-daemonset)"
        if runtime
        else f"look at the node's CNI and runtime: {fixes.KUBECTL} -n kube-system get pods -o wide"
    )
    return Hit(
        "sandbox-failed",
        ev.subject,
        "the runtime cannot make the Pod's sandbox",
        _one_line(m),
        f"{fix}; then re-create the Pod: {fixes.KUBECTL} -n {_ns(ev.pod)} delete pod {_name(ev.pod)} "
        "&& make lab",
        grace(
            SANDBOX_RETRY_S,
            "the kubelet retries the sandbox on every Pod sync (a CNI that starts is up within it)",
        ),
    )


@dataclass(frozen=True)
class PodRule:
    """One row of :data:`POD_RULES`: ``id``, ``find`` (evidence -> :class:`Hit` or None) and
    ``sources`` (the upstream reports its unit test quotes)."""

    id: str
    find: Callable[[PodEvidence], Hit | None]
    sources: tuple[str, ...]


#: The rules, in the order their causes come along the Pod's life (placement, mounts,
#: sandbox, pull, end).
POD_RULES: Final[tuple[PodRule, ...]] = (
    PodRule(
        "node-pressure", _rule_pressure, ("rootless-containers/usernetes#155", "kubernetes/kubernetes#93711")
    ),
    PodRule("mount-object-missing", _rule_mount, ("grafana/helm-charts#2216",)),
    PodRule("sandbox-failed", _rule_sandbox, ("NVIDIA/gpu-operator#730",)),
    PodRule("image-pull", _rule_pull, tuple(s for e in PULL_ERRORS for s in e.sources)),
    PodRule("node-cordoned", _rule_cordoned, ("rancher/rancher#24975",)),
    PodRule("pod-evicted", _rule_evicted, ("kubernetes/kubernetes#91600", "operate-first/apps#1352")),
)


def pod_hits(ev: PodEvidence) -> list[Hit]:
    """Every :data:`POD_RULES` hit on ``ev``, in table order."""
    return [h for rule in POD_RULES if (h := rule.find(ev)) is not None]


@dataclass
class StopClock:
    """Decides, read by read, whether a wait stops: a ``final`` hit at once, a ``grace`` hit
    once the same rule on the same subject has held for its seconds (``now``: the wait's
    monotonic clock, in seconds)."""

    since: dict[tuple[str, str], float] = field(default_factory=dict)

    def decide(self, hits: Sequence[Hit], now: float) -> Hit | None:
        active = {(h.rule, h.subject) for h in hits}
        for key in list(self.since):
            if key not in active:
                del self.since[key]
        for h in hits:
            start = self.since.setdefault((h.rule, h.subject), now)
            if h.recovery.kind == "final" or now - start >= h.recovery.seconds:
                return h
        return None


def stop_message(what: str, hit: Hit, after: float) -> str:
    """The error text of a stopped wait: what, after how long, the cause, the evidence, the
    fix and why waiting would not help."""
    return (
        f"{what} stopped after {after:.0f}s: {hit.cause} ({hit.subject})\n"
        f"  evidence: {hit.evidence}\n  fix: {hit.fix}\n"
        f"  waiting longer would not help: {hit.recovery.why} [{hit.rule}]"
    )
