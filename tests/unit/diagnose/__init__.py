"""Tests of :mod:`gpulab.diagnose`, one module per module of the package."""
