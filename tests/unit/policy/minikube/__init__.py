"""Tests of :mod:`policy.validators.minikube`, mirroring its modules."""
