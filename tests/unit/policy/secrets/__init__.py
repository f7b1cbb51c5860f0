"""Tests of :mod:`policy.validators.secrets`, mirroring its modules."""
