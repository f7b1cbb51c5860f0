"""MIG on the nodes: the ``mixed`` strategy's ``nvidia.com/mig-*`` resources against what the
lab expects (``allocatable-zero`` variant ``mig-not-registered``, ``allocatable-mismatch``
variant ``mig``), and the ``single`` strategy's invalid configuration (``allocatable-zero``
variant ``mig-invalid``: GFD labels ``nvidia.com/gpu.product=<model>-MIG-INVALID`` when the
GPUs differ in MIG mode or profiles, NVIDIA/k8s-device-plugin ``internal/lm/mig-strategy.go``).
"""

from __future__ import annotations

from collections.abc import Mapping

from gpulab.config.mig import mig_totals
from gpulab.core import fixes
from gpulab.core.names import SIMULATED_ANNOTATION
from gpulab.diagnose.context import _Ctx
from gpulab.diagnose.fields import _get, _name
from gpulab.diagnose.record import Diagnosis
from gpulab.diagnose.roles import _ROLE_RANK

_CHECK_MIG = (
    "kubectl get nodes -o json | grep -E 'nvidia.com/mig'; on the host: nvidia-smi -L "
    "(the MIG devices) and nvidia-smi mig -lgi"
)


def _obj(ctx: _Ctx) -> str:
    names = ", ".join(_name(n) for n in ctx.nodes)
    return f"node {names}" if len(ctx.nodes) == 1 else f"nodes {names}"


def _simulated(ctx: _Ctx) -> bool:
    return bool(ctx.nodes) and all(
        (_get(n, "metadata", "annotations") or {}).get(SIMULATED_ANNOTATION) == "true" for n in ctx.nodes
    )


def _mixed_diagnoses(ctx: _Ctx, expected: Mapping[str, int] | None) -> list[tuple[Diagnosis, int]]:
    """``mixed``: every expected MIG resource at its count (unknown: some MIG resource > 0)."""
    if not ctx.nodes:
        return []
    have = mig_totals(ctx.nodes)
    rank = _ROLE_RANK["allocatable"]
    shown = ", ".join(f"{r}={n}" for r, n in sorted(have.items())) or "none"
    want = ", ".join(f"{r}={n}" for r, n in sorted((expected or {}).items())) or "some nvidia.com/mig-* > 0"
    sim_fix = (
        "simulated lab: the kwok node advertises simMigDevices "
        "(scripts/pulumi config get gpu-lab:simMigDevices)"
    )
    if not have or not any(have.values()):
        return [
            (
                Diagnosis(
                    row="allocatable-zero",
                    object=_obj(ctx),
                    reason="migStrategy mixed, but no node advertises an nvidia.com/mig-* resource",
                    detail=f"MIG resources: {shown}; expected {want}",
                    fix=sim_fix
                    if _simulated(ctx)
                    else "MIG must be enabled and MIG devices created on the GPU: "
                    f"{_CHECK_MIG}; then {fixes.device_plugin_logs()}",
                    variant="mig-not-registered",
                ),
                rank,
            )
        ]
    if expected is not None and dict(have) != dict(expected):
        return [
            (
                Diagnosis(
                    row="allocatable-mismatch",
                    object=_obj(ctx),
                    reason=f"MIG resources {shown}, expected {want}",
                    detail="expected from gpu-lab:expectedMigDevices, else the host's nvidia-smi -L",
                    fix=sim_fix
                    if _simulated(ctx)
                    else f"compare with the host's MIG devices: {_CHECK_MIG}; fix expectedMigDevices "
                    "(scripts/pulumi config set gpu-lab:expectedMigDevices 1g.18gb=7) or the MIG layout "
                    "(kubectl label node <node> nvidia.com/mig.config=<profile set> --overwrite)",
                    variant="mig",
                ),
                rank + 1,
            )
        ]
    return []


def _single_invalid(ctx: _Ctx) -> list[tuple[Diagnosis, int]]:
    """``single``: GFD's ``-MIG-INVALID`` product label on a node."""
    out: list[tuple[Diagnosis, int]] = []
    for node in ctx.nodes:
        product = str((_get(node, "metadata", "labels") or {}).get("nvidia.com/gpu.product") or "")
        if product.endswith("-MIG-INVALID"):
            out.append(
                (
                    Diagnosis(
                        row="allocatable-zero",
                        object=f"node {_name(node)}",
                        reason="migStrategy single, but the node's GPUs differ in MIG mode or MIG profiles: "
                        "the device plugin advertises 0",
                        detail=f"label nvidia.com/gpu.product={product}",
                        fix="scripts/pulumi config set gpu-lab:migStrategy mixed && make lab; or give every "
                        "GPU MIG with one profile (nvidia.com/mig.config=all-1g.18gb)",
                        variant="mig-invalid",
                    ),
                    _ROLE_RANK["allocatable"] - 1,
                )
            )
    return out


def _mig_diagnoses(
    ctx: _Ctx, strategy: str, expected: Mapping[str, int] | None
) -> list[tuple[Diagnosis, int]]:
    """The MIG rows for ``strategy`` (``none``: none)."""
    if strategy == "mixed":
        return _mixed_diagnoses(ctx, expected)
    if strategy == "single":
        return _single_invalid(ctx)
    return []
