from tests.engine.conftest import project  # noqa: F401  (shared fixture)
