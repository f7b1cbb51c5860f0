"""Operations on a lab, run by ``scripts/lab``: ``make verify`` (:mod:`~ops.verify`),
``make debug-bundle`` (:mod:`~ops.bundle`, secrets removed by :mod:`~ops.redact`)
and the first step of ``make destroy`` (:mod:`~ops.teardown`).

At the edge, beside the program and the policy pack: may import every other package of
gpulab, and ``variants.registry`` (the variant a stack names is asked of it here). Nothing
imports this package.
"""
