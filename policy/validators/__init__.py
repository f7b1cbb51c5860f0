"""The gpu-lab checklist policy pack: every policy, as plain functions tests can call.

``policy/__main__.py`` only assembles :func:`build_policies` into a ``PolicyPack`` (building
one starts a gRPC server and never returns, so nothing here builds one). ``policy/README.md``
lists the policies, their levels and the pack config.

Layout: one policy per module, under a folder that says what it governs:
``release/`` (the GPU Operator's Helm release: ``chart_pinned``, ``driver_disabled``,
``namespace``, ``chart_source``, ``toolkit_fits_runtime``), ``smoke/`` (the smoke Pod:
``gpu_limit``, ``restart_never``, ``image_pinned``, ``cuda_fits_host``), ``secrets/``
(``no_plaintext_secrets``),
``device_plugin/`` (``single_owner``), ``compute/`` (the compute Pod: ``check_configured``),
``release/`` also ``toolkit_redundant`` (advisory) and ``operand_images_pinned``; each defines
its check and its ``SPEC``. The six checklist items share one check factory in
:mod:`~policy.validators.checklist_items`. A variant's own policies come from the variant
(``VariantSpec.policies``: minikube's on its ``minikube start``, variants/minikube/policies.py),
wrapped by :mod:`~policy.validators.variant_policies`.
:mod:`~policy.validators.pack` orders the specs and builds the pulumi-policy objects.
Shared: :mod:`~policy.validators.findings` (statuses, :class:`Finding`, the ledger),
:mod:`~policy.validators.props` (reading props; unknown values, "not evaluated"),
:mod:`~policy.validators.spec` (:class:`Spec`, schema fragments),
:mod:`~policy.validators.stack_view` (stack resources), :mod:`~policy.validators.adapters`
(spec to engine report) and :mod:`~policy.validators.tokens` (type tokens); the first
fixes (表 2) are :mod:`gpulab.core.fixes`, the lab's one place for them.

Shape. Each policy is a :class:`Spec`: a stable kebab-case name, an imperative
description, a default enforcement level, a config schema whose ``default`` values are the
expected values, and a *check*: a pure function returning :class:`Finding` objects with a
status (``pass`` / ``fail`` / ``not-evaluated`` / ``not-observable-in-simulation``), the
observed value, the expected value and the first fix (the chapter's troubleshooting table,
表 2, where it has a row for the symptom; the chapter's own step otherwise). The adapters
(:func:`validate_resource`, :func:`validate_stack`) turn findings into engine reports:

* ``fail``: ``report_violation`` at the policy's level (mandatory by default), message
  ``[<item>] observed: ...; expected: ...; first fix: ...``.
* ``not-evaluated`` / ``not-observable-in-simulation``: never a violation and never a pass.
  The policy marks itself not applicable with the reason (the engine's policy summary then
  counts it neither passed nor failed), and the advisory policy ``checklist-unverified``,
  which runs last, reports one advisory line per such finding, so the reason is printed
  without blocking. pulumi-policy 1.21 offers no other way to show a non-failure: a
  ``report_violation`` carries the policy's own level, ``not_applicable`` reasons are not
  printed by the CLI, and an ``UnknownValueError`` is printed as "can't run policy ... during
  preview", which is wrong after a deployment.
* A resource policy whose input is unknown at preview re-raises the SDK's
  ``UnknownValueError``; pulumi-policy prints that as an advisory "can't run policy ...
  during preview" line, and the policy runs again, with known inputs, during ``up``.

Host facts for the CUDA check. A resource policy sees one resource, so
``smoke-image-cuda-fits-host`` is a stack policy; stack validation also runs at preview.
At preview a custom resource's state is empty when its provider's config is unknown (the
Kubernetes provider's kubeconfig comes from the cluster command), so it reads component
outputs, which the program registers with known values: host facts from pack config
(``hostMaxCuda``, ``hostDriverVersion``) when given, else the ``HostProbe`` component
(``maxCuda``, ``driverVersion``; ``source: off`` means no facts), else the stack's
``hostMaxCuda``/``hostDriverVersion`` exports; the image from the smoke Pod's spec when
known, else the ``SmokeTest`` component's ``image``, else the ``smokeImage`` export. No
facts: "not evaluated". ``single-device-plugin-owner`` is a stack policy for the same
reason (two resources), reading the GpuOperator component's ``components`` at preview.

Secrets. Policies receive secret inputs already unwrapped (pulumi-policy deserializes the
engine's secret envelopes into plain values and does not mark them), so a policy cannot
tell a secret by looking at a value. ``no-plaintext-secrets`` compares each stack config
value marked secret (from the engine's ``ConfigureStack``, see :mod:`policy.stack_context`)
with every argv element of the lab's local commands, every Helm value and every smoke Pod
command, argument and env value; the message names the config key, never the value.
"""

from policy.validators.adapters import validate_resource, validate_stack
from policy.validators.findings import FAIL, LEDGER, NOT_EVALUATED, NOT_OBSERVABLE, PASS, UNKNOWN, Finding
from policy.validators.pack import (
    PACK_NAME,
    SPECS,
    UNVERIFIED_POLICY,
    build_policies,
    spec,
    validate_unverified,
)
from policy.validators.props import has_unknown, plain
from policy.validators.release.toolkit_fits_runtime import (
    EMBEDDED_CONTAINERD,
    check_toolkit_runtime,
)
from policy.validators.smoke.cuda_fits_host import derive_max_cuda
from policy.validators.spec import Spec
from policy.validators.tokens import (
    T_COMMAND,
    T_COMPUTE,
    T_GPU_OPERATOR,
    T_HOST_PROBE,
    T_POD,
    T_RELEASE,
    T_SMOKE,
    T_STACK,
)

__all__ = [
    "EMBEDDED_CONTAINERD",
    "FAIL",
    "LEDGER",
    "NOT_EVALUATED",
    "NOT_OBSERVABLE",
    "PACK_NAME",
    "PASS",
    "SPECS",
    "T_COMMAND",
    "T_COMPUTE",
    "T_GPU_OPERATOR",
    "T_HOST_PROBE",
    "T_POD",
    "T_RELEASE",
    "T_SMOKE",
    "T_STACK",
    "UNKNOWN",
    "UNVERIFIED_POLICY",
    "Finding",
    "Spec",
    "build_policies",
    "check_toolkit_runtime",
    "derive_max_cuda",
    "has_unknown",
    "plain",
    "spec",
    "validate_resource",
    "validate_stack",
    "validate_unverified",
]
