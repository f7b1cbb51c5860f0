"""Facts about this host and the checks on it, before any resource exists.

:mod:`~gpulab.host.probe` (the host probe: NVML, else nvidia-smi, or a shipped capture in
``captures/``), :mod:`~gpulab.host.facts` (``HostFacts``, the one record they all return),
:mod:`~gpulab.host.nvml` (the NVML binding) and :mod:`~gpulab.host.nvml_facts` (the facts
through it), :mod:`~gpulab.host.nvsmi` (nvidia-smi's output parsed),
:mod:`~gpulab.host.topology` (how the GPUs are linked) and :mod:`~gpulab.host.topology_probe`
(read from NVML, else ``nvidia-smi topo -m``), :mod:`~gpulab.host.preflight` (the host
checks: Docker, resources, nvidia-smi).

May import: :mod:`gpulab.core`, :mod:`gpulab.config`. Not :mod:`gpulab.diagnose` (its neighbour)
or anything above.
"""
