"""Reading the ``minikube start`` a ``minikube-start`` command runs: its argv and flags."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any, Final

from gpulab.core.argv import ArgvError, decode
from policy.validators.props import require_known
from policy.validators.tokens import T_COMMAND
from variants.minikube import ctl as minikube_ctl
from variants.registry import step_of, step_of_module


def cli_flags(argv: Sequence[str]) -> dict[str, str]:
    """``--k=v``, ``--k v`` and bare ``--k`` (``"true"``) of an argv; ``-p X`` as ``profile``."""
    flags: dict[str, str] = {}
    i = 0
    while i < len(argv):
        tok = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if tok.startswith("--"):
            key, eq, val = tok[2:].partition("=")
            if eq:
                flags[key] = val
            elif nxt is not None and not nxt.startswith("-"):
                flags[key] = nxt
                i += 1
            else:
                flags[key] = "true"
        elif tok == "-p" and nxt is not None:
            flags["profile"] = nxt
            i += 1
        i += 1
    return flags


def command_argv(create: Sequence[str] | str | None) -> list[str] | None:
    """A Command's argv: its create string decoded (gpulab.core.argv), or a list as is; None if unreadable."""
    if create is None:
        return None
    if isinstance(create, str):
        try:
            return decode(create)
        except ArgvError:
            return None
    return [str(a) for a in create]


def minikube_start_argv(create: Sequence[str] | str) -> list[str] | None:
    """The ``minikube start`` argv a ``minikube-start`` command runs, or None if unreadable.

    ``python -m variants.minikube.ctl up --profile P --cpus N ...`` is expanded through
    :func:`variants.minikube.ctl.start_argv` (what it really runs); a direct ``minikube start
    ...`` argv is taken as is. ``create`` is the Command's JSON-encoded create (or an argv).
    """
    args = command_argv(create)
    if args is None:
        return None
    if len(args) > 3 and args[1:4] == ["-m", "variants.minikube.ctl", "up"]:
        flags = cli_flags(args[args.index("up") + 1 :])
        try:
            spec = minikube_ctl.StartSpec(
                profile=flags["profile"],
                cpus=int(flags["cpus"]),
                memory_mib=int(flags["memory-mib"]),
                kubernetes_version=flags["kubernetes-version"],
                gpus=flags.get("gpus", minikube_ctl.StartSpec.gpus),
            )
        except (KeyError, ValueError):
            return None
        return minikube_ctl.start_argv(spec)
    for i, tok in enumerate(args[:-1]):
        if step_of_module(os.path.basename(tok), args[i + 1]) == "minikube-start":
            return args[i:]
    return None


_MEMORY: Final = re.compile(r"^(\d+(?:\.\d+)?)\s*([a-z]*)$", re.IGNORECASE)
# minikube reads --memory with Docker's RAMInBytes: binary units, a bare number is MB.
_MIB_PER_UNIT: Final = {
    "": 1.0,
    "b": 1 / (1024 * 1024),
    **{u: 1 / 1024 for u in ("k", "kb", "ki", "kib")},
    **{u: 1.0 for u in ("m", "mb", "mi", "mib")},
    **{u: 1024.0 for u in ("g", "gb", "gi", "gib")},
    **{u: 1024.0 * 1024 for u in ("t", "tb", "ti", "tib")},
}


def memory_mib(text: str) -> float | None:
    """minikube's ``--memory`` value in MiB (``8192mb``, ``8g``, ``8192``); None if unreadable."""
    m = _MEMORY.match(text.strip())
    if not m or m.group(2).lower() not in _MIB_PER_UNIT:
        return None
    return float(m.group(1)) * _MIB_PER_UNIT[m.group(2).lower()]


def _minikube_start(rtype: str, props: dict[str, Any]) -> tuple[bool, list[str] | None]:
    """``(is a minikube-start command, the minikube argv it runs or None if unreadable)``."""
    if rtype != T_COMMAND:
        return False, None
    create = require_known(props.get("create"), "create")
    if step_of(create) != "minikube-start":
        return False, None
    return True, minikube_start_argv(create)
