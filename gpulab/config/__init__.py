"""The stack config, parsed once at the edge, and the settings it implies.

:mod:`~gpulab.config.variant` (a cluster variant's record, ``VariantSpec``, and the base of its
settings, ``VariantSettings``: declared once, here, so config parsing, the components and the
edge read the same record), :mod:`~gpulab.config.lab` (``parse_config`` -> the frozen
``LabConfig``; the variants' records passed in check their own keys, and the chosen one's
settings ride in ``LabConfig.variant_settings``, never read here), :mod:`~gpulab.config.gpus`
(the gate's grace, MIG, the smoke Pod's GPUs), :mod:`~gpulab.config.mig` (the MIG plan: what
the gate expects, what the smoke Pod asks for), :mod:`~gpulab.config.time_slicing` (the device
plugin's sharing config and its resource rename), :mod:`~gpulab.config.operand_images` (operand
images pinned in config). No Pulumi, no I/O beyond reading a chart path.

May import: :mod:`gpulab.core`. Never the variants (they are passed in) or anything above.
"""
