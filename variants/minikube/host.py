"""Runs the minikube lab's host preflight: the commands, then gpulab.host.preflight's checks.

I/O lives here; every decision is a pure function in gpulab.host.preflight, tested on recorded
output. Docker is asked through the live daemon (``docker info``), not config files, so a
runtime that is configured in ``/etc/docker/daemon.json`` but not loaded is caught.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab.core import run as cmd
from gpulab.core.findings import Finding
from gpulab.host import preflight
from variants.minikube import releases
from variants.minikube.settings import MinikubeSettings

if TYPE_CHECKING:
    from gpulab.config.lab import LabConfig

DAEMON_JSON = Path("/etc/docker/daemon.json")


def host_memory_mib(meminfo: str) -> int:
    """MemTotal from ``/proc/meminfo`` text, in MiB (0 when absent)."""
    for line in meminfo.splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return 0


def _bundled(version_output: str) -> str:
    """What the release in ``minikube version --short`` output bundles (its cri-dockerd), when
    variants/minikube/releases.py lists it; ``""`` otherwise."""
    first = next((line for line in version_output.splitlines() if line.strip()), "")
    words = first.split()
    try:
        found = releases.release(words[-1]) if words else None
    except ValueError:
        return ""
    return f"cri-dockerd {found.cri_dockerd}" if found else ""


def minikube_host_findings(cfg: LabConfig, run: cmd.Probe = cmd.probe) -> list[Finding]:
    """Every host check for the minikube lab (passing ones included), in order."""
    own = cfg.settings(MinikubeSettings)
    findings: list[Finding] = []
    rc, out, err = run(["docker", "info", "--format", "{{json .}}"])
    ctx_rc, ctx_out, _ = run(["docker", "context", "show"])
    context = ctx_out.strip() if ctx_rc == 0 and ctx_out.strip() else "default"
    daemon = DAEMON_JSON.read_text() if DAEMON_JSON.is_file() else None
    findings.append(preflight.check_docker_info(rc, out, daemon, context=context, stderr=err))
    meminfo = Path("/proc/meminfo").read_text() if Path("/proc/meminfo").exists() else ""
    findings.append(
        preflight.check_resources(os.cpu_count() or 0, host_memory_mib(meminfo), own.cpus, own.memory_mib)
    )
    mrc, mout, merr = run(["minikube", "version", "--short"])
    if mrc is not None:
        findings.append(preflight.check_minikube_version(mout or merr, _bundled(mout or merr)))
    if own.docker_selftest:
        src, sout, serr = run(["docker", "run", "--rm", "--gpus", "all", cfg.smoke_image, "nvidia-smi"])
        findings.append(preflight.check_docker_gpu_selftest(src, sout, serr, cfg.smoke_image))
    return findings
