"""Secrets out of text and JSON the lab writes for people (the debug bundle).

Two layers, both applied by :meth:`Redactor.text` and :meth:`Redactor.json`:

* **Known values.** Whatever a source marks secret is learned first (:meth:`Redactor.learn`):
  the stack's secret outputs and config (``pulumi stack output``/``config --show-secrets``,
  where the plain listing prints ``[secret]``), every field of the kubeconfig (and the PEM
  inside its base64 fields), the data of the Kubernetes Secrets in the lab's namespaces.
  Each learned value is replaced wherever it appears, also base64-encoded or escaped inside a
  JSON string (a value copied into a Pod's env, an annotation, a log line).
* **Shapes.** PEM blocks, base64-encoded PEM (``LS0tLS1CRUdJTi...``), JWTs (service-account
  tokens), ``Bearer`` tokens, kubeconfig credential lines (``client-key-data: ...``,
  ``token: ...``), and in JSON any string under a key that names a credential (``token``,
  ``password``, ``client-key-data``, ...) or an env entry whose name does (``API_TOKEN``).

Every replacement is :data:`REDACTED`. :meth:`Redactor.leaks` says which learned values a
text still holds (the bundle checks its whole archive with it before writing).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Any, Final

import yaml

from gpulab.core import yamlio

REDACTED: Final = "[redacted]"
#: Shorter values are not learned: replacing "true" or "1" everywhere would destroy the text.
MIN_LEARNED: Final = 8

_PEM: Final = re.compile(r"-----BEGIN [A-Z0-9 ]+-----.*?(?:-----END [A-Z0-9 ]+-----|\Z)", re.S)
_PEM_B64: Final = re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]*")
_JWT: Final = re.compile(r"eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}")
_BEARER: Final = re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}")
_CREDENTIAL_LINE: Final = re.compile(
    r"(?im)^(\s*-?\s*\"?(?:client-key-data|client-certificate-data|certificate-authority-data"
    r"|token|id-token|refresh-token|password|auth)\"?\s*[:=]\s*)(\S.*)$"
)
#: JSON keys (and env names) whose string value is a credential.
_SECRET_KEY: Final = re.compile(
    r"(?i)(^|[-_.])(token|password|passwd|secret|credentials?|private[-_]?key|api[-_]?key"
    r"|client-key(-data)?|client-certificate(-data)?|certificate-authority-data)($|[-_.])"
    r"|(token|password|secret|apikey)$"
)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _forms(value: str) -> tuple[str, ...]:
    """How a value can appear in text: as is, base64-encoded, escaped inside a JSON string."""
    escaped = json.dumps(value)[1:-1]
    return (value, _b64(value)) + ((escaped,) if escaped != value else ())


def _unb64(text: str) -> str | None:
    try:
        return base64.b64decode(text, validate=True).decode()
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None


class Redactor:
    """Learns secret values, then scrubs text and JSON (see module docstring)."""

    def __init__(self) -> None:
        self._values: set[str] = set()

    @property
    def learned(self) -> int:
        """How many distinct values were learned (base64 forms not counted)."""
        return len(self._values)

    def learn(self, value: Any) -> None:
        """Learn a secret: a string, or every string inside a JSON value."""
        if isinstance(value, str):
            for piece in (value, value.strip()):
                if len(piece) >= MIN_LEARNED and piece != REDACTED:
                    self._values.add(piece)
        elif isinstance(value, Mapping):
            for v in value.values():
                self.learn(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                self.learn(v)

    def learn_kubeconfig(self, text: str) -> None:
        """Learn a kubeconfig: the whole text, every user and cluster field, and the decoded
        content of its ``*-data`` fields."""
        self.learn(text)
        try:
            doc = yamlio.load(text)
        except yaml.YAMLError:
            return
        if not isinstance(doc, Mapping):
            return
        for section, inner in (("users", "user"), ("clusters", "cluster")):
            for entry in doc.get(section) or []:
                fields = entry.get(inner) if isinstance(entry, Mapping) else None
                if not isinstance(fields, Mapping):
                    continue
                for key, value in fields.items():
                    if section == "clusters" and key == "server":
                        continue  # the address is not a secret; the bundle needs it
                    self.learn(value)
                    if isinstance(value, str) and str(key).endswith("-data"):
                        self.learn(_unb64(value))

    def learn_secret_data(self, data: Mapping[str, Any] | None) -> None:
        """Learn a Kubernetes Secret's ``data`` (base64) and its decoded values (but not a
        service-account token's ``namespace``: the namespace's name is no secret)."""
        for key, value in (data or {}).items():
            if isinstance(value, str) and key != "namespace":
                self.learn(value)
                self.learn(_unb64(value))

    def text(self, text: str) -> str:
        """``text`` with every learned value and every secret shape replaced."""
        for value in sorted(self._values, key=len, reverse=True):
            for form in _forms(value):
                if form in text:
                    text = text.replace(form, REDACTED)
        text = _PEM.sub(REDACTED, text)
        text = _PEM_B64.sub(REDACTED, text)
        text = _JWT.sub(REDACTED, text)
        text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
        return _CREDENTIAL_LINE.sub(lambda m: m.group(1) + REDACTED, text)

    def json(self, value: Any, key: str = "") -> Any:
        """A deep copy of a JSON value, scrubbed: strings by :meth:`text`; a string under a
        credential key, or the ``value`` of an env entry with a credential name, replaced."""
        if isinstance(value, str):
            if value and key and _SECRET_KEY.search(key):
                return REDACTED
            return self.text(value)
        if isinstance(value, Mapping):
            out = {str(k): self.json(v, str(k)) for k, v in value.items()}
            name = value.get("name")
            if isinstance(name, str) and _SECRET_KEY.search(name) and isinstance(value.get("value"), str):
                out["value"] = REDACTED
            return out
        if isinstance(value, (list, tuple)):
            return [self.json(v, key) for v in value]
        return value

    def leaks(self, text: str) -> list[str]:
        """Learned values (shortened for display) that ``text`` still holds, plain or base64."""
        return [v[:4] + "..." for v in sorted(self._values) if v in text or _b64(v) in text]
