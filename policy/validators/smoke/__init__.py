"""Policies on the smoke Pod and its image (one per module)."""
