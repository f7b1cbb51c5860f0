"""Policies on the GPU Operator's Helm release (one per module)."""
