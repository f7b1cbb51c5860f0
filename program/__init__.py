"""The Pulumi program under ``__main__.py``: the edge and the Lab component.

:mod:`~program.edge` (config parsed with every variant, the host probed and checked before any
resource) and :mod:`~program.lab` (``gpulab:lab:Lab``: the whole lab, top down, with the
chosen variant passed in). ``__main__.py`` asks ``variants.registry`` for the variant and wires
the two.

May import: everything below it (``variants``, ``components``, ``gpulab``). Nothing but
``__main__.py`` and the tests imports it.
"""
