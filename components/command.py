"""The lab's local commands: ``pulumi_command.local.Command`` with the lab's conventions.

* **No shell.** Each command is an argv list, JSON-encoded into the one command string and
  run by :data:`gpulab.core.argv.INTERPRETER`, so no configured value is ever parsed by a shell.
* **Re-runs.** Only a change under ``triggers`` replaces a Command (pulumi-command's rule);
  any other input change is an in-place update that re-runs ``create``. Values whose change
  must rebuild a thing (a cluster's size, version, name) go into ``triggers``; where the
  replacement re-creates the same named thing (a minikube profile, a kind or sim cluster),
  ``delete_before_replace`` makes the old one go first.
* **Secrets.** Credentials travel in ``environment`` only (a secret input keeps the
  environment secret in the state); ``secret_stdout`` marks stdout secret
  (``additional_secret_outputs``), for commands that print a kubeconfig. Secret inputs alone
  would not make stdout secret (pulumi-command#134).
* **Progress.** ``logging=stderr``: the helper commands write progress to stderr, streamed
  into Pulumi's display while they run; stdout carries their JSON result (and maybe a
  kubeconfig), so it is never logged.
* **Delete** runs from the state, with the environment the create ran with; the previous
  stdout is not put in the delete's environment (``addPreviousOutputInEnv=false``): it may
  hold a kubeconfig, and large values break ``exec`` (pulumi-command#285).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pulumi
import pulumi_kubernetes as k8s
from pulumi_command import local

from gpulab.core import names
from gpulab.core.argv import INTERPRETER, encode
from gpulab.kube.client import CHECK_INPUTS_ANNOTATION, KUBECONFIG_ENV
from gpulab.kube.results import CheckRecord

#: A check's record type (gpulab.kube.results).
R = TypeVar("R", bound=CheckRecord)

#: argv[0] of the lab's helper commands: gpulab.core.argv runs them on its own interpreter (the
#: project's virtualenv), so no machine path reaches the state.
PYTHON = "python"


def _command_text(argv: Sequence[pulumi.Input[str]] | pulumi.Input[Sequence[str]]) -> pulumi.Output[str]:
    return pulumi.Output.from_input(argv).apply(lambda a: encode([str(x) for x in a]))


def lab_command(
    name: str,
    create: Sequence[pulumi.Input[str]] | pulumi.Input[Sequence[str]],
    *,
    delete: Sequence[pulumi.Input[str]] | pulumi.Input[Sequence[str]] | None = None,
    environment: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None,
    triggers: Sequence[Any] | None = None,
    timeout: int,
    delete_before_replace: bool = False,
    secret_stdout: bool = False,
    previous_stdout: bool = False,
    opts: pulumi.ResourceOptions | None = None,
) -> local.Command:
    """A ``command:local:Command`` running ``create`` (and ``delete`` on destroy) as argv.

    Args:
        name: the resource name (derived from the component's, e.g. ``"minikube-cluster"``).
        create: argv run on create, on a trigger's replacement and on an in-place update.
        delete: argv run on destroy; must succeed when the thing is already gone.
        environment: added to the command's environment (secret values stay secret).
        triggers: values whose change replaces (re-runs) the command.
        timeout: seconds for each of create, update and delete (``customTimeouts``).
        delete_before_replace: the old one's delete runs before the new one's create.
        secret_stdout: stdout holds a secret (a kubeconfig).
        previous_stdout: an in-place update gets the previous stdout in
            ``$PULUMI_COMMAND_STDOUT`` (pulumi-command's ``addPreviousOutputInEnv``); only for
            a small, non-secret stdout (the cluster identity).
        opts: parent and ordering; merged with the options above.
    """
    window = f"{timeout}s"
    # The engine keeps a secret input's same-named output secret; saying so costs nothing.
    secret_outputs = (["environment"] if environment is not None else []) + (
        ["stdout"] if secret_stdout else []
    )
    merged = pulumi.ResourceOptions.merge(
        opts,
        pulumi.ResourceOptions(
            delete_before_replace=delete_before_replace or None,
            additional_secret_outputs=secret_outputs or None,
            custom_timeouts=pulumi.CustomTimeouts(create=window, update=window, delete=window),
        ),
    )
    return local.Command(
        name,
        create=_command_text(create),
        delete=_command_text(delete) if delete is not None else None,
        interpreter=INTERPRETER,
        environment=environment,
        triggers=list(triggers) if triggers is not None else None,
        logging=local.Logging.STDERR,
        add_previous_output_in_env=previous_stdout,
        opts=merged,
    )


def kube_command(
    name: str,
    args: Sequence[pulumi.Input[str]],
    kubeconfig: pulumi.Input[str],
    *,
    triggers: Sequence[Any],
    timeout: int,
    opts: pulumi.ResourceOptions,
) -> local.Command:
    """``python -m gpulab.kube <args>`` against the lab's cluster.

    The kubeconfig travels as a secret in the environment (``GPULAB_KUBECONFIG``), never
    on the command line; the command re-runs when one of ``triggers`` changes.
    """
    return lab_command(
        name,
        [PYTHON, "-m", "gpulab.kube", *args],
        environment=pulumi.Output.secret({KUBECONFIG_ENV: kubeconfig}),
        triggers=triggers,
        timeout=timeout,
        opts=opts,
    )


def check_inputs(check: str, where: tuple[str, str], timeout_seconds: int, extra: Sequence[str]) -> str:
    """The digest of what a run-once Pod's check is asked (its subcommand, Pod, timeout and
    further arguments: the host's CUDA, the profile, what each container must see): 16 hex
    digits of SHA-256 over the argv. The Pod carries it (``gpulab.dev/check-inputs``) and is
    replaced when it changes; the check refuses a Pod that carries another
    (gpulab.kube.client.foreign_pod)."""
    argv = [check, *where, str(timeout_seconds), *extra]
    return hashlib.sha256("\0".join(argv).encode()).hexdigest()[:16]


def run_once_pod(
    name: str,
    where: tuple[str, str],
    spec: pulumi.Input[dict[str, Any]],
    *,
    after: Sequence[pulumi.Resource] = (),
    simulated: bool,
    provider: k8s.Provider,
    parent: pulumi.Resource,
    inputs: str | None = None,
) -> k8s.core.v1.Pod:
    """A run-to-completion Pod of the lab (smoke, compute), replaced delete-first (same name).

    ``pulumi.com/waitFor`` makes "created" mean "accepted by the API server" (such a Pod is
    never Ready; its check waits for Succeeded). Not skipAwait: for Pods that also skips
    waiting for deletion, so a delete-first replacement would race the old Pod's
    termination. ``simulated`` adds the ``gpulab.dev/simulated-execution`` annotation (the
    simulated lab: kwok runs it).

    ``inputs`` (:func:`check_inputs`) goes into the annotation ``gpulab.dev/check-inputs``, and
    a change of the annotations replaces the Pod (``replace_on_changes``): a check asked
    something else runs a new Pod, never re-reads the old one.

    Args:
        name: the resource name (``"smoke-pod"``); where: ``(namespace, pod name)``; after:
            what the Pod names but cannot reference as data (the smoke Pod's ResourceClaimTemplate,
            whose constant name keeps the spec known at preview).
    """
    namespace, pod_name = where
    annotations = {"pulumi.com/waitFor": f"jsonpath={{.metadata.namespace}}={namespace}"}
    if simulated:
        annotations["gpulab.dev/simulated-execution"] = "true"
    if inputs:
        annotations[CHECK_INPUTS_ANNOTATION] = inputs
    return k8s.core.v1.Pod(
        name,
        metadata={
            "name": pod_name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/part-of": names.PROJECT, "app.kubernetes.io/name": pod_name},
            "annotations": annotations,
        },
        spec=spec,
        opts=pulumi.ResourceOptions(
            parent=parent,
            provider=provider,
            delete_before_replace=True,
            depends_on=list(after) or None,
            # A gated Pod (DRA's smoke Pod) is ungated by its check: a refresh must not read that
            # as a change to undo (gpulab.kube.dra.observe_claim).
            ignore_changes=["spec.schedulingGates"]
            if isinstance(spec, dict) and spec.get("schedulingGates")
            else None,
            replace_on_changes=["metadata.annotations"] if inputs else None,
        ),
    )


def pod_check(
    name: str,
    check: str,
    pod: k8s.core.v1.Pod,
    where: tuple[str, str],
    kubeconfig: pulumi.Input[str],
    *,
    timeout_seconds: int,
    extra: Sequence[str] = (),
    parent: pulumi.Resource,
    inputs: str | None = None,
) -> local.Command:
    """The command that waits for a run-once Pod and reads what it printed:
    ``python -m gpulab.kube <check> --namespace NS --pod P --timeout T <extra>``.

    Args:
        name: the command's resource name (``"smoke-check"``).
        check: the gpulab.kube subcommand (``smoke``, ``compute``, ``benchmark``).
        pod: the Pod; the command re-runs exactly when it is (re)created (its UID).
        where: ``(namespace, pod name)``.
        kubeconfig: the cluster's kubeconfig (secret; travels in the environment).
        timeout_seconds: how long the check waits for the Pod; the command gets 60 s more.
        extra: further arguments (e.g. ``--host-max-cuda``, ``--profile`` for the diagnosis).
        parent: the component that owns the Pod.
        inputs: the Pod's :func:`check_inputs` digest (``--inputs``: the check refuses a Pod
            made for other inputs).
    """
    namespace, pod_name = where
    return kube_command(
        name,
        [
            check,
            "--namespace",
            namespace,
            "--pod",
            pod_name,
            "--timeout",
            str(timeout_seconds),
            *extra,
            *(["--inputs", inputs] if inputs else []),
        ],
        kubeconfig,
        triggers=[pod_uid(pod)],
        timeout=timeout_seconds + 60,
        opts=pulumi.ResourceOptions(parent=parent),
    )


@dataclass(frozen=True)
class GpuPodArgs:
    """Inputs of the lab's run-once GPU Pods and their checks (components/smoke.py,
    components/compute.py).

    Attributes:
        image: the Pod's image, pinned (``smokeImage``, ``computeImage``).
        kubeconfig: the cluster's kubeconfig (secret), for the check.
        gpus: how many ``resource`` the Pod asks for: the smoke Pod's limit, the compute
            Pod's containers (one each); ``smokeGpus`` resolved (gpulab.config.gpus).
        resource: ``nvidia.com/gpu``, ``nvidia.com/gpu.shared`` under time-slicing's rename,
            or under MIG ``mixed`` a ``nvidia.com/mig-<profile>`` (gpulab.config.mig.plan).
        timeout_seconds: seconds for the Pod to reach ``Succeeded`` (image pull included).
        simulated: the sim lab (kwok fakes the execution; the Pod's annotation says so).
        host_max_cuda: the host's newest CUDA, and ``profile``: named in a failure's diagnosis;
            ``node_command``: how its fixes run a command on the GPU node (the variant's
            ``VariantSpec.node``; None: the minikube node of ``profile``).
        runtime_class: the Pod's ``runtimeClassName`` (``nvidia`` on kind and k3s, whose
            containerd keeps runc as default), None for the node's default runtime.
        unit: what one container of the compute Pod is given (gpulab.kube.gpu_isolation: ``gpu``,
            ``shared``, ``mig``), ``host_gpu_uuids`` the host's GPU UUIDs (empty: not known),
            ``cluster`` the variant, ``device_list`` the device plugin's
            ``DEVICE_LIST_STRATEGY`` the lab set and ``device_list_reason`` why the variant
            needs it (``VariantSpec.device_list_reason``): what the compute check compares the GPUs
            each container saw with, and names in its diagnosis.
    """

    image: str
    kubeconfig: pulumi.Input[str]
    gpus: int = 1
    resource: str = names.GPU_RESOURCE
    timeout_seconds: int = 300
    simulated: bool = False
    host_max_cuda: str | None = None
    profile: str = names.DEFAULT_PROFILE
    node_command: str | None = None
    runtime_class: str | None = None
    unit: str = "gpu"
    host_gpu_uuids: tuple[str, ...] = ()
    cluster: str | None = None
    device_list: str | None = None
    device_list_reason: str | None = None
    #: The host's driver version (host probe): part of the check's inputs, so a driver change
    #: re-runs the Pod (:meth:`inputs`).
    host_driver: str | None = None
    #: ``gpuStack: dra``: the DeviceClass the smoke Pod claims its ``gpus`` from through a
    #: ResourceClaimTemplate (gpulab.kube.pod_specs.claim_template), and the DRA driver whose
    #: ResourceSlices name the allocated devices' UUIDs; None: the counted ``resource``.
    dra_class: str | None = None
    dra_driver: str | None = None

    def inputs(self, check: str, where: tuple[str, str], extra: Sequence[str]) -> str:
        """:func:`check_inputs` of this Pod's check: its arguments, the image and the host's
        driver (what changes the result), so any of them changing replaces the Pod."""
        return check_inputs(
            check,
            where,
            self.timeout_seconds,
            [*extra, f"image={self.image}", f"driver={self.host_driver or ''}"],
        )

    #: The Pod's namespace (None: the lab's default, ``default``; a found GPU stack's lab:
    #: ``labNamespace``, the only one it writes to).
    namespace: str | None = None

    def isolation_args(self) -> list[str]:
        """The compute check's arguments for what each container must see (``--unit``, one
        ``--host-gpu-uuid`` per host GPU, ``--cluster``, ``--device-list-strategy`` and its
        ``--device-list-reason``). Every
        value is validated or the host probe's (UUIDs), and none reaches a shell."""
        return [
            "--unit",
            self.unit,
            *(a for u in self.host_gpu_uuids for a in ("--host-gpu-uuid", u)),
            *(["--cluster", self.cluster] if self.cluster else []),
            *(["--device-list-strategy", self.device_list] if self.device_list else []),
            *(["--device-list-reason", self.device_list_reason] if self.device_list_reason else []),
        ]

    def diagnosis_args(self) -> list[str]:
        """The arguments the check's diagnosis needs: the host's newest CUDA, the lab's profile
        and, when the Pod asks for ``nvidia.com/gpu.shared`` (time-slicing's rename), that name
        as the whole-GPU resource the diagnosis counts (``--gpu-resource``; left out otherwise,
        so the command of a lab without the rename stays as it was)."""
        cuda = ["--host-max-cuda", self.host_max_cuda] if self.host_max_cuda else []
        shared = ["--gpu-resource", self.resource] if self.resource == names.SHARED_GPU_RESOURCE else []
        node = ["--node-command", self.node_command] if self.node_command else []
        return [*cuda, "--profile", self.profile, *node, *shared]


def pod_uid(pod: k8s.core.v1.Pod) -> pulumi.Output[Any]:
    """The Pod's UID: changes exactly when the Pod is (re)created."""
    return pod.metadata.apply(lambda m: m.get("uid") if isinstance(m, dict) else m.uid)


def check_result(stdout: pulumi.Output[str], record: type[R]) -> pulumi.Output[R]:
    """What a ``python -m gpulab.kube <check>`` command printed, as its record (gpulab.kube.results):
    the JSON object on stdout's last line; every field None when it printed nothing.

    Raises (when the output resolves):
        gpulab.kube.results.CheckResultError: the last line is not JSON, or a key has the wrong
            shape (each named).
    """
    return stdout.apply(record.from_stdout)


def parse_json_stdout(stdout: pulumi.Output[str], what: str) -> pulumi.Output[Any]:
    """The JSON object a helper command printed; a clear error when it printed something else."""

    def load(text: str) -> Any:
        try:
            return json.loads(text.strip().splitlines()[-1]) if text and text.strip() else {}
        except ValueError as exc:
            raise ValueError(f"{what} printed no JSON object on its last stdout line: {exc}") from exc

    return stdout.apply(load)
