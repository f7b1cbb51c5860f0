"""The cluster variants: one folder per kind of cluster, behind one interface.

``variants/base.py`` is the interface (:class:`variants.base.Variant`: a record,
gpulab.config.variant.VariantSpec, and six verbs); ``variants/<name>/`` is
one variant (its own config keys in ``variants/<name>/settings.py``), and
``variants/registry.py`` is the only place that knows their names. The edge (the program's
entry, the policy pack, the operations' commands) asks the registry for the chosen variant and
passes it in; nothing below the edge imports the registry.

May import: ``components`` (the shared components a variant's own builds on) and ``gpulab``.
Never imported by ``components`` or ``gpulab`` (below the variants); a variant never imports
another variant.
"""
