"""API reads that bypass the ``kubernetes`` client's models: the bytes the API server sent.

The client turns every answer into its generated models (or, for text, its own decoding),
and that round trip is where it loses what the lab must see: kubernetes 36 returns a Pod
log as the repr of its bytes, ``"b'...'"`` (kubernetes-client/python#2596), earlier clients
parse a log that reads as JSON and return its Python repr (#811, #1354), and a model drops
the fields it does not know and refuses objects its generated checks reject (a CRD whose
``status.conditions`` is null: #1733). :func:`pod_log` and :func:`read_json` ask the client
for the raw answer (``_preload_content=False``) and decode it here. Both take a bound method
of a client API object (``CoreV1Api``, ``ApiextensionsV1Api``, ...) or that object, and raise
the client's ``kubernetes.client.rest.ApiException`` for an answer outside 2xx.

May import: the standard library, and the client's ``ApiException`` (the client object is passed in).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def pod_log(core: Any, name: str, namespace: str, **params: Any) -> str:
    """The log of Pod ``namespace/name`` as text, decoded as UTF-8 with undecodable bytes
    replaced. ``core``: a ``CoreV1Api``; ``params``: its ``read_namespaced_pod_log`` keywords
    (``container``, ``tail_lines``, ``previous``, ``_request_timeout``).

    Raises:
        kubernetes.client.rest.ApiException: no such Pod or container, or no log served.
    """
    response = core.read_namespaced_pod_log(name, namespace, _preload_content=False, **params)
    return bytes(response.data or b"").decode("utf-8", errors="replace")


def read_json(call: Callable[..., Any], *args: Any, **params: Any) -> Any:
    """``call(*args, **params)`` (a client API method: ``ext.read_custom_resource_definition``,
    ``ext.list_custom_resource_definition``, ...) answered as the JSON the API server sent:
    dicts with the API's own camelCase keys and every field, as ``kubectl get -o json``.

    Raises:
        kubernetes.client.rest.ApiException: the API server answered outside 2xx.
        ValueError: the answer is not JSON.
    """
    response = call(*args, _preload_content=False, **params)
    return json.loads(bytes(response.data or b"") or b"null")


def raw_get(
    api: Any, path: str, query: list[tuple[str, str]] | None = None, timeout: Any = 5
) -> tuple[int, bytes]:
    """``GET path`` on the API server as (HTTP status, body bytes), whatever the status: the
    client raises its ``ApiException`` for a status outside 2xx, whose status and body are
    returned here instead. ``timeout``: seconds, or (connect, read) seconds. A server that does
    not answer at all (no connection, TLS failure: status 0) raises the client's error."""
    from kubernetes.client.rest import ApiException

    try:
        response = api.call_api(
            path,
            "GET",
            query_params=query or [],
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
            _request_timeout=timeout,
        )
    except ApiException as exc:
        if not exc.status:
            raise
        body = exc.body
        return int(exc.status), body if isinstance(body, bytes) else str(body or "").encode()
    return int(response.status), bytes(response.data or b"")
