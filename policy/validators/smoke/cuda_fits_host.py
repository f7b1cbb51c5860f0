"""``smoke-image-cuda-fits-host``: the smoke image's CUDA is one the host driver supports.

A stack policy: the image and the host facts come from different resources (the package
:mod:`policy.validators` says where each is read from, at preview and after)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from gpulab.core import cuda, fixes
from gpulab.core.names import SMOKE_POD
from gpulab.core.outputs import LabOutputs, OutputsError
from policy.stack_context import StackContext
from policy.validators.findings import FAIL, NOT_EVALUATED, PASS, Finding
from policy.validators.props import _known, dig
from policy.validators.spec import _STR, MANDATORY, Settings, Spec
from policy.validators.stack_view import Res, _of_type, _stack_outputs, lab_outputs
from policy.validators.tokens import (
    T_HOST_PROBE,
    T_POD,
    T_SMOKE,
)


def fix_cuda(image: str, needed: str | None, max_cuda: str | None, key: str = "smokeImage") -> str:
    """The first fix for an image the driver may not run (表 2, :func:`gpulab.core.fixes.cuda_image`),
    set through config ``key`` (``smokeImage``, ``computeImage``)."""
    return fixes.cite(fixes.cuda_image(image, needed, max_cuda, key), fixes.CUDA_NEWER)


def derive_max_cuda(driver: str) -> str | None:
    """Newest CUDA X.Y in :data:`gpulab.core.cuda.MIN_LINUX_DRIVER` that ``driver`` supports."""
    fitting = []
    for version in cuda.MIN_LINUX_DRIVER:
        try:
            if cuda.driver_supports(driver, version):
                fitting.append(version)
        except ValueError:
            return None
    return max(fitting, key=cuda.parse_version) if fitting else None


@dataclass(frozen=True)
class HostFacts:
    """The host driver and max CUDA the policy compares with, and where they came from."""

    driver: str | None
    max_cuda: str | None
    origin: str


def host_facts(resources: Sequence[Res], cfg: Settings) -> HostFacts | None:
    """Host driver and max CUDA, from pack config, the HostProbe component or the stack
    exports (in that order); None when no source has them."""
    driver, max_cuda = cfg.get("hostDriverVersion") or None, cfg.get("hostMaxCuda") or None
    if driver or max_cuda:
        origin = "pack config"
    else:
        origin = ""
        for probe in _of_type(resources, T_HOST_PROBE):
            if probe.props.get("source") == "off":
                continue
            d, m = probe.props.get("driverVersion"), probe.props.get("maxCuda")
            if _known(d) or _known(m):
                driver, max_cuda = (d if _known(d) else None), (m if _known(m) else None)
                origin = f"host probe ({probe.props.get('source')})"
                break
        if not origin:
            outputs = _outputs(resources)
            d, m = outputs.host_driver_version, outputs.host_max_cuda
            if (d or m) and outputs.host_probe_source != "off":
                driver, max_cuda = d, m
                origin = "stack outputs"
    if not driver and not max_cuda:
        return None
    if not max_cuda and driver:
        derived = derive_max_cuda(str(driver))
        if derived:
            max_cuda = derived
            origin += f"; max CUDA {derived} derived from driver {driver} (CUDA release notes table 3)"
    return HostFacts(str(driver) if driver else None, str(max_cuda) if max_cuda else None, origin)


def _outputs(resources: Sequence[Res]) -> LabOutputs:
    """The typed stack exports; empty when they have the wrong shape (the checklist's policies
    report that, naming every key)."""
    try:
        return lab_outputs(resources, None)[0]
    except OutputsError:
        return LabOutputs()


def smoke_images(resources: Sequence[Res], cfg: Settings) -> tuple[list[str], str | None]:
    """The smoke Pod's images and the URN to attribute them to: the Pod's spec when known,
    else the SmokeTest component's ``image``, else the ``smokeImage`` export."""
    pod_name = str(cfg.get("podName") or SMOKE_POD)
    for pod in _of_type(resources, T_POD):
        if dig(pod.props, "metadata", "name") != pod_name:
            continue
        images = [dig(c, "image") for c in dig(pod.props, "spec", "containers") or []]
        if images and all(isinstance(i, str) for i in images):
            return [str(i) for i in images], pod.urn
    for smoke in _of_type(resources, T_SMOKE):
        image = smoke.props.get("image")
        if isinstance(image, str):
            return [image], smoke.urn
    image = _outputs(resources).smoke_image
    return ([image], _stack_outputs(resources)[1]) if image else ([], None)


def check_cuda_fits(resources: list[Res], cfg: Settings, ctx: StackContext) -> list[Finding]:
    """``smoke-image-cuda-fits-host``: one finding per smoke image."""
    item = "smoke-image-cuda-fits-host"
    images, urn = smoke_images(resources, cfg)
    facts = host_facts(resources, cfg)
    if not images:
        if not _of_type(resources, T_POD) and not _of_type(resources, T_SMOKE):
            return []
        return [
            Finding(
                item,
                NOT_EVALUATED,
                "the smoke image is not known yet",
                "image CUDA <= host max CUDA",
                fix_cuda("", None, None),
                urn,
            )
        ]
    return [image_cuda_finding(item, image, facts, urn) for image in images]


def image_cuda_finding(
    item: str, image: str, facts: HostFacts | None, urn: str | None, key: str = "smokeImage"
) -> Finding:
    """Whether ``image``'s CUDA (its tag: :func:`gpulab.core.cuda.image_cuda_version`) fits the
    host's max CUDA: pass, fail (naming the newest tag that fits), or not evaluated (no host
    facts, or no CUDA X.Y in the tag). ``key``: the config key named in the fix."""
    need = cuda.image_cuda_version(image)
    if facts is None or facts.max_cuda is None:
        reason = (
            "no host facts: the host probe is off and pack config gives neither hostMaxCuda nor "
            "hostDriverVersion"
        )
        return Finding(
            item,
            NOT_EVALUATED,
            f"{reason} (image {image})",
            "image CUDA <= host max CUDA",
            fix_cuda(image, need, None, key),
            urn,
        )
    expected = f"image CUDA <= {facts.max_cuda}"
    if need is None:
        return Finding(
            item,
            NOT_EVALUATED,
            f"image {image} carries no CUDA X.Y in its tag (not a tagged nvidia/cuda or cuda-sample image)",
            expected,
            fix_cuda(image, None, facts.max_cuda, key),
            urn,
        )
    newest = cuda.newest_fitting_tag(image, facts.max_cuda)
    observed = (
        f"image {image} needs CUDA {need}; host "
        f"{'driver ' + facts.driver if facts.driver else '(driver not given)'} supports CUDA "
        f"{facts.max_cuda} at most (from {facts.origin})"
    )
    fits = cuda.cuda_fits(need, facts.max_cuda)
    if not fits:
        observed += f"; newest tag that fits: {newest or 'none known'}"
    return Finding(
        item,
        PASS if fits else FAIL,
        observed,
        f"{expected}; newest fitting tag {newest or 'none known'}",
        fix_cuda(image, need, facts.max_cuda, key),
        urn,
    )


SPEC: Final = Spec(
    "smoke-image-cuda-fits-host",
    "Use a smoke image whose CUDA version the host driver supports.",
    MANDATORY,
    "stack",
    check_cuda_fits,
    {
        "hostMaxCuda": {**_STR, "description": "the host's max CUDA (X.Y); overrides the host probe"},
        "hostDriverVersion": {
            **_STR,
            "description": "the host's driver version; overrides the host probe",
        },
        "podName": {**_STR, "default": SMOKE_POD},
    },
)
