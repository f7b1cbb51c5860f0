"""Policies on the compute check's Pod (one per module)."""
