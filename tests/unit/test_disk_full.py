"""A full disk shows the "No space left on device" line and the fix, not a stack trace.

/dev/full answers every write with ENOSPC, as a full file system does: a file the step writes
is made a link to it.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from gpulab.core.errors import os_error_fix
from variants.sim.ctl import cli

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this machine")


def test_the_fix_of_enospc_asks_for_space() -> None:
    fix = os_error_fix(OSError(errno.ENOSPC, "No space left on device", "/x/y"))
    assert "free disk space" in fix and "/x/y" in fix


def test_sim_up_on_a_full_disk_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    from variants.sim.ctl import cluster

    workdir = tmp_path / "w"
    workdir.mkdir()
    (workdir / ".gpulab-simcluster").write_text("{}")
    (workdir / "logs").mkdir()
    (workdir / "logs" / "nvidia-smi.log").symlink_to("/dev/full")
    monkeypatch.setattr(cluster, "kube_version_of", lambda tools: "v1.36.3")
    monkeypatch.setattr(cluster.Tools, "locate", classmethod(lambda cls, bin_dir, required=(): cls(tmp_path)))
    code = cli.main(["up", "--name", "c", "--workdir", str(workdir)])
    err = capsys.readouterr().err
    assert code == 1
    assert "No space left on device" in err and "fix: free disk space" in err
    assert "Traceback" not in err
