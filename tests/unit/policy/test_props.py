"""Reading props (:mod:`policy.validators.props`)."""

from __future__ import annotations

from pulumi_policy.proxy import unknown_checking_proxy

from policy import validators

from .harness import (
    UNK,
)


# --- reading props ------------------------------------------------------------------
def test_plain_turns_sdk_unknowns_into_UNKNOWN_without_raising() -> None:
    props = unknown_checking_proxy({"a": UNK, "b": {"c": [1, UNK]}, "d": "x"})
    p = validators.plain(props)
    assert p["a"] is validators.UNKNOWN and p["b"]["c"][1] is validators.UNKNOWN and p["d"] == "x"
    assert validators.has_unknown(p["b"]) and not validators.has_unknown(p["d"])
