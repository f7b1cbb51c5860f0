"""Checklist items with a module of their own: ``compute-works`` (:mod:`~.compute`),
``dcgm-reports-gpus`` (:mod:`~.dcgm`), ``pods-see-every-gpu`` (:mod:`~.gpus`), ``no-leftovers``
(:mod:`~.leftovers`) and ``allocatable-matches-gpus`` under MIG (:mod:`~.mig`).

May import what :mod:`gpulab.verdict` may; not :mod:`gpulab.verdict.checklist` (which imports them).
"""
