"""Tests of :mod:`policy.validators.smoke`, mirroring its modules."""
