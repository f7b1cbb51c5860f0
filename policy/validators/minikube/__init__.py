"""Policies on the ``minikube start`` command (one per module)."""
