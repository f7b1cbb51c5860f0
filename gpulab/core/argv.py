"""One command line as JSON, run without a shell: the lab's ``pulumi-command`` interpreter.

``pulumi_command.local.Command`` appends its command string as one argument to its
``interpreter`` (default ``/bin/sh -c``). The lab never lets a shell parse a value a user
configured: each command is an argv list, JSON-encoded into that one string, and the
interpreter is :data:`INTERPRETER`, which decodes it and ``exec``s it. A profile name with
``;`` or ``$(...)`` in it reaches the program as one exact argument (config validation
refuses such names long before, too).

``python`` as ``argv[0]`` means the interpreter this module runs on: the project's
virtualenv, whose path stays out of the state and the diffs.

Every command the lab runs is a step named by its module and subcommand (:data:`STEPS`,
and each variant's ``steps`` and ``direct_steps``); :func:`step_of` says which, given the variants' own steps
(``variants.registry.step_of`` passes them in), for the policy pack and the tests.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Final

from gpulab.core.errors import GpuLabError

#: ``interpreter`` of every lab command: relative to the program directory, where the
#: engine starts the command provider (Pulumi.yaml pins the virtualenv to ``.venv``).
INTERPRETER: Final = [".venv/bin/python", "-m", "gpulab.core.argv"]

#: (module, subcommand) -> the step's stable name, for the lab's shared helpers; each
#: variant names its own helper's steps (``VariantSpec.steps``).
STEPS: Final[dict[tuple[str, str], str]] = {
    ("gpulab.kube", "gate"): "operator-gate",
    ("gpulab.kube", "smoke"): "smoke-check",
    ("gpulab.kube", "compute"): "compute-check",
    ("gpulab.kube", "benchmark"): "benchmark-result",
    ("gpulab.kube", "dcgm"): "dcgm-scrape",
    ("gpulab.kube", "access"): "fleet-access",
    ("gpulab.kube", "fleet"): "fleet-check",
    ("gpulab.kube.identity", "record"): "cluster-identity",
}


class ArgvError(GpuLabError, ValueError):
    """The command string is not a JSON list of strings."""


def encode(argv: Sequence[str]) -> str:
    """``["python", "-m", "x", "a b"]`` -> the JSON text the interpreter decodes."""
    return json.dumps([str(a) for a in argv])


def decode(text: str) -> list[str]:
    """The argv back from :func:`encode`'s text.

    Raises:
        ArgvError: not a non-empty JSON list of strings.
    """
    try:
        argv = json.loads(text)
    except ValueError as exc:
        raise ArgvError(f"not a JSON argv: {exc}") from exc
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise ArgvError(f"not a non-empty JSON list of strings: {text[:80]!r}")
    return argv


#: ``(module or tool, subcommand) -> step name or None``: the variants' steps, of their helper
#: modules (``variants.kind.ctl``, ``up``) and of tools a program might run directly
#: (``minikube``, ``start``: ``VariantSpec.direct_steps``).
VariantSteps = Callable[[str, str], "str | None"]


def command_argv(create: Sequence[str] | str | None) -> list[str] | None:
    """A Command's argv: its create string decoded (:func:`decode`), or a list as is; None if
    unreadable (the policies read commands this way)."""
    if create is None:
        return None
    if isinstance(create, str):
        try:
            return decode(create)
        except ArgvError:
            return None
    return [str(a) for a in create]


def step_of(command: str | None, variant_steps: VariantSteps = lambda module, sub: None) -> str | None:
    """The step name of an encoded command (``"minikube-start"``), or None: :data:`STEPS` for the
    lab's shared helpers, else ``variant_steps`` for a ``variants.*`` helper module or a tool
    run directly (its base name and first argument)."""
    if not command:
        return None
    try:
        argv = decode(command)
    except ArgvError:
        return None
    if len(argv) >= 4 and argv[1] == "-m":
        if argv[2].startswith("variants."):
            return variant_steps(argv[2], argv[3])
        return STEPS.get((argv[2], argv[3]))
    if len(argv) >= 2:
        return variant_steps(os.path.basename(argv[0]), argv[1])
    return None


def main(args: Sequence[str] | None = None) -> int:
    """Decode ``args[0]`` and replace this process with it (exit 2 on a bad argv, 127 if missing)."""
    args = list(sys.argv[1:] if args is None else args)
    if len(args) != 1:
        print("usage: python -m gpulab.core.argv '<JSON list of arguments>'", file=sys.stderr)
        return 2
    try:
        argv = decode(args[0])
    except ArgvError as exc:
        print(f"gpulab.core.argv: {exc}", file=sys.stderr)
        return 2
    if argv[0] == "python":
        argv[0] = sys.executable
    sys.stdout.flush()
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(
            f"gpulab.core.argv: cannot run {argv[0]}: {exc} (is it installed and on PATH?)", file=sys.stderr
        )
        return 127
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
