"""gpu-lab's checklist policy pack (``pulumi preview|up --policy-pack policy``).

A package so the pack's modules import as ``policy.*`` both in the pack process (whose
``__main__`` puts the project root on ``sys.path``) and in the tests. See README.md.

At the edge, beside the program: may import ``variants.registry`` (and so the variants),
``gpulab``; not ``program``. Nothing of the program imports it.
"""
