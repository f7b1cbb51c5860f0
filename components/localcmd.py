"""``LocalCommand``: run a local command on create and another on delete.

This is the lab's stand-in for ``pulumi_command.local.Command``. The pulumi-command
provider is not served by the Go module proxy this project builds its toolchain from
(every version of ``github.com/pulumi/pulumi-command/provider`` answers 403), so the
same semantics are given by a Pulumi *dynamic provider* (``pulumi.dynamic``, part of the
Pulumi SDK):

* ``create`` runs on create and on every replacement; its stdout is an output.
* ``delete`` runs on delete, with the environment the create ran with.
* any change to ``create``, ``environment``, ``dir`` or ``triggers`` replaces the resource;
  with ``delete_before_replace=True`` the old one is deleted first (a command that
  re-creates the same named thing, e.g. a minikube profile, must never run create-then-delete).
* a change to ``delete`` alone is an in-place update that runs nothing.

Commands are argv lists (no shell), so nothing a user configures is ever parsed by a
shell; secrets travel in ``environment`` only, never in argv.

Errors: a non-zero exit raises :class:`CommandError` carrying the exit code and the last
lines of stderr, which the engine shows as the resource's failure.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider, UpdateResult

#: Inputs whose change replaces the resource.
REPLACE_KEYS = ("create", "environment", "dir", "triggers")
TAIL_LINES = 25


class CommandError(RuntimeError):
    """A local command exited non-zero; the message holds argv[0], the code and stderr's tail."""


def run_argv(
    argv: Sequence[str],
    env: Mapping[str, str] | None,
    cwd: str | None,
    timeout: int | None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with ``env`` added to the current environment; raise on failure.

    Raises:
        CommandError: the program is missing, timed out (``timeout`` seconds) or exited
            non-zero; the message names the command and quotes stderr's last lines.
    """
    full_env = dict(os.environ)
    full_env.update(env or {})
    try:
        proc = subprocess.run(
            list(argv),
            env=full_env,
            cwd=cwd or None,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except FileNotFoundError as exc:
        raise CommandError(f"{argv[0]}: not found ({exc}); is it installed and on PATH?") from exc
    except subprocess.TimeoutExpired as exc:
        raise CommandError(f"{' '.join(argv[:3])} ... timed out after {timeout}s") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-TAIL_LINES:])
        raise CommandError(f"`{' '.join(argv[:4])} ...` exited {proc.returncode}:\n{tail}")
    return proc


class _LocalCommandProvider(ResourceProvider):
    """Dynamic provider behind :class:`LocalCommand` (module-level so it pickles by reference)."""

    def _run(self, props: dict[str, Any], key: str) -> str:
        argv = props.get(key)
        if not argv:
            return ""
        proc = run_argv(
            argv,
            props.get("environment") or {},
            props.get("dir"),
            props.get("timeout"),
            props.get("stdin"),
        )
        return proc.stdout

    def create(self, props: dict[str, Any]) -> CreateResult:
        stdout = self._run(props, "create")
        outs = dict(props)
        outs["stdout"] = stdout
        return CreateResult(id_=props.get("name") or "cmd", outs=outs)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [k for k in REPLACE_KEYS if olds.get(k) != news.get(k)]
        changed = replaces or [
            k for k in ("delete", "timeout", "stdin", "name") if olds.get(k) != news.get(k)
        ]
        return DiffResult(
            changes=bool(changed),
            replaces=replaces,
            delete_before_replace=bool(news.get("deleteBeforeReplace")),
        )

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        outs = dict(news)
        outs["stdout"] = olds.get("stdout", "")
        return UpdateResult(outs=outs)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        self._run(props, "delete")


class LocalCommand(pulumi.dynamic.Resource):
    """A command run on this machine at create, another at delete (see module docstring).

    Args:
        name: the Pulumi resource name.
        create: argv run on create/replace; its stdout is the ``stdout`` output.
        delete: argv run on delete (optional); must succeed when the thing is already gone.
        environment: variables added to the process environment (wrap secrets in
            ``pulumi.Output.secret``; they never appear on a command line).
        dir: working directory.
        triggers: any values whose change should replace (re-run) the command.
        timeout: seconds before the command is killed and the step fails.
        stdin: text fed to the command's standard input.
        delete_before_replace: run the old delete before the new create on replacement.
        secret_stdout: mark ``stdout`` secret (e.g. it carries a kubeconfig).
        purpose: a stable label for readers of the state, e.g. the policy pack
            (``"minikube-start"``, ``"sim-cluster"``, ``"operator-gate"``, ``"smoke-check"``).
    Outputs:
        stdout (str): what ``create`` printed.
    """

    stdout: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        create: pulumi.Input[Sequence[pulumi.Input[str]]],
        delete: pulumi.Input[Sequence[pulumi.Input[str]]] | None = None,
        environment: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None,
        dir: pulumi.Input[str] | None = None,
        triggers: pulumi.Input[Sequence[Any]] | None = None,
        timeout: int | None = None,
        stdin: pulumi.Input[str] | None = None,
        delete_before_replace: bool = False,
        secret_stdout: bool = False,
        purpose: str = "",
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        secret_outs = (["environment"] if environment is not None else []) + (
            ["stdout"] if secret_stdout else []
        )
        opts = pulumi.ResourceOptions.merge(
            opts,
            pulumi.ResourceOptions(
                delete_before_replace=delete_before_replace or None,
                additional_secret_outputs=secret_outs or None,
            ),
        )
        super().__init__(
            _LocalCommandProvider(),
            name,
            {
                "name": name,
                "purpose": purpose,
                "create": create,
                "delete": delete,
                "environment": environment,
                "dir": dir,
                "triggers": triggers,
                "timeout": timeout,
                "stdin": stdin,
                "deleteBeforeReplace": delete_before_replace,
                "stdout": None,
            },
            opts,
        )
