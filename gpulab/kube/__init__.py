"""The cluster-side checks, run as ``python -m gpulab.kube <check>`` by the components.

:mod:`~gpulab.kube.cli` (the command: ``gate``, ``smoke``, ``compute``, ``dcgm``, ``benchmark``,
``ping``, ...), :mod:`~gpulab.kube.results` (what each check prints, one
typed record per check, which the components read back), :mod:`~gpulab.kube.client` (the API client and the
waits they share), :mod:`~gpulab.kube.gate` with :mod:`~gpulab.kube.gate_rules` (the readiness
gate), :mod:`~gpulab.kube.smoke` with :mod:`~gpulab.kube.smoke_gpus`, :mod:`~gpulab.kube.compute`
with :mod:`~gpulab.kube.gpu_isolation`, :mod:`~gpulab.kube.dcgm` with
:mod:`~gpulab.kube.dcgm_metrics`, :mod:`~gpulab.kube.benchmark` (the TFLOPS Pod's reader),
:mod:`~gpulab.kube.simulated` (the sim lab's ClusterPolicy status, written by the gate) and
:mod:`~gpulab.kube.crd_check` (``python -m gpulab.kube.crd_check``: CRDs before the release,
and with ``--values`` the compatibility checks of :mod:`~gpulab.kube.compat`: the chart's
``kubeVersion`` (:mod:`~gpulab.kube.kube_version`), the kinds it renders
(:mod:`~gpulab.kube.chart_apis`) against discovery, the ConfigMaps its values name).

May import: :mod:`gpulab.diagnose`, :mod:`gpulab.host`, :mod:`gpulab.config`,
:mod:`gpulab.core`. Not the verdict, the components, the variants or anything above.
"""
