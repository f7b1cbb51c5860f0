"""Policies on who runs the device plugin (one per module)."""
