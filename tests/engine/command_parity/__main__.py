"""Parity program: ``pulumi_command.local.Command`` resources described by stack config.

Config ``resources`` is a JSON object, name -> spec, in creation order. A spec holds
``local.Command`` inputs by their Python names (create, update, delete, triggers, dir,
environment, interpreter, stdin, logging, asset_paths) plus:

- ``secret_environment``: more environment entries, each value an ``Output.secret``;
- ``create_from``: ``{"resource": other, "template": "... {} ..."}``: ``create`` is the
  template with ``{}`` replaced by the other resource's stdout (unknown in a first preview);
- ``trigger_resources``: names of earlier resources appended to ``triggers`` (as resources);
- ``secret_stdout``: ``additional_secret_outputs=["stdout"]``;
- ``delete_before_replace``, ``timeout`` (custom create/update/delete timeouts, e.g. "2s").

Each resource's stdout is exported as ``<name>_stdout``.
"""

import json

import pulumi
from pulumi_command import local

INPUTS = (
    *("create", "update", "delete", "triggers", "dir", "environment", "interpreter", "stdin", "logging"),
    "asset_paths",
)

made: dict[str, local.Command] = {}
for name, spec in json.loads(pulumi.Config().get("resources") or "{}").items():
    args = {k: spec[k] for k in INPUTS if k in spec}
    if "secret_environment" in spec:
        args["environment"] = {
            **spec.get("environment", {}),
            **{k: pulumi.Output.secret(v) for k, v in spec["secret_environment"].items()},
        }
    if "create_from" in spec:
        src, template = made[spec["create_from"]["resource"]], spec["create_from"]["template"]
        args["create"] = src.stdout.apply(lambda s, t=template: t.replace("{}", s))
    if "trigger_resources" in spec:
        args["triggers"] = [*spec.get("triggers", []), *(made[n] for n in spec["trigger_resources"])]
    timeout = spec.get("timeout")
    opts = pulumi.ResourceOptions(
        additional_secret_outputs=["stdout"] if spec.get("secret_stdout") else None,
        delete_before_replace=spec.get("delete_before_replace"),
        custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout, delete=timeout)
        if timeout
        else None,
    )
    made[name] = local.Command(name, opts=opts, **args)
    pulumi.export(f"{name}_stdout", made[name].stdout)
