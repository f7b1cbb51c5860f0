"""Test support shared by the engine and end-to-end tests and the benchmark (never the product)."""
