"""gpulab.core.rawapi: the API server's own bytes, not the client's models or decoding."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from gpulab.core.rawapi import pod_log, read_json


def test_pod_log_reads_raw_and_decodes_utf8_replacing_bad_bytes() -> None:
    """Not the client's decoding (kubernetes 36 returns "b'...'", kubernetes-client/python#2596;
    older ones turn a JSON line into a Python repr): the bytes the API server sent, as text."""
    seen: dict[str, Any] = {}

    class Core:
        def read_namespaced_pod_log(self, name: str, ns: str, **kw: Any) -> Any:
            seen.update(kw, name=name, ns=ns)
            return SimpleNamespace(data=b'{"a": "b"}\nGPU 0: H200 \xff\n')

    text = pod_log(Core(), "smoke", "default", container="c", tail_lines=5)
    assert text == '{"a": "b"}\nGPU 0: H200 \ufffd\n'
    assert seen == {
        "_preload_content": False,
        "container": "c",
        "tail_lines": 5,
        "name": "smoke",
        "ns": "default",
    }


def test_read_json_keeps_every_field_the_api_sent() -> None:
    """A field no client model knows (and a null the models refuse) comes back as sent."""
    body = b'{"metadata": {"name": "x"}, "spec": {"x-kubernetes-unknown": 1}, "status": {"conditions": null}}'

    def read(name: str, **kw: Any) -> Any:
        assert name == "x" and kw == {"_preload_content": False}
        return SimpleNamespace(data=body)

    assert read_json(read, "x") == {
        "metadata": {"name": "x"},
        "spec": {"x-kubernetes-unknown": 1},
        "status": {"conditions": None},
    }


def test_read_json_lets_the_clients_error_through_and_refuses_non_json() -> None:
    def missing(**kw: Any) -> Any:
        raise ApiException(status=404, reason="Not Found")

    with pytest.raises(ApiException):
        read_json(missing)
    with pytest.raises(ValueError):
        read_json(lambda **kw: SimpleNamespace(data=b"<html>"))
