"""The component resources every variant shares, and the command layer.

:mod:`~components.command` (every local command: an argv, no shell), :mod:`~components.cluster`
(what a cluster yields, and the command-made clusters' shape), :mod:`~components.host_probe`,
:mod:`~components.gpu_operator`, :mod:`~components.smoke`, :mod:`~components.compute`,
:mod:`~components.dcgm` and :mod:`~components.benchmark`. A component that needs something of
the variant declares it as a protocol over one facet (``gpu_operator.OperatorVariant``: the
operator facet) and gets that facet passed in.

May import: ``gpulab`` (not :mod:`ops`). Never ``variants`` or ``program`` (above it).
"""
