"""The ``nvidia-smi`` header (plain table or ``-q``, possibly inside a whole Pod log) and the
parse error every parser of :mod:`gpulab.host.nvsmi` raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from gpulab.core.errors import GpuLabError

_DRIVER_LABELS: Final = frozenset({"Driver", "KMD"})
_CUDA_LABELS: Final = frozenset({"CUDA", "CUDA UMD"})

# ``<Label> Version: <value>`` (table) or ``<Label> Version   : <value>`` (-q). Label words
# start with a letter, so a preceding version number such as ``NVIDIA-SMI 580.159.04`` never
# becomes part of a label. At most one space after the colon: an empty value must read as
# empty, not as the next field's label.
_FIELD_RE: Final = re.compile(
    r"(?P<label>[A-Za-z][A-Za-z0-9]*(?: [A-Za-z][A-Za-z0-9]*)*) Version[ \t]*:[ \t]?"
    r"(?P<value>[^\s|]*)"
)
_DRIVER_VERSION_RE: Final = re.compile(r"^\d+(?:\.\d+)+$")
_CUDA_VERSION_RE: Final = re.compile(r"^\d+\.\d+$")


class NvidiaSmiParseError(GpuLabError, ValueError):
    """``nvidia-smi`` output could not be read; the message quotes the offending line."""


@dataclass(frozen=True)
class SmiHeader:
    """Versions from the ``nvidia-smi`` header.

    ``driver_version`` is the kernel driver version, e.g. ``"580.159.04"``. ``cuda_version``
    is the newest CUDA ``"X.Y"`` the driver supports (not an installed toolkit), or ``None``
    when the driver prints no CUDA field (pre-CUDA-field drivers such as 384.90) or prints
    ``N/A`` (no CUDA driver library visible, e.g. a container without the compute capability).
    """

    driver_version: str
    cuda_version: str | None


def _ends_header(stripped: str) -> bool:
    """True for the first line after the header: table column headings or the -q GPU list."""
    if stripped.startswith(("|=", "Attached GPUs")):
        return True
    return stripped.startswith("|") and "Bus-Id" in stripped


def _header_fields(line: str) -> list[tuple[str, str]]:
    return [(m.group("label"), m.group("value")) for m in _FIELD_RE.finditer(line)]


def parse_header(text: str) -> SmiHeader:
    """Read the driver and CUDA versions from ``nvidia-smi`` or ``nvidia-smi -q`` output.

    ``text`` may be a whole smoke Pod log: lines before the header are skipped unless they
    look like a header. The header is found by its labels (``Driver``/``KMD`` ``Version`` and
    ``CUDA``/``CUDA UMD`` ``Version``), not by the ``NVIDIA-SMI`` token. A CUDA field with no
    driver field, outside the table box and the ``-q`` preamble, is taken for an application's
    own output and skipped. When several headers are present (nvidia-smi run twice), the
    first one wins.

    Raises:
        NvidiaSmiParseError: a header-looking line carries a label this parser does not know
            (e.g. ``Version:`` fields with unknown labels in the top box of the table, or a
            top-level ``... Version :`` line in a ``-q`` log), a version value is malformed,
            a CUDA field comes without a driver field, or no header is present at all (the
            message then quotes the first non-empty line, which is usually nvidia-smi's own
            error, e.g. ``NVIDIA-SMI has failed because ...``).
    """
    driver: str | None = None
    cuda: str | None = None
    cuda_seen = False
    header_started = False
    in_q_log = False
    first_line: str | None = None

    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            if header_started:
                break
            continue
        if first_line is None:
            first_line = stripped
        if "==NVSMI LOG==" in stripped:
            in_q_log = True
            continue
        if _ends_header(stripped):
            if header_started:
                break
            in_q_log = False
            continue
        fields = _header_fields(line)
        labels = {label for label, _ in fields}
        known = labels & (_DRIVER_LABELS | _CUDA_LABELS)
        is_box = stripped.startswith("|")
        is_q_top = in_q_log and not line[0].isspace()
        if not known:
            # A table header box or a -q preamble line we cannot read is an unknown header
            # format, not noise: guessing would report a wrong version.
            if (is_box and (fields or "NVIDIA-SMI" in stripped)) or (is_q_top and fields):
                raise NvidiaSmiParseError(f"unrecognised nvidia-smi header line: {stripped!r}")
            if header_started:
                break
            continue
        if not header_started and not (is_box or is_q_top) and not labels & _DRIVER_LABELS:
            # A lone "CUDA Version: 12.1" outside the table and the -q preamble, before any
            # driver field, is an application's own print (a smoke Pod log), not nvidia-smi's.
            continue
        if labels - known:
            raise NvidiaSmiParseError(
                f"nvidia-smi header line has unknown labels {sorted(labels - known)}: {stripped!r}"
            )
        header_started = True
        for label, value in fields:
            if label in _DRIVER_LABELS:
                if not _DRIVER_VERSION_RE.match(value):
                    raise NvidiaSmiParseError(
                        f"malformed driver version {value!r} in nvidia-smi header: {stripped!r}"
                    )
                if driver is not None and driver != value:
                    raise NvidiaSmiParseError(
                        f"nvidia-smi header gives two driver versions ({driver!r} and "
                        f"{value!r}): {stripped!r}"
                    )
                driver = value
            else:
                if value == "N/A":
                    parsed_cuda = None
                elif _CUDA_VERSION_RE.match(value):
                    parsed_cuda = value
                else:
                    raise NvidiaSmiParseError(
                        f"malformed CUDA version {value!r} in nvidia-smi header: {stripped!r}"
                    )
                if cuda_seen and cuda != parsed_cuda:
                    raise NvidiaSmiParseError(
                        f"nvidia-smi header gives two CUDA versions ({cuda!r} and "
                        f"{parsed_cuda!r}): {stripped!r}"
                    )
                cuda, cuda_seen = parsed_cuda, True

    if driver is not None:
        return SmiHeader(driver_version=driver, cuda_version=cuda)
    if header_started:
        raise NvidiaSmiParseError(
            f"nvidia-smi header has a CUDA version but no driver version; first line: {first_line!r}"
        )
    raise NvidiaSmiParseError(
        f"no nvidia-smi header (Driver Version / KMD Version) found; first non-empty line: {first_line!r}"
    )
