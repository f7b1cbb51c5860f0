"""Small readers over ``kubectl get -o json`` items: names, timestamps, quantities, statuses."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from gpulab.diagnose.record import Json


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _name(obj: Json) -> str:
    return str(_get(obj, "metadata", "name") or "?")


def _ns(obj: Json) -> str:
    return str(_get(obj, "metadata", "namespace") or "default")


def _last_line(text: str | None) -> str:
    if not text:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _one_line(text: str, limit: int = 400) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _event_time(event: Json) -> str:
    for path in (
        ("lastTimestamp",),
        ("series", "lastObservedTime"),
        ("eventTime",),
        ("firstTimestamp",),
        ("metadata", "creationTimestamp"),
    ):
        value = _get(event, *path)
        if value:
            return str(value)
    return ""


def _quantity(value: Any) -> int:
    # Extended resources are whole numbers; kubectl prints them as strings ("1").
    try:
        return int(str(value))
    except ValueError:
        return 0


def _creation(obj: Json) -> str:
    return str(_get(obj, "metadata", "creationTimestamp") or "")


def _ds_ready(ds: Json) -> tuple[int, int]:
    st = ds.get("status") or {}
    return int(st.get("desiredNumberScheduled") or 0), int(st.get("numberReady") or 0)


def _pod_obj(pod: Json, container: str | None = None) -> str:
    base = f"pod {_ns(pod)}/{_name(pod)}"
    return f"{base}/container {container}" if container else base


def _container_image(pod: Json, container: str) -> str | None:
    spec = pod.get("spec") or {}
    for c in list(spec.get("initContainers") or []) + list(spec.get("containers") or []):
        if c.get("name") == container:
            image = c.get("image")
            return str(image) if image else None
    return None


def _status_texts(cs: Json) -> list[str]:
    texts = []
    for path in (
        ("state", "waiting", "message"),
        ("state", "terminated", "message"),
        ("lastState", "terminated", "message"),
        ("state", "terminated", "reason"),
        ("lastState", "terminated", "reason"),
    ):
        value = _get(cs, *path)
        if value:
            texts.append(str(value))
    return texts


def _parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as the API server writes it (``"2026-11-29T10:01:00Z"``, maybe
    with fractions or an offset) as an aware UTC datetime; None when absent or unreadable."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _duration(seconds: float) -> str:
    """``"2h 5m"``, ``"14m 5s"``, ``"40s"``: whole seconds, the two largest units."""
    total = max(0, int(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")]
    while len(parts) > 1 and parts[0][0] == 0:
        parts.pop(0)
    return " ".join(f"{n}{unit}" for n, unit in parts[:2])


def _condition(obj: Json, kind: str) -> Json | None:
    """The status condition of type ``kind`` (``"Initialized"``, ``"Ready"``...), or None."""
    for cond in _get(obj, "status", "conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return cond
    return None
