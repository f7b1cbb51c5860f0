"""Tests of the checklist policy pack (:mod:`policy.validators`), mirroring its modules."""
