"""Tests of :mod:`policy.validators.device_plugin`, mirroring its modules."""
