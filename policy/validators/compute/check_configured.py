"""``compute-check-configured``: the compute Pod is one that can show a GPU computing.

A stack policy: the Pod's spec and the host facts come from different resources (as for
``smoke-image-cuda-fits-host``). The spec is the ``gpu-compute`` Pod's when known, else the
``ComputeCheck`` component's ``podSpec`` (registered with known values, so it is read at
preview too). One finding per rule:

* every container requests a GPU: ``resources.limits`` ``nvidia.com/gpu`` (or the MIG
  resource the smoke Pod asks for, ``nvidia.com/mig-...``) >= 1, or with ``gpuStack: dra`` a
  request of the Pod's ResourceClaim (``resources.claims``), or that container runs
  vectorAdd with no GPU (the Pod has one vectorAdd container per GPU, ``vectoradd-0`` ...,
  one GPU each: any number of containers passes);
* ``restartPolicy: Never``: vectorAdd runs once and the Pod must end ``Succeeded``;
* each image (one finding per distinct image, naming its containers) pinned by a tag other
  than ``latest`` or by a ``@sha256`` digest;
* each image's CUDA fits the host's max CUDA (:func:`~policy.validators.smoke.cuda_fits_host.
  image_cuda_finding`, with the host facts read as there), or the runtime refuses to start it
  (``unsatisfied condition: cuda>=X.Y``).

No compute Pod and no ``ComputeCheck`` (``computeCheck`` off): nothing to check; the
checklist item ``compute-works`` says "not tested".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from gpulab.core.names import COMPUTE_POD, DEFAULT_COMPUTE_IMAGE
from policy.stack_context import StackContext
from policy.validators.findings import FAIL, NOT_EVALUATED, PASS, Finding
from policy.validators.props import dig, has_unknown, show
from policy.validators.smoke.cuda_fits_host import host_facts, image_cuda_finding
from policy.validators.smoke.image_pinned import image_pin
from policy.validators.spec import _STR, MANDATORY, Settings, Spec
from policy.validators.stack_view import Res, _of_type
from policy.validators.tokens import T_COMPUTE, T_POD

ITEM: Final = "compute-check-configured"
#: Extended resources that are a GPU (the device plugin's; MIG strategies name slices).
_GPU_PREFIXES: Final = ("nvidia.com/gpu", "nvidia.com/mig-")


def compute_spec(resources: Sequence[Res], pod_name: str) -> tuple[dict[str, Any] | None, str | None, bool]:
    """``(spec, urn, present)``: the compute Pod's spec when known (the Pod's, else the
    ComputeCheck component's ``podSpec``), the URN to attribute findings to, and whether a
    compute Pod or component is in the stack at all."""
    present, urn = False, None
    for pod in _of_type(resources, T_POD):
        if dig(pod.props, "metadata", "name") != pod_name:
            continue
        present, urn = True, pod.urn
        spec = pod.props.get("spec")
        if isinstance(spec, dict) and spec.get("containers") and not has_unknown(spec):
            return spec, pod.urn, True
    for comp in _of_type(resources, T_COMPUTE):
        present, urn = True, urn or comp.urn
        spec = comp.props.get("podSpec")
        if isinstance(spec, dict) and not has_unknown(spec):
            return spec, comp.urn, True
    return None, urn, present


def _gpus(limits: Any) -> int:
    """GPUs requested in one container's limits (0 when none or not a whole number)."""
    total = 0
    for key, value in (limits or {}).items() if isinstance(limits, dict) else ():
        if str(key).startswith(_GPU_PREFIXES):
            try:
                total += int(str(value))
            except ValueError:
                continue
    return total


def check_compute_configured(resources: list[Res], cfg: Settings, ctx: StackContext) -> list[Finding]:
    """``compute-check-configured``: the four rules of the module docstring (resources: the
    stack's; cfg: the policy's settings, ``podName`` and the host facts' overrides)."""
    spec, urn, present = compute_spec(resources, str(cfg.get("podName") or COMPUTE_POD))
    if not present:
        return []
    if spec is None:
        return [
            Finding(ITEM, NOT_EVALUATED, "the compute Pod's spec is not known yet", "a known spec", "", urn)
        ]
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    limits = {str(c.get("name")): dig(c, "resources", "limits") for c in containers}
    # gpuStack dra: a container's GPU is a request of the Pod's claim (resources.claims[].request).
    claimed = {str(c.get("name")): dig(c, "resources", "claims") for c in containers}
    has_gpu = {n: _gpus(limits[n]) >= 1 or bool(claimed[n]) for n in limits}
    findings = [
        Finding(
            ITEM,
            PASS if has_gpu and all(has_gpu.values()) else FAIL,
            "limits: " + (", ".join(f"{n}: {show(v)}" for n, v in limits.items()) or "no containers"),
            "every container with resources.limits nvidia.com/gpu >= 1 (the resource the smoke Pod asks "
            "for; one per vectorAdd container)",
            "request one GPU per container as components/compute.py pod_spec does; a container "
            "without it gets no GPU (and a Pod without any is scheduled anywhere)",
            urn,
        ),
        Finding(
            ITEM,
            PASS if spec.get("restartPolicy") == "Never" else FAIL,
            f"restartPolicy {show(spec.get('restartPolicy'))}",
            "restartPolicy 'Never' (vectorAdd runs once; the Pod must end Succeeded)",
            "set spec.restartPolicy: Never; with Always a finished vectorAdd is restarted into "
            "CrashLoopBackOff",
            urn,
        ),
    ]
    facts = host_facts(resources, cfg)
    by_image: dict[str, list[str]] = {}
    for c in containers:  # one vectorAdd container per GPU: one finding per image, not per GPU
        by_image.setdefault(str(c.get("image") or ""), []).append(str(c.get("name")))
    for image, names in by_image.items():
        tag, digest = image_pin(image)
        findings.append(
            Finding(
                ITEM,
                PASS if digest or (tag is not None and tag != "latest") else FAIL,
                f"container{'s' if len(names) > 1 else ''} {', '.join(names)}: image {image!r}",
                "image pinned by a tag other than latest, or by @sha256 digest",
                f"scripts/pulumi config set gpu-lab:computeImage {DEFAULT_COMPUTE_IMAGE} (NVIDIA's sample) "
                "or "
                "<repo>@sha256:<digest>",
                urn,
            )
        )
        findings.append(image_cuda_finding(ITEM, image, facts, urn, key="computeImage"))
    return findings


SPEC: Final = Spec(
    ITEM,
    "Give the compute Pod a GPU, restartPolicy Never and a pinned image whose CUDA the host supports.",
    MANDATORY,
    "stack",
    check_compute_configured,
    {
        "hostMaxCuda": {**_STR, "description": "the host's max CUDA (X.Y); overrides the host probe"},
        "hostDriverVersion": {**_STR, "description": "the host's driver version; overrides the host probe"},
        "podName": {**_STR, "default": COMPUTE_POD},
    },
)
