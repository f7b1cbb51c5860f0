"""Config of the kind, k3s and existing variants: defaults, resolution, derived settings."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpulab.config.lab import ConfigError
from variants.existing.settings import ExistingSettings
from variants.k3s.settings import K3sSettings
from variants.kind.settings import DEFAULT_NODE_IMAGE, KindSettings
from variants.registry import parse_config


def _kubeconfig(tmp_path: Path) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "kind-gpu",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [
            {"name": "kind-gpu", "context": {"cluster": "c", "user": "u"}},
            {
                "name": "arn:aws:eks:us-west-2:123456789012:cluster/gpu",
                "context": {"cluster": "c", "user": "u"},
            },
            {"name": "gke_proj_us-central1-a_gpu", "context": {"cluster": "c", "user": "u"}},
        ],
    }
    p = tmp_path / "config"
    p.write_text(yaml.safe_dump(doc))
    return p


def test_kind_defaults_pin_the_node_image_and_turn_the_operator_toolkit_off() -> None:
    cfg = parse_config({"gpu-lab:cluster": "kind"}, env={})
    assert cfg.settings(KindSettings).node_image == DEFAULT_NODE_IMAGE and "@sha256:" in DEFAULT_NODE_IMAGE
    assert cfg.operator.toolkit is False and cfg.cluster == "kind"
    assert cfg.smoke_runtime_class == "nvidia"
    assert cfg.effective_host_probe == "nvidia-smi"
    assert not cfg.simulated


def test_k3s_defaults() -> None:
    cfg = parse_config({"gpu-lab:cluster": "k3s"}, env={})
    assert cfg.settings(K3sSettings).version == "v1.34.1+k3s1"
    assert cfg.operator.toolkit is True and cfg.operator.nri_plugin is False
    assert cfg.smoke_runtime_class == "nvidia"
    nri = parse_config({"gpu-lab:cluster": "k3s", "gpu-lab:k3sNriPlugin": "true"}, env={})
    assert nri.operator.nri_plugin is True and nri.smoke_runtime_class is None


def test_existing_resolves_path_and_current_context(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path)
    cfg = parse_config(
        {"gpu-lab:cluster": "existing", "gpu-lab:expectedGpus": "2"}, env={"KUBECONFIG": f"{path}:/other"}
    )
    own = cfg.settings(ExistingSettings)
    assert own.kubeconfig_path == str(path) and own.kube_context == "kind-gpu"
    assert own.expected_gpus == 2 and cfg.effective_host_probe == "off"
    assert cfg.smoke_runtime_class is None and not cfg.simulated
    sim = parse_config(
        {
            "gpu-lab:cluster": "existing",
            "gpu-lab:expectedGpus": "2",
            "gpu-lab:kubeconfigPath": str(path),
            "gpu-lab:simulatedOperands": "true",
        },
        env={},
    )
    assert sim.simulated and sim.settings(ExistingSettings).simulated_operands


@pytest.mark.parametrize(
    "context", ["arn:aws:eks:us-west-2:123456789012:cluster/gpu", "gke_proj_us-central1-a_gpu"]
)
def test_managed_cluster_context_names_are_accepted(tmp_path: Path, context: str) -> None:
    raw = {
        "gpu-lab:cluster": "existing",
        "gpu-lab:expectedGpus": "8",
        "gpu-lab:kubeconfigPath": str(_kubeconfig(tmp_path)),
        "gpu-lab:kubeContext": context,
    }
    assert parse_config(raw, env={}).settings(ExistingSettings).kube_context == context


def test_existing_keys_are_ignored_by_other_variants(tmp_path: Path) -> None:
    raw = {
        "gpu-lab:kubeconfigPath": "/does/not/exist",
        "gpu-lab:kubeContext": "x",
        "gpu-lab:expectedGpus": "0",
    }
    cfg = parse_config(raw, env={})
    # Another variant's settings: the existing variant's are not even there.
    assert not isinstance(cfg.variant_settings, ExistingSettings)
    with pytest.raises(TypeError, match="not ExistingSettings"):
        cfg.settings(ExistingSettings)


def test_existing_default_path_is_home_kube_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ConfigError, match=r"from gpu-lab:kubeconfigPath default") as err:
        parse_config({"gpu-lab:cluster": "existing", "gpu-lab:expectedGpus": "1"}, env={})
    assert str(tmp_path / ".kube" / "config") in str(err.value)
    (tmp_path / ".kube").mkdir()
    _kubeconfig(tmp_path).rename(tmp_path / ".kube" / "config")
    cfg = parse_config({"gpu-lab:cluster": "existing", "gpu-lab:expectedGpus": "1"}, env={})
    assert cfg.settings(ExistingSettings).kubeconfig_path == str(tmp_path / ".kube" / "config")


# --- the operator's toolkit: "auto" fits the node, an explicit value is kept ------------------
@pytest.mark.parametrize(
    ("cluster", "toolkit", "on"),
    [
        # minikube --gpus=all runs the nvidia runtime as its node's Docker default already.
        ("minikube", None, False),
        ("minikube", "auto", False),
        ("minikube", "true", True),
        ("minikube", "false", False),
        ("k3s", None, True),
        ("k3s", "false", False),
        ("sim", None, True),
        ("sim", "false", False),
        ("kind", None, False),
        ("kind", "false", False),
    ],
)
def test_toolkit_auto_follows_the_variant_and_an_explicit_value_wins(
    cluster: str, toolkit: str | None, on: bool
) -> None:
    raw = {"gpu-lab:cluster": cluster, **({"gpu-lab:toolkit": toolkit} if toolkit else {})}
    assert parse_config(raw, env={}).operator.toolkit is on


def test_toolkit_true_is_still_refused_on_kind_and_nonsense_everywhere() -> None:
    with pytest.raises(ConfigError, match=r"toolkit=true with cluster=kind"):
        parse_config({"gpu-lab:cluster": "kind", "gpu-lab:toolkit": "TRUE"}, env={})
    with pytest.raises(ConfigError, match=r"toolkit='maybe' is not one of auto, true, false"):
        parse_config({"gpu-lab:toolkit": "maybe"}, env={})


def test_k3s_nri_plugin_needs_the_toolkit_on_not_merely_unset_false() -> None:
    with pytest.raises(ConfigError, match=r"k3sNriPlugin=true needs toolkit=true"):
        parse_config(
            {"gpu-lab:cluster": "k3s", "gpu-lab:k3sNriPlugin": "true", "gpu-lab:toolkit": "false"}, env={}
        )
    cfg = parse_config({"gpu-lab:cluster": "k3s", "gpu-lab:k3sNriPlugin": "true"}, env={})
    assert cfg.operator.toolkit is True
