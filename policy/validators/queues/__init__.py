"""Policies of the queue layer (``queues: true``, components/queues.py)."""
