"""hack/node: the real-node harness's pieces that run without a GPU: the program's
rendering for the node, the gate's arguments there, the device plugin's Go tests."""

from __future__ import annotations

import importlib.util
import inspect
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / "hack" / "node"


def _load(name: str, path: Path):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


render = _load("node_render", NODE / "render.py")
node = _load("node_device", NODE / "device" / "node.py")


@pytest.fixture(scope="module")
def rendered() -> dict:
    if (
        not os.environ.get("GPULAB_CHART_PATH")
        and not (ROOT.parent / "shared" / "charts" / "gpu-operator").is_dir()
    ):
        pytest.skip("no GPU Operator chart (GPULAB_CHART_PATH): the program's preflight needs one offline")
    return render.render(render.config())


def test_render_takes_the_programs_commands_and_pods(rendered: dict) -> None:
    assert rendered["gate"][0] == "gate" and "--expected-gpus" in rendered["gate"]
    assert rendered["gate"][rendered["gate"].index("--expected-gpus") + 1] == "1"
    smoke = rendered["smoke"]["pod"]
    assert smoke["kind"] == "Pod" and smoke["metadata"]["name"] == "gpu-smoke"
    (c,) = smoke["spec"]["containers"]
    assert c["image"] == render.SMOKE_IMAGE and c["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert rendered["smoke"]["check"][:1] == ["smoke"]
    compute = rendered["compute"]["pod"]
    assert [c["image"] for c in compute["spec"]["containers"]] == [render.COMPUTE_IMAGE]
    assert rendered["compute"]["check"][:1] == ["compute"]


def test_negative_rendering_differs_only_in_the_grace(rendered: dict) -> None:
    neg = render.render(render.config(gpuGraceSeconds=render.NEGATIVE_GRACE))
    grace = neg["gate"].index("--grace")
    assert neg["gate"][grace + 1] == str(render.NEGATIVE_GRACE)
    assert neg["gate"][:grace] == rendered["gate"][:grace]


def test_gate_argv_names_the_harness_plugin_and_skips_the_cluster_policy() -> None:
    rendered = ["gate", "--device-plugin-namespace", "gpu-operator", "--device-plugin-daemonset",
                "nvidia-device-plugin-daemonset", "--timeout", "600", "--grace", "60"]  # fmt: skip
    argv, changes = node.gate_argv(rendered)
    assert argv == [
        *("gate", "--device-plugin-namespace", "kube-system", "--device-plugin-daemonset"),
        *("gpulab-device-plugin", "--timeout", "600", "--grace", "60", "--no-cluster-policy"),
    ]
    assert changes == [
        "--device-plugin-namespace gpu-operator -> kube-system",
        "--device-plugin-daemonset nvidia-device-plugin-daemonset -> gpulab-device-plugin",
        "+ --no-cluster-policy",
    ]
    # A rendering that already names them (the GPU stack found installed) is used unchanged,
    # and one that finds the plugin another way keeps its own arguments.
    same, none = node.gate_argv(argv)
    assert same == argv and none == []
    other, changes = node.gate_argv(["gate", "--timeout", "600", "--no-cluster-policy"])
    assert other == ["gate", "--timeout", "600", "--no-cluster-policy"] and changes == []


def test_cni_config_keeps_masquerade_off() -> None:
    import json

    (bridge,) = json.loads(node.cni_conflist())["plugins"]
    assert bridge["type"] == "bridge" and bridge["ipMasq"] is False and bridge["isGateway"] is True
    assert bridge["ipam"]["type"] == "host-local"


def test_plugin_daemonset_mounts_what_the_plugin_reads() -> None:
    ds = node.plugin_daemonset("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
    spec = ds["spec"]["template"]["spec"]
    (c,) = spec["containers"]
    mounts = {m["mountPath"]: m["readOnly"] for m in c["volumeMounts"]}
    assert mounts["/var/lib/kubelet/device-plugins"] is False
    assert mounts[str(node.CDI_DIR)] is True and mounts["/run/nvidia-driver-lib"] is True
    assert "-nvml-library=/run/nvidia-driver-lib/libnvidia-ml.so.1" in c["args"]
    assert c["securityContext"] == {"privileged": True}
    assert (
        ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()
    )


@pytest.mark.skipif(shutil.which("go") is None, reason="no Go on PATH: the device plugin's Go tests need it")
def test_device_plugin_go_tests() -> None:
    """The plugin's own tests (plugin_test.go): registration, ListAndWatch health updates,
    CDI names in Allocate, the fault file, re-registration after a kubelet restart. Without
    cgo (no NVML), as NVML needs the driver."""
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false"}
    p = subprocess.run(
        ["go", "test", "-count=1", "./..."],
        cwd=NODE / "deviceplugin",
        env=env,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]


def test_the_fleet_rendering_has_the_found_stacks_commands(rendered: dict) -> None:
    """``gpuStack: found``: no gate; the access and fleet checks (the node's pool and GPUs from
    config), the lab's Namespace, and the chapter's Pods in it."""
    found = render.render(render.config(**render.FLEET))
    assert "gate" not in found and found["access"] == ["access", "--namespace", "gpu-lab"]
    argv = found["fleet"]
    assert argv[0] == "fleet" and argv[argv.index("--pool-label") + 1] == render.POOL_LABEL
    assert argv[argv.index("--pool-gpus") + 1] == f"{render.POOL}=1"
    assert found["namespace"]["kind"] == "Namespace" and found["namespace"]["metadata"]["name"] == "gpu-lab"
    assert found["smoke"]["pod"]["metadata"]["namespace"] == "gpu-lab"
    assert node.FLEET_NODE_LABELS == {render.POOL_LABEL: render.POOL}


def test_the_plugin_relabelled_for_the_fleet_keeps_its_selector(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpulab.kube import fleet

    monkeypatch.setattr(node, "PLUGIN_LABELS", {**node.PLUGIN_LABELS, **node.FLEET_PLUGIN_LABELS})
    ds = node.plugin_daemonset("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
    labels = ds["spec"]["template"]["metadata"]["labels"]
    assert ds["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert any(f"{k}={v}" in fleet.DEVICE_PLUGIN_SELECTORS for k, v in labels.items())


def test_the_checkouts_python_is_the_harness_interpreter_with_its_virtualenv(tmp_path: Path) -> None:
    """node.py gives the checkout a ``.venv/bin/python`` that runs the harness's interpreter (the
    machine's python3 is a virtualenv's): a script that execs it keeps that virtualenv's
    sys.prefix (its packages); a symlink, what the 2026-12-03 run had, does not."""
    env = tmp_path / "machine-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    interpreter = str(env / "bin" / "python")
    checkout_python = tmp_path / "repo" / ".venv" / "bin" / "python"
    ask = ["-c", "import sys; print(sys.prefix)"]
    checkout_python.parent.mkdir(parents=True)
    checkout_python.symlink_to(interpreter)  # what the run had
    linked = subprocess.run([str(checkout_python), *ask], capture_output=True, text=True, check=True)
    assert Path(linked.stdout.strip()) != env
    node.python_wrapper(checkout_python, interpreter)
    assert not checkout_python.is_symlink()
    wrapped = subprocess.run([str(checkout_python), *ask], capture_output=True, text=True, check=True)
    assert Path(wrapped.stdout.strip()) == env


# ---------------------------------------------------------------- NVIDIA's device plugin chart


def _module_dir(module: str) -> Path:
    """A module's directory in the Go module cache (skip when Go or the module is absent)."""
    if shutil.which("go") is None:
        pytest.skip("no Go on PATH")
    cache = subprocess.run(
        ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True
    ).stdout.strip()
    path, _, version = module.partition("@")
    escaped = "".join(f"!{c.lower()}" if c.isupper() else c for c in path)
    d = Path(cache) / f"{escaped}@{version}"
    if not d.is_dir():
        pytest.skip(f"{module} is not in the Go module cache (hack/node/build.sh nvidia-dp nfd)")
    return d


def _versions() -> dict[str, str]:
    text = (NODE / "versions.env").read_text()
    return dict(ln.split("=", 1) for ln in text.splitlines() if "=" in ln and not ln.startswith("#"))


def test_pods_reach_the_api_server_at_the_kubernetes_services_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No kube-proxy: the ``kubernetes`` Service's ClusterIP (the service range's first address)
    is the CNI bridge's gateway, the host's address on cni0, in the API server's certificate;
    the API server listens on the Service's port; Pods get addresses outside the service range."""
    import ipaddress
    import json

    monkeypatch.setattr(node, "NET", dict(node.NET))
    assert node.api_url() == "https://127.0.0.1:6443"  # the other modes keep theirs
    node.use_in_cluster_network()
    service = ipaddress.ip_network(node.NET["service_cidr"])
    cluster_ip = next(service.hosts())
    (bridge,) = json.loads(node.cni_conflist())["plugins"]
    ((r,),) = bridge["ipam"]["ranges"]
    assert ipaddress.ip_address(r["gateway"]) == cluster_ip and bridge["isGateway"] is True
    pods = ipaddress.ip_network(r["subnet"])
    assert service.subnet_of(pods) and ipaddress.ip_address(r["rangeStart"]) not in service
    assert node.NET["api_port"] == 443 and node.api_url() == "https://127.0.0.1:443"
    assert ipaddress.ip_address(node.NET["cluster_dns"]) in service
    sans = re.search(r'cert apiserver "/CN=kube-apiserver" \\\n\s+"([^"]+)"', (NODE / "pki.sh").read_text())
    assert sans and f"IP:{cluster_ip}" in sans.group(1).split(",")


def test_nvidia_runtime_maps_visible_devices_to_cdi_names_the_spec_has() -> None:
    """cdi mode turns NVIDIA_VISIBLE_DEVICES=<id> into ``<default-kind>=<id>``
    (internal/modifier/cdi.go, v1.20.2); the spec the harness generates names devices by index
    and UUID, and "all" (the rehearsal's stand-in spec too)."""
    toolkit = _module_dir(
        f"github.com/NVIDIA/nvidia-container-toolkit@v{_versions()['NVIDIA_CONTAINER_TOOLKIT_VERSION']}"
    )
    src = (toolkit / "internal" / "modifier" / "cdi.go").read_text()
    assert 'name = fmt.Sprintf("%s=%s", c.defaultKind, name)' in src
    assert (
        'DefaultKind:        "nvidia.com/gpu"'
        in (toolkit / "api" / "config" / "v1" / "config.go").read_text()
    )
    text = inspect.getsource(node.nvidia_runtime)
    assert 'mode = "cdi"' in text and 'default-kind = "nvidia.com/gpu"' in text
    assert "--runtime=containerd" in text and "--drop-in-config=" in text
    gen = inspect.getsource(node.cdi)
    assert "--device-name-strategy=index" in gen and "--device-name-strategy=uuid" in gen
    assert '("0", FAKE_UUID, "all")' in inspect.getsource(node.fake_gpu)


def test_nvidia_images_are_laid_out_as_upstreams(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """k8s-device-plugin's image: the binaries its Dockerfile copies to /usr/bin, its ENV; NFD's:
    the commands its subchart's templates run, in /usr/bin, USER 65534:65534."""
    import tarfile

    v = _versions()
    dp = _module_dir(f"github.com/NVIDIA/k8s-device-plugin@v{v['NVIDIA_DEVICE_PLUGIN_VERSION']}")
    monkeypatch.setattr(node, "NVIDIA_OPT", tmp_path)
    (tmp_path / "VERSIONS").write_text(
        f"NVIDIA_DEVICE_PLUGIN_VERSION={v['NVIDIA_DEVICE_PLUGIN_VERSION']}\nNFD_VERSION={v['NFD_VERSION']}\n"
    )
    specs = node.nvidia_image_specs()

    def pairs(args: list[str], flag: str) -> list[str]:
        return [args[i + 1] for i, a in enumerate(args) if a == flag]

    docker = (dp / "deployments" / "container" / "Dockerfile").read_text()
    copied = set(re.findall(r"^COPY --from=build /artifacts/\S+\s+(/usr/bin/\S+)$", docker, re.M))
    added = {a.split("=", 1)[0] for a in pairs(specs["nvidia-dp"], "--add")}
    assert copied and copied <= added
    for env in re.findall(r'^ENV (NVIDIA_\w+)="?([^"\n]+)"?$', docker, re.M):
        assert "=".join(env) in pairs(specs["nvidia-dp"], "--env")
    assert node.nvidia_images() == {
        "nvidia-dp": f"gpulab.local/k8s-device-plugin:v{v['NVIDIA_DEVICE_PLUGIN_VERSION']}",
        "nfd": f"gpulab.local/node-feature-discovery:v{v['NFD_VERSION']}",
    }
    sub = (
        dp
        / "deployments"
        / "helm"
        / "nvidia-device-plugin"
        / "charts"
        / f"node-feature-discovery-chart-{v['NFD_VERSION']}.tgz"
    )
    commands = set()
    with tarfile.open(sub) as t:
        for m in t.getmembers():
            if "/templates/" in m.name and m.isfile():
                text = (t.extractfile(m) or io.BytesIO()).read().decode()
                commands |= set(re.findall(r'command:\s*\n\s*- "(nfd-[a-z-]+)"', text))
    assert commands >= {"nfd-master", "nfd-worker", "nfd-gc"}
    nfd_added = {a.split("=", 1)[0] for a in pairs(specs["nfd"], "--add")}
    assert {f"/usr/bin/{c}" for c in commands if c != "nfd-topology-updater"} <= nfd_added
    assert pairs(specs["nfd"], "--user") == ["65534:65534"]


def test_chart_values_are_keys_of_the_chart(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """rehearse-chart-nvidia's values exist in the v0.19.0 chart's values.yaml (or its NFD
    subchart's), and the chart bundles the NFD that versions.env builds."""
    import yaml

    v = _versions()
    chart = (
        _module_dir(f"github.com/NVIDIA/k8s-device-plugin@v{v['NVIDIA_DEVICE_PLUGIN_VERSION']}")
        / "deployments"
        / "helm"
        / "nvidia-device-plugin"
    )
    monkeypatch.setattr(node, "NVIDIA_OPT", tmp_path)
    values = yaml.safe_load((chart / "values.yaml").read_text())
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    assert meta["version"] == v["NVIDIA_DEVICE_PLUGIN_VERSION"]
    (dep,) = meta["dependencies"]
    assert (dep["name"], dep["alias"], dep["version"]) == ("node-feature-discovery", "nfd", v["NFD_VERSION"])
    want = node.chart_values()
    for key in ("gfd", "migStrategy", "runtimeClassName", "image", "config"):
        assert key in values
    assert {"repository", "tag"} <= set(values["image"]) and {"map", "default"} <= set(values["config"])
    assert set(want["nfd"]) == {"enabled", "image"}
    sharing = yaml.safe_load(want["config"]["map"]["default"])
    assert sharing["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]


def test_the_negative_taint_is_one_the_charts_pods_do_not_tolerate() -> None:
    import yaml

    v = _versions()
    chart = (
        _module_dir(f"github.com/NVIDIA/k8s-device-plugin@v{v['NVIDIA_DEVICE_PLUGIN_VERSION']}")
        / "deployments"
        / "helm"
        / "nvidia-device-plugin"
    )
    tolerations = yaml.safe_load((chart / "values.yaml").read_text())["tolerations"]
    taint = node.EVICT_TAINT
    assert taint["effect"] == "NoExecute"
    for t in tolerations:
        assert t["key"] != taint["key"] and t.get("effect") in (None, "NoSchedule")


def test_the_wrappers_pin_the_versions_files() -> None:
    v = _versions()
    go = NODE / "go"
    assert (
        f"github.com/NVIDIA/k8s-device-plugin v{v['NVIDIA_DEVICE_PLUGIN_VERSION']}"
        in (go / "nvidia-dp" / "go.mod").read_text()
    )
    nfd = (go / "nfd" / "go.mod").read_text()
    assert f"sigs.k8s.io/node-feature-discovery v{v['NFD_VERSION']}" in nfd
    # NFD's own replaces repeated (its api/nfd module at the same version, not ./api/nfd).
    api = "sigs.k8s.io/node-feature-discovery/api/nfd"
    assert f"{api} => {api} v{v['NFD_VERSION']}" in nfd
    assert "k8s.io/client-go => k8s.io/client-go v0.32.3" in nfd
    toolkit = (go / "toolkit" / "go.mod").read_text()
    assert "cmd/nvidia-container-runtime" in toolkit and "cmd/nvidia-ctk" in toolkit


def test_the_lab_nvidia_stacks_config_keys_are_the_programs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The keys lab-nvidia sets on its two stacks are keys of the program's config schema
    (Pulumi.yaml), with the values the run is about; lab-config.json's keys win."""
    import json

    import yaml

    schema = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    monkeypatch.setattr(node, "NVIDIA_OPT", tmp_path)
    (tmp_path / "VERSIONS").write_text("NVIDIA_DEVICE_PLUGIN_VERSION=0.19.0\nNFD_VERSION=0.17.3\n")
    extra = tmp_path / "lab-config.json"
    extra.write_text(json.dumps({"gpu-lab:gpuGraceSeconds": 30}))
    monkeypatch.setenv("GPULAB_NODE_LAB_CONFIG", str(extra))
    cfg = node.nvidia_lab_config(rehearsal=False)
    found = node.found_lab_config(rehearsal=False)
    for key in (*cfg, *found):
        assert key.removeprefix("gpu-lab:") in schema, key
    assert cfg["gpu-lab:gpuStack"] == "device-plugin" and found["gpu-lab:gpuStack"] == "found"
    assert cfg["gpu-lab:devicePluginChartPath"] == str(tmp_path / "nvidia-device-plugin")
    assert cfg["gpu-lab:devicePluginImage"] == "gpulab.local/k8s-device-plugin:v0.19.0"
    assert cfg["gpu-lab:nfdImage"] == "gpulab.local/node-feature-discovery:v0.17.3"
    assert cfg["gpu-lab:runtimeClass"] == found["gpu-lab:runtimeClass"] == node.RUNTIME_CLASS == "nvidia"
    assert (cfg["gpu-lab:timeSlicingReplicas"], cfg["gpu-lab:expectedGpus"]) == ("4", "1")
    assert cfg["gpu-lab:gpuGraceSeconds"] == "30" and cfg["gpu-lab:dcgmExporter"] == "false"
    # The second stack's namespace is its own (the first stack's is labNamespace's default).
    assert found["gpu-lab:labNamespace"] != schema["labNamespace"]["default"]


def _dra_module() -> Path:
    return _module_dir(f"sigs.k8s.io/dra-driver-nvidia-gpu@v{_versions()['DRA_DRIVER_VERSION']}")


def _dra_opt(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An unpacked DRA stack as dra-unpack.sh lays it out, from the module (the chart, image/)."""
    mod = _dra_module()
    monkeypatch.setattr(node, "DRA_OPT", tmp_path)
    (tmp_path / "VERSIONS").write_text(f"DRA_DRIVER_VERSION={_versions()['DRA_DRIVER_VERSION']}\n")
    shutil.copytree(mod / "deployments" / "helm" / node.DRA_RELEASE, tmp_path / node.DRA_RELEASE)
    shutil.copytree(mod / "templates", tmp_path / "image" / "templates")
    return mod


def test_the_dra_image_is_laid_out_as_upstreams(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The DRA driver's image: what its Dockerfile copies for the GPU kubelet plugin (the plugin,
    nvidia-cdi-hook, the prestart script, bash, /templates) where it copies them, its ENV, and the
    tools the prestart script runs; named by the version, tagged as the chart's default image."""
    mod = _dra_opt(monkeypatch, tmp_path)
    specs = node.dra_image_specs()["dra"]
    added = {specs[i + 1].split("=", 1)[0] for i, a in enumerate(specs) if a == "--add"}
    docker = (mod / "deployments" / "container" / "Dockerfile").read_text()
    copied = set(re.findall(r"^COPY .*\s(/\S+)$", docker, re.M))
    wanted = {p for p in copied if not p.startswith(("/usr/bin/compute-domain", "/usr/bin/webhook", "/etc/"))}
    assert wanted == {"/bin/bash", "/usr/bin/nvidia-cdi-hook", "/usr/bin/gpu-kubelet-plugin",
                      "/usr/bin/kubelet-plugin-prestart.sh", "/templates"}  # fmt: skip
    assert wanted - {"/templates"} <= added and "/LICENSE" in added  # COPY LICENSE /
    assert any(a.startswith("/templates/") for a in added)
    envs = {specs[i + 1] for i, a in enumerate(specs) if a == "--env"}
    for env in re.findall(r'^ENV (NVIDIA_\w+)="?([^"\n]+)"?$', docker, re.M):
        assert "=".join(env) in envs
    script = (mod / "hack" / "kubelet-plugin-prestart.sh").read_text()
    for tool in ("ln", "find", "head", "basename", "ls", "date", "env", "sleep"):
        assert re.search(rf"\b{tool}\b", script) and tool in node.DRA_IMAGE_TOOLS
    assert node.dra_images() == {
        "dra": f"gpulab.local/dra-driver-nvidia-gpu:v{_versions()['DRA_DRIVER_VERSION']}"
    }
    assert node.dra_chart_image() == (
        f"registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v{_versions()['DRA_DRIVER_VERSION']}"
    )


def test_the_lab_dra_stacks_config_keys_are_the_programs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """lab-dra's stack config: keys of the program's schema, gpuStack dra with the unpacked
    chart and this machine's driver root, no benchmark Pod; lab-config.json's keys win."""
    import json

    import yaml

    schema = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    monkeypatch.setattr(node, "DRA_OPT", tmp_path)
    monkeypatch.setitem(node.DRA, "driverRoot", "/usr/local/nvidia")
    extra = tmp_path / "lab-config.json"
    extra.write_text(json.dumps({"gpu-lab:operatorTimeoutSeconds": 150}))
    monkeypatch.setenv("GPULAB_NODE_LAB_CONFIG", str(extra))
    cfg = node.dra_lab_config(rehearsal=False)
    for key in cfg:
        assert key.removeprefix("gpu-lab:") in schema, key
    assert cfg["gpu-lab:gpuStack"] == "dra" and cfg["gpu-lab:benchmarkPod"] == "false"
    assert cfg["gpu-lab:draChartPath"] == str(tmp_path / "dra-driver-nvidia-gpu")
    assert cfg["gpu-lab:draDriverRoot"] == "/usr/local/nvidia"
    assert cfg["gpu-lab:operatorTimeoutSeconds"] == "150" and "gpu-lab:runtimeClass" not in cfg
    assert node.dra_lab_config(rehearsal=True)["gpu-lab:hostProbe"] == "off"


def test_the_dra_driver_root_is_where_the_driver_looks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The driver root the lab gets: the H200's layout (/usr/local/nvidia/{bin,lib64}) is found
    as the plugin's root.go looks (its search directories are the harness's)."""
    root = tmp_path / "usr" / "local" / "nvidia"
    (root / "bin").mkdir(parents=True)
    (root / "lib64").mkdir()
    (root / "bin" / "nvidia-smi").write_text("")
    (root / "lib64" / "libnvidia-ml.so.1").write_text("")
    monkeypatch.setattr(node.shutil, "which", lambda name: str(root / "bin" / name))
    assert node.dra_driver_root(gpu_host=True) == str(root)
    go = (_dra_module() / "cmd" / "gpu-kubelet-plugin" / "root.go").read_text()
    libs = re.search(r"librarySearchPaths = \[\]string\{(.*?)\}", go, re.S)
    bins = re.search(r"binarySearchPaths := \[\]string\{(.*?)\}", go, re.S)
    assert libs and bins
    assert {p.lstrip("/") for p in re.findall(r'"([^"]+)"', libs.group(1)) if "aarch64" not in p} == set(
        node.DRA_NVML_DIRS
    ) - {""}
    assert {p.lstrip("/") for p in re.findall(r'"([^"]+)"', bins.group(1))} == set(node.DRA_SMI_DIRS) - {""}


def test_the_dra_negative_taint_is_one_the_kubelet_plugin_does_not_tolerate() -> None:
    import yaml

    chart = _dra_module() / "deployments" / "helm" / "dra-driver-nvidia-gpu"
    values = yaml.safe_load((chart / "values.yaml").read_text())
    for t in values["kubeletPlugin"]["tolerations"]:
        assert t["key"] != node.EVICT_TAINT["key"] and t.get("effect") in (None, "NoSchedule")
    # The node label the harness's kubelet sets is one the plugin's DaemonSet schedules by.
    terms = values["kubeletPlugin"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    accepted = {
        (e["key"], v) for t in terms["nodeSelectorTerms"] for e in t["matchExpressions"] for v in e["values"]
    }
    assert set(node.DRA_NODE_LABELS.items()) <= accepted
    assert values["kubeletPlugin"]["kubeletRegistrarDirectoryPath"] == str(node.KUBELET_PLUGIN_DIRS[0])
    assert values["kubeletPlugin"]["kubeletPluginsDirectoryPath"] == str(node.KUBELET_PLUGIN_DIRS[1])


def test_the_dra_wrapper_pins_the_versions_file() -> None:
    v = _versions()
    mod = (NODE / "go" / "dra" / "go.mod").read_text()
    assert f"sigs.k8s.io/dra-driver-nvidia-gpu v{v['DRA_DRIVER_VERSION']}" in mod
    assert "sigs.k8s.io/dra-driver-nvidia-gpu/cmd/gpu-kubelet-plugin" in mod and "cmd/nvidia-cdi-hook" in mod
    assert f"github.com/NVIDIA/go-nvfm => github.com/NVIDIA/go-nvfm {v['DRA_GO_NVFM_VERSION']}" in mod
    assert f"k8s.io/kubernetes => k8s.io/kubernetes {v['DRA_KUBERNETES_VERSION']}" in mod
