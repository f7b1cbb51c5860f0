"""scripts/env.sh: which backend, and why (the first lines of `make lab` print both)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def env_sh(home: Path, **extra: str) -> dict[str, str]:
    env = {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin", "GPULAB_STACK": "none", **extra}
    out = subprocess.run(
        ["bash", "-c", f". {ROOT}/scripts/env.sh && env -0"],
        capture_output=True,
        check=True,
        env=env,
        timeout=60,
    ).stdout
    return dict(item.split("=", 1) for item in out.decode().split("\0") if "=" in item)


def test_pulumi_backend_url_wins_and_says_so(tmp_path: Path) -> None:
    got = env_sh(tmp_path, PULUMI_BACKEND_URL="file:///srv/state")
    assert got["GPULAB_BACKEND"] == "file:///srv/state"
    assert got["GPULAB_BACKEND_REASON"] == "PULUMI_BACKEND_URL is set"


def test_the_current_login_is_used_and_named(tmp_path: Path) -> None:
    creds = tmp_path / ".pulumi" / "credentials.json"
    creds.parent.mkdir()
    creds.write_text(json.dumps({"current": "s3://team-state", "accounts": {}}))
    got = env_sh(tmp_path)
    assert got["GPULAB_BACKEND"] == "s3://team-state"
    assert got["GPULAB_BACKEND_REASON"] == f"your current `pulumi login` ({creds})"
    assert "PULUMI_BACKEND_URL" not in got  # the login is left to the CLI


@pytest.mark.parametrize("token", ["", "pul-123"])
def test_nothing_configured_is_the_labs_own_file_backend_or_the_cloud_with_a_token(
    tmp_path: Path, token: str
) -> None:
    got = env_sh(tmp_path, **({"PULUMI_ACCESS_TOKEN": token} if token else {}))
    if token:
        assert got["GPULAB_BACKEND"] == "https://api.pulumi.com"
        assert "PULUMI_ACCESS_TOKEN is set" in got["GPULAB_BACKEND_REASON"]
    else:
        assert got["GPULAB_BACKEND"] == f"file://{ROOT}/.state/pulumi"
        assert got["GPULAB_BACKEND_REASON"].startswith("no PULUMI_BACKEND_URL and no `pulumi login`")
