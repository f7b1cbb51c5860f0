"""Policies on secret config values (one per module)."""
