"""The component resources every variant shares, and the command layer.

:mod:`~components.command` (every local command: an argv, no shell), :mod:`~components.cluster`
(what a cluster yields, and the command-made clusters' shape), :mod:`~components.host_probe`,
:mod:`~components.gpu_operator`, :mod:`~components.smoke`, :mod:`~components.compute`,
:mod:`~components.dcgm` and :mod:`~components.benchmark`. A component that needs something of
the variant takes its record (gpulab.config.variant.VariantSpec: data, declared once below
here), or the one value of it it needs, passed in; none declares a protocol of its own.

May import: ``gpulab`` (not :mod:`ops`). Never ``variants`` or ``program`` (above it).
"""
