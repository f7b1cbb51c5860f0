"""The policy pack's entry point: assembles the PolicyPack from policy/validators.py.

Run by the engine through the language host as ``python -m pulumi.policy <engine>
<this directory>`` with the working directory set to this directory, using the project's
virtualenv (PulumiPolicy.yaml ``runtime.options.virtualenv: ../.venv``, resolved against
this directory by the official host and the offline stand-in alike). The project root goes
on ``sys.path`` first so ``policy.*`` and ``gpulab.*`` import.
Constructing the PolicyPack serves the engine and never returns.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pulumi_policy import EnforcementLevel, PolicyPack

from policy import stack_context, validators

# pulumi-policy 1.21 drops the ConfigureStack request (dry run, stack config, secret keys);
# record it for the policies that need it (policy/stack_context.py says why).
stack_context.install_configure_stack_hook()

PolicyPack(
    name=validators.PACK_NAME,
    policies=validators.build_policies(),
    enforcement_level=EnforcementLevel.MANDATORY,
)
