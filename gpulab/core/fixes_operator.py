"""The first fixes for the GPU Operator stack's own failures, written once.

The known failure messages of the device plugin, the container toolkit, the validator and
the DCGM exporter (:mod:`gpulab.diagnose.messages` maps each to one of these), the
validator's init containers, a namespace stuck Terminating, CRDs left by another chart
version, and what destroy left behind. The companion of :mod:`gpulab.core.fixes` (the chapter's
first reactions), which the texts here build on; kept apart only for size. Each returns a
command line (or a few, ``;``-separated) to run first, not a procedure.

Pure: no I/O.
"""

from __future__ import annotations

import contextlib

from gpulab.core import cuda
from gpulab.core.fixes import (
    KUBECTL,
    REMEASURE,
    config_set,
    device_plugin_logs,
    docker_runtime,
    node_nvidia_smi,
    toolkit_logs,
)
from gpulab.core.names import DEFAULT_PROFILE, DEVICE_PLUGIN_DS, OPERATOR_NAMESPACE, TOOLKIT_DS

__all__ = [
    "apply_crds",
    "crd_stored_versions",
    "dcgm_hostengine",
    "dcgm_profiling",
    "dev_char_symlinks",
    "driver_not_loaded",
    "driver_reload",
    "driver_root",
    "gpu_held",
    "host_driver",
    "lost_devices",
    "mig_devices",
    "namespace_held",
    "no_devices",
    "not_injected",
    "nvml_permissions",
    "operand_cuda",
    "plugin_resources",
    "remove_leftover_crds",
    "remove_node_labels",
    "runtime_class",
    "runtime_handler",
    "validator_init",
]


# --- the GPU stack's known failures (gpulab.diagnose.messages) ---------------------------
# Each answers one cause the upstream trackers report again and again; the message table in
# gpulab.diagnose.messages cites the issues. ``namespace`` is the operator's, ``profile`` the
# node's (minikube commands); the commands are the first thing to run, not a full procedure.


def not_injected(namespace: str = OPERATOR_NAMESPACE, profile: str = DEFAULT_PROFILE) -> str:
    """The container runs without the NVIDIA runtime, so the driver (libnvidia-ml.so.1,
    nvidia-smi, /dev/nvidia*) is not in it: the node's runtime, the toolkit, the Pod's class."""
    return (
        f"check the node's runtime (minikube -p {profile} ssh -- docker info | grep -i runtime; "
        "containerd: sudo nvidia-ctk runtime configure --runtime=containerd --set-as-default && "
        f"sudo systemctl restart containerd); docker: {docker_runtime()}; {toolkit_logs(namespace)}; "
        "where nvidia is not the default runtime the Pod needs runtimeClassName: nvidia "
        f"({KUBECTL} get runtimeclass nvidia); then delete the Pod so it starts again"
    )


def lost_devices(namespace: str, pod: str) -> str:
    """``Failed to initialize NVML: Unknown Error`` in a running container: systemd re-applied
    the cgroup (``systemctl daemon-reload``) without the GPU device rules (NVIDIA/nvidia-docker#1730)."""
    return (
        f"{KUBECTL} -n {namespace} delete pod {pod} (a new container gets the devices again); to stop "
        "it recurring create the /dev/char links on the node (sudo nvidia-ctk system "
        "create-dev-char-symlinks --create-all; the validator does it unless "
        "DISABLE_DEV_CHAR_SYMLINK_CREATION is set) or run with CDI (cdi.enabled=true)"
    )


def runtime_handler(namespace: str = OPERATOR_NAMESPACE) -> str:
    """The RuntimeClass names the ``nvidia`` handler, but the node's containerd has none yet."""
    return (
        f"the toolkit adds the nvidia handler to containerd: {toolkit_logs(namespace)}; {KUBECTL} -n "
        f"{namespace} rollout status ds/{TOOLKIT_DS} --timeout=10m; with the toolkit off, on the "
        "node: sudo nvidia-ctk runtime configure --runtime=containerd && sudo systemctl restart "
        "containerd (k3s: sudo systemctl restart k3s); then delete the Pod"
    )


def runtime_class() -> str:
    """The Pod asks for RuntimeClass ``nvidia`` and the cluster has none."""
    return (
        f"{KUBECTL} get runtimeclass; the operator creates nvidia once ClusterPolicy reconciles "
        f"({KUBECTL} get clusterpolicy cluster-policy); without the operator create it (handler: "
        "nvidia) or drop runtimeClassName where nvidia is the node's default runtime"
    )


def driver_reload(profile: str = DEFAULT_PROFILE) -> str:
    """``Driver/library version mismatch``: the driver was upgraded, the old kernel module runs."""
    return (
        f"reboot the host (the new driver's kernel module loads then), then {REMEASURE}; check with "
        f"nvidia-smi on the host and {node_nvidia_smi(profile)}"
    )


def driver_not_loaded(profile: str = DEFAULT_PROFILE) -> str:
    """No NVIDIA kernel module is loaded on the node."""
    return (
        "on the host: nvidia-smi; lsmod | grep nvidia; load it (sudo modprobe nvidia) or install "
        f"the driver and reboot; then {node_nvidia_smi(profile)}"
    )


def host_driver(profile: str = DEFAULT_PROFILE) -> str:
    """driver.enabled=false: the validator runs nvidia-smi in the node's root (``/host``)."""
    return (
        f"the driver must be installed on the node itself: {node_nvidia_smi(profile)}; a driver "
        "whose files live elsewhere needs the chart value hostPaths.driverInstallDir"
    )


def dev_char_symlinks(namespace: str = OPERATOR_NAMESPACE) -> str:
    """The validator could not create ``/dev/char`` links to the NVIDIA devices."""
    return (
        "load the module the error names (e.g. sudo modprobe nvidia-modeset), or skip the links: "
        f"{KUBECTL} patch clusterpolicy cluster-policy --type=merge -p "
        '\'{"spec":{"validator":{"driver":{"env":[{"name":"DISABLE_DEV_CHAR_SYMLINK_CREATION",'
        '"value":"true"}]}}}}\' (chart value validator.driver.env, to keep it); '
        f"{KUBECTL} -n {namespace} delete pod -l app=nvidia-operator-validator"
    )


def driver_root(namespace: str = OPERATOR_NAMESPACE) -> str:
    """The toolkit or plugin looks for a driver container's root while the driver is on the host."""
    return (
        f"ls /run/nvidia/validations on the node (host-driver-ready expected); restart them: "
        f"{KUBECTL} -n {namespace} delete pod -l app={TOOLKIT_DS}; {KUBECTL} -n {namespace} delete pod "
        f"-l app={DEVICE_PLUGIN_DS}"
    )


def plugin_resources(namespace: str = OPERATOR_NAMESPACE) -> str:
    """plugin-validation waits for allocatable ``nvidia.com/gpu`` on its node."""
    return (
        f"the device plugin has not registered: {device_plugin_logs(namespace)}; with the plugin "
        "off or another one owning it, skip the workload: chart value validator.plugin.env "
        "WITH_WORKLOAD=false"
    )


def gpu_held(namespace: str = OPERATOR_NAMESPACE) -> str:
    """The validator's workload Pod could not get a GPU: another Pod holds it."""
    return (
        f"see who holds the GPUs: {KUBECTL} get pods -A -o wide (limits nvidia.com/gpu); free one, or "
        "skip the validator's workload: chart value validator.plugin.env WITH_WORKLOAD=false; "
        f"{KUBECTL} -n {namespace} delete pod -l app=nvidia-operator-validator"
    )


def dcgm_profiling() -> str:
    """Profiling (DCP) metrics are not supported here: drop them or the exporter."""
    return (
        "drop the DCGM_FI_PROF_* (profiling) metrics from the exporter's metrics CSV "
        f"(dcgmExporter.config), or switch the exporter off: {config_set(('dcgmExporter', 'false'))}"
    )


def dcgm_hostengine(namespace: str = OPERATOR_NAMESPACE) -> str:
    """The exporter is pointed at a standalone nv-hostengine that does not answer."""
    return (
        f"{KUBECTL} -n {namespace} get pods -l app=nvidia-dcgm (the standalone engine, dcgm.enabled); "
        "or let the exporter run its embedded engine: chart value dcgm.enabled=false"
    )


def no_devices(profile: str = DEFAULT_PROFILE) -> str:
    """The device plugin runs but NVML lists no GPU."""
    return (
        f"minikube -p {profile} ssh -- nvidia-smi -L; with MIG mode on and no MIG device the list "
        "is empty: create instances (migManager, label nvidia.com/mig.config) or turn MIG off"
    )


def mig_devices(profile: str = DEFAULT_PROFILE) -> str:
    """MIG mode is on but its devices do not match the device plugin's MIG strategy."""
    return (
        f"minikube -p {profile} ssh -- nvidia-smi mig -lgi; create the instances (migManager with "
        "the node label nvidia.com/mig.config) or turn MIG off (sudo nvidia-smi -mig 0, reboot); "
        "keep mig.strategy (single/mixed) as the GPUs are set up"
    )


def mig_config_failed(nodes: str, namespace: str = OPERATOR_NAMESPACE) -> str:
    """The MIG manager set ``nvidia.com/mig.config.state=failed`` on ``nodes``: it applies no
    layout again until the node's ``nvidia.com/mig.config`` label changes."""
    return (
        f"{KUBECTL} logs -n {namespace} -l app=nvidia-mig-manager --tail=50 (why it failed); check that "
        f"the profile the label names is in the MIG manager's config ({KUBECTL} get configmap -n "
        f"{namespace} default-mig-parted-config -o yaml), then set one that is with {KUBECTL} label node "
        f"{nodes} nvidia.com/mig.config=<profile> --overwrite (the manager applies it again on the "
        "label's change; a mode change may need a reboot)"
    )


def nvml_permissions() -> str:
    """NVML refuses the plugin MIG devices: it needs NVIDIA_MIG_MONITOR_DEVICES=all and SYS_ADMIN."""
    return (
        "run the plugin with env NVIDIA_MIG_MONITOR_DEVICES=all and capability SYS_ADMIN (the "
        "operator's DaemonSet has both; a plugin deployed by hand must set them)"
    )


def validator_init(container: str, namespace: str, pod: str, profile: str = DEFAULT_PROFILE) -> str:
    """The first fix for one of nvidia-operator-validator's init containers: its log, then
    what that step checks (cmd/nvidia-validator in NVIDIA/gpu-operator: driver-validation
    runs nvidia-smi in the host root, toolkit-validation nvidia-smi under the nvidia runtime
    class, cuda-validation and plugin-validation start a workload Pod each)."""
    logs = f"{KUBECTL} -n {namespace} logs {pod} -c {container}"
    hints = {
        "driver-validation": f"driver.enabled=false, so it validates the host driver: {host_driver(profile)}",
        "toolkit-validation": "it runs nvidia-smi under the nvidia runtime class, so it waits for the "
        f"toolkit: {toolkit_logs(namespace)}",
        "cuda-validation": f"it runs a CUDA vectorAdd Pod: {KUBECTL} -n {namespace} logs -l "
        "app=nvidia-cuda-validator --all-containers (a driver older than its CUDA fails there)",
        "plugin-validation": f"it waits for allocatable nvidia.com/gpu: {device_plugin_logs(namespace)}",
    }
    hint = hints.get(container)
    return f"{logs}; {hint}" if hint else logs


# --- leftovers and reinstall ---------------------------------------------------------------


def namespace_held(
    namespace: str, resources: list[str] | None = None, finalizers: list[str] | None = None
) -> str:
    """A namespace stuck Terminating: list what remains (``resources``: the kinds its
    ``NamespaceContentRemaining`` condition names, e.g. ``configmaps``, ``daemonsets.apps``),
    and, when objects wait for ``finalizers`` (``NamespaceFinalizersRemaining``), clear them."""
    kinds = ",".join(resources or [])
    listing = (
        f"{KUBECTL} -n {namespace} get {kinds} -o name"
        if kinds
        else f"{KUBECTL} api-resources --verbs=list --namespaced -o name | xargs -n1 {KUBECTL} "
        f"-n {namespace} get --ignore-not-found -o name"
    )
    steps = [listing]
    if finalizers:
        steps.append(
            f"their finalizers ({', '.join(finalizers)}) wait for a controller that is gone: start it "
            f"again, or clear them: {listing} | xargs {KUBECTL} -n {namespace} patch --type=merge -p "
            '\'{"metadata":{"finalizers":null}}\''
        )
    elif kinds:
        steps.append(f"{listing} | xargs {KUBECTL} -n {namespace} delete")
    steps.append(f"a failing aggregated API blocks deletion too: {KUBECTL} get apiservice | grep False")
    return "; ".join(steps)


def apply_crds(chart_dir: str, files: list[str]) -> str:
    """Bring the cluster's CRDs to the chart's: Helm installs ``crds/`` once and never upgrades
    them; NVIDIA's upgrade guide applies them by hand first."""
    paths = " ".join(f"-f {chart_dir}/{f}" for f in files) or f"-f {chart_dir}/crds"
    return f"{KUBECTL} apply --server-side --force-conflicts {paths}; then make lab"


def crd_stored_versions(crd: str, versions: str) -> str:
    """The cluster stores objects of ``crd`` in ``versions``, which the chart's CRD no longer
    serves: applying it would be refused until they are migrated or deleted."""
    return (
        f"{KUBECTL} get {crd.split('.', 1)[0]} -A; a chart that still serves {versions} can read "
        f"them; else back them up and delete them (or the CRD: {KUBECTL} delete crd {crd}, which "
        "deletes every object of it), then make lab"
    )


def remove_node_labels(node: str, keys: list[str]) -> str:
    """Remove node labels the operator set and destroy left behind (NVIDIA/gpu-operator#1391)."""
    return f"{KUBECTL} label node {node} " + " ".join(f"{k}-" for k in keys)


def remove_leftover_crds(crds: list[str]) -> str:
    """Delete CRDs destroy left (it deletes every object of them too)."""
    return f"{KUBECTL} delete crd " + " ".join(crds) + " (deletes every object of them)"


def operand_cuda(image: str, needed: str | None, max_cuda: str | None) -> str:
    """An operator image (the validator's CUDA sample) needs a newer CUDA than the host driver."""
    want = f"CUDA {needed}" if needed else "the CUDA of the chart's validator"
    driver = ""
    if needed:
        with contextlib.suppress(cuda.UnknownCudaVersionError, ValueError):
            driver = f" (>= {cuda.min_driver_for(needed)})"
    have = f"; the driver supports CUDA <= {max_cuda}" if max_cuda else ""
    return (
        f"{image} needs {want}{have}: upgrade the host driver{driver}, or pick a chart version whose "
        f"validator fits the driver ({config_set(('chartVersion', '<version>'))})"
    )
