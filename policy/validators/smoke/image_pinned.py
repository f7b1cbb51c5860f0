"""``smoke-pod-image-pinned``: the smoke Pod's image is pinned by tag or digest."""

from __future__ import annotations

import re
from typing import Any, Final

from gpulab.core.names import DEFAULT_PROBE_IMAGE, SMOKE_POD
from policy.stack_context import StackContext
from policy.validators.findings import Finding, _finding
from policy.validators.smoke.pod import _smoke_containers
from policy.validators.spec import _STR, MANDATORY, Settings, Spec

_DIGEST: Final = re.compile(r"@sha256:[0-9a-f]{64}$")


def image_pin(image: str) -> tuple[str | None, str | None]:
    """``(tag, digest)`` of an image reference; either may be None."""
    digest_m = _DIGEST.search(image)
    digest = digest_m.group(0)[1:] if digest_m else None
    name = image.split("@", 1)[0]
    slash, colon = name.rfind("/"), name.rfind(":")
    tag = name[colon + 1 :] if colon > slash else None
    return tag, digest


def check_smoke_image_pinned(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    containers = _smoke_containers(rtype, props, cfg)
    if containers is None:
        return []
    findings = []
    for c in containers:
        image = str(c.get("image") or "")
        tag, digest = image_pin(image)
        ok = bool(digest) or (tag is not None and tag != "latest")
        findings.append(
            _finding(
                "smoke-pod-image-pinned",
                ok,
                f"container {c.get('name')}: image {image!r}",
                "image pinned by a tag other than latest, or by @sha256 digest",
                f"scripts/pulumi config set gpu-lab:smokeImage {DEFAULT_PROBE_IMAGE} (the chapter's image) "
                "or "
                "<repo>@sha256:<digest>",
            )
        )
    return findings


SPEC: Final = Spec(
    "smoke-pod-image-pinned",
    "Pin the smoke Pod's image by a tag other than latest, or by digest.",
    MANDATORY,
    "resource",
    check_smoke_image_pinned,
    {"podName": {**_STR, "default": SMOKE_POD}},
)
