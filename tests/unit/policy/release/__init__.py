"""Tests of :mod:`policy.validators.release`, mirroring its modules."""
