"""Contract: an existing cluster, what the lab leaves on it, and how it reads the kubeconfig.

The CRDs are read from the chart itself (``$GPULAB_CHART_PATH``); the rest from source only:
Helm's CRD rule, the operator's node label, the kubeconfig fields client-go resolves as files.
"""

from __future__ import annotations

from pathlib import Path

from variants.existing import ctl


def test_the_crds_the_release_leaves_are_the_chart_s(chart: Path) -> None:
    """gpu-operator chart v26.7.0 ``crds/`` (clusterpolicies, nvidiadrivers, gpuclusters,
    computedomains, computedomaincliques) and its node-feature-discovery subchart's ``crds/``.
    Helm installs ``crds/`` once and never upgrades or deletes them (helm.sh docs, "Custom
    Resource Definitions": no support for upgrading or deleting CRDs), so they are the
    ``leftovers`` of an existing cluster; the built-in list (used without a local chart) must
    equal what the chart ships."""
    assert ctl.chart_crds(chart, nfd=False) == sorted(ctl.OPERATOR_CRDS)
    assert ctl.chart_crds(chart, nfd=True) == sorted([*ctl.OPERATOR_CRDS, *ctl.NFD_CRDS])
    assert ctl.operator_crds(None, True) == ctl.chart_crds(chart, nfd=True)


def test_gpu_nodes_are_found_by_the_resource_or_the_operator_s_label() -> None:
    """NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go ``commonGPULabelKey =
    "nvidia.com/gpu.present"`` (internal/consts ``GPUPresentLabel``): the label the operator's
    node labelling sets on a GPU node; a node without it and without ``nvidia.com/gpu`` is not
    a GPU node."""
    labelled = {"metadata": {"name": "a", "labels": {"nvidia.com/gpu.present": "true"}}, "status": {}}
    plain = {"metadata": {"name": "b", "labels": {}}, "status": {"allocatable": {"cpu": "4"}}}
    assert [n["name"] for n in ctl.gpu_nodes([labelled, plain])] == ["a"]


def test_the_kubeconfig_fields_that_name_files() -> None:
    """k8s.io/client-go tools/clientcmd/api/v1 types.go: a cluster's ``certificate-authority``
    and a user's ``client-certificate``/``client-key`` may name files (relative to the
    kubeconfig's directory), each with an inline ``-data`` twin; the stack's kubeconfig
    secret inlines them (``minify``), so nothing on this host's disk is needed later."""
    assert ctl._FILE_FIELDS == (
        ("cluster", "certificate-authority", "certificate-authority-data"),
        ("user", "client-certificate", "client-certificate-data"),
        ("user", "client-key", "client-key-data"),
    )
