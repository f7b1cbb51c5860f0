"""Operand images pinned in config, as the GPU Operator chart takes them.

Four config keys, each a full image reference (``registry/repository/name:tag``,
``...@sha256:<digest>`` or both) or empty (the chart's default for ``chartVersion``):

* ``devicePluginImage`` -> ``devicePlugin`` (chart v26.7.0 default, values.yaml:
  ``nvcr.io/nvidia`` / ``k8s-device-plugin`` / ``v0.20.0``);
* ``toolkitImage`` -> ``toolkit`` (``nvcr.io/nvidia/k8s`` / ``container-toolkit`` / ``v1.20.0``);
* ``dcgmExporterImage`` -> ``dcgmExporter`` (``nvcr.io/nvidia/k8s`` / ``dcgm-exporter`` /
  ``4.6.0-4.8.3-distroless``);
* ``validatorImage`` -> ``validator`` (``nvcr.io/nvidia`` / ``gpu-operator`` / the chart's
  appVersion).

The chart splits a reference into ``<operand>.repository`` (everything before the last
``/``), ``<operand>.image`` (the name) and ``<operand>.version``; the operator joins them
back as ``repository/image:version``, or ``repository/image@version`` when the version
starts with ``sha256:`` (the GPU Operator's ``imagePath``, api/nvidia/v1/clusterpolicy_types.go).
So a digest is passed as the version, and wins over a tag given with it (the tag is then
only a label in config).

Pure: no Pulumi, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

#: config key -> the chart's values key of that operand.
OPERANDS: Final[Mapping[str, str]] = {
    "devicePluginImage": "devicePlugin",
    "toolkitImage": "toolkit",
    "dcgmExporterImage": "dcgmExporter",
    "validatorImage": "validator",
}

# registry/path/name, then :tag and/or @sha256:<64 hex>; the registry may carry a port.
_REF: Final = re.compile(
    r"^(?P<repository>[a-z0-9]+(?:[._-][a-z0-9]+)*(?::\d+)?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*)"
    r"/(?P<image>[a-z0-9]+(?:[._-][a-z0-9]+)*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9._-]{0,127}))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?$"
)


@dataclass(frozen=True)
class OperandImage:
    """One pinned operand image: the chart's three values.

    Attributes:
        operand: the chart's values key (``devicePlugin``).
        ref: the reference as configured.
        repository: ``<operand>.repository`` (``nvcr.io/nvidia``).
        image: ``<operand>.image`` (``k8s-device-plugin``).
        version: ``<operand>.version``: the tag, or ``sha256:<digest>`` when a digest is given.
    """

    operand: str
    ref: str
    repository: str
    image: str
    version: str

    def helm_values(self) -> dict[str, str]:
        """``{"repository", "image", "version"}`` for the chart's ``<operand>`` section."""
        return {"repository": self.repository, "image": self.image, "version": self.version}


def parse_ref(operand: str, ref: str) -> OperandImage:
    """Split ``ref`` for the chart.

    Raises:
        ValueError: not ``registry/.../name`` with a tag (not ``latest``) or a ``@sha256``
            digest; the message says what is allowed.
    """
    m = _REF.match(ref)
    if not m:
        raise ValueError(
            f"{ref!r} is not a full image reference registry/repository/name:tag or "
            "...@sha256:<digest> (lowercase path, no spaces or shell characters)"
        )
    tag, digest = m.group("tag"), m.group("digest")
    if digest is None and (tag is None or tag == "latest"):
        raise ValueError(f"{ref!r} is not pinned: give a tag other than latest, or @sha256:<digest>")
    return OperandImage(operand, ref, m.group("repository"), m.group("image"), digest or str(tag))


def parse(get: Callable[[str], object], problems: list[str], namespace: str) -> tuple[OperandImage, ...]:
    """The pinned operand images among :data:`OPERANDS`' keys (``get(key)``: the value or
    ``""``); one line per bad value appended to ``problems`` (``<namespace>:<key>=...``)."""
    found: list[OperandImage] = []
    for key, operand in OPERANDS.items():
        ref = str(get(key) or "")
        if not ref:
            continue
        try:
            found.append(parse_ref(operand, ref))
        except ValueError as exc:
            problems.append(f"{namespace}:{key}={exc}")
    return tuple(found)


def exported(images: tuple[OperandImage, ...]) -> dict[str, str | None]:
    """The ``operandImages`` output: every operand, its configured reference or None (the
    chart's default for the chart version)."""
    pinned = {i.operand: i.ref for i in images}
    return {operand: pinned.get(operand) for operand in OPERANDS.values()}
