"""hack/node/image.py: the real-node harness's OCI image layouts, made from local files."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
import json
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("node_image", ROOT / "hack" / "node" / "image.py")
assert _spec and _spec.loader
image = importlib.util.module_from_spec(_spec)
sys.modules["node_image"] = image
_spec.loader.exec_module(image)

#: ldd's output for the host nvidia-smi on Ubuntu 24.04 (the GPU machine), and a line for a
#: library it cannot find.
LDD = """\tlinux-vdso.so.1 (0x00007ffd6a1f2000)
\tlibpthread.so.0 => /lib/x86_64-linux-gnu/libpthread.so.0 (0x00007f3c1a2f0000)
\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f3c1a207000)
\tlibdl.so.2 => /lib/x86_64-linux-gnu/libdl.so.2 (0x00007f3c1a202000)
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f3c19ff0000)
\t/lib64/ld-linux-x86-64.so.2 (0x00007f3c1a31b000)
"""


def test_parse_ldd_keeps_libraries_and_loader_in_order() -> None:
    assert image.parse_ldd(LDD, "nvidia-smi") == [
        "/lib/x86_64-linux-gnu/libpthread.so.0",
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/lib/x86_64-linux-gnu/libdl.so.2",
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/lib64/ld-linux-x86-64.so.2",
    ]
    with pytest.raises(image.ImageError, match=r"nvidia-smi: ldd finds no libnvidia-ml.so.1"):
        image.parse_ldd(LDD + "\tlibnvidia-ml.so.1 => not found\n", "nvidia-smi")


def _layout(tar_path: Path) -> dict[str, bytes]:
    with tarfile.open(tar_path) as t:
        return {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_layout_is_an_oci_image_containerd_names_by_its_annotation(tmp_path: Path) -> None:
    prog = tmp_path / "prog"
    prog.write_bytes(b"#!/bin/sh\necho hi\n")
    prog.chmod(0o755)
    img = image.Image(
        "gpulab.local/node-smoke:1", {"/usr/local/bin/prog": prog}, ["PATH=/bin"], ["/usr/local/bin/prog"]
    )
    out = tmp_path / "img.tar"
    image.write_layout(image.build(img), out)
    files = _layout(out)
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads(files["index.json"])
    entry = index["manifests"][0]
    assert entry["annotations"] == {
        "io.containerd.image.name": "gpulab.local/node-smoke:1",
        "org.opencontainers.image.ref.name": "1",
    }
    # Every blob is stored under its own digest, with the size its descriptor says.
    for name, data in files.items():
        if name.startswith("blobs/sha256/"):
            assert hashlib.sha256(data).hexdigest() == name.rsplit("/", 1)[1]
    manifest = json.loads(files["blobs/sha256/" + entry["digest"].split(":")[1]])
    assert entry["size"] == len(files["blobs/sha256/" + entry["digest"].split(":")[1]])
    assert manifest["mediaType"] == image.MANIFEST_MEDIA
    config = json.loads(files["blobs/sha256/" + manifest["config"]["digest"].split(":")[1]])
    assert config["config"]["Entrypoint"] == ["/usr/local/bin/prog"]
    assert config["config"]["Env"] == ["PATH=/bin"]
    assert (config["os"], config["architecture"]) == ("linux", "amd64")
    layer = files["blobs/sha256/" + manifest["layers"][0]["digest"].split(":")[1]]
    raw = gzip.decompress(layer)
    # The config's diff_id is the digest of the uncompressed layer (OCI image config spec).
    assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(raw).hexdigest()]
    with tarfile.open(fileobj=io.BytesIO(raw)) as t:
        members = {m.name: m for m in t.getmembers()}
    assert members["usr/local/bin/prog"].mode == 0o755
    assert members["tmp"].mode == 0o1777 and members["usr/local/bin"].isdir()
    # The same files make the same image.
    again = tmp_path / "again.tar"
    image.write_layout(image.build(img), again)
    assert json.loads(_layout(again)["index.json"]) == index


def test_elf_files_bring_their_libraries(tmp_path: Path) -> None:
    files = image.with_libraries({"/bin/sh": Path("/bin/sh")}, [Path(sys.executable)])
    assert "/bin/sh" in files
    assert any(p.endswith("/libc.so.6") for p in files), files
    assert any("ld-linux" in p for p in files), files
    with pytest.raises(image.ImageError, match="no such ELF file"):
        image.with_libraries({}, [tmp_path / "absent"])


def test_cli_refuses_a_missing_file_and_a_relative_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "x.tar")
    assert image.main(["--name", "gpulab.local/x:1", "--out", out, "--add", f"/x={tmp_path / 'nope'}"]) == 1
    assert "no such file" in capsys.readouterr().err
    assert image.main(["--name", "gpulab.local/x:1", "--out", out, "--add", "x=/bin/sh"]) == 1
    assert "must be absolute" in capsys.readouterr().err
    assert image.main(["--name", "gpulab.local/x:1", "--out", out, "--add", "/bin/sh"]) == 0
    assert "gpulab.local/x:1 sha256:" in capsys.readouterr().out


def test_user_is_the_images_user(tmp_path: Path) -> None:
    """NFD's image runs as 65534:65534 (its Dockerfile's USER), and the chart's runAsNonRoot
    Pods need the image to say so; without --user the config has no User (root)."""
    out = tmp_path / "nfd.tar"
    args = ["--name", "gpulab.local/nfd:1", "--out", str(out), "--add", "/bin/sh"]
    assert image.main([*args, "--user", "65534:65534"]) == 0

    def config(path: Path) -> dict:
        files = _layout(path)
        digest = json.loads(files["index.json"])["manifests"][0]["digest"].split(":")[1]
        manifest = json.loads(files["blobs/sha256/" + digest])
        return json.loads(files["blobs/sha256/" + manifest["config"]["digest"].split(":")[1]])["config"]

    assert config(out)["User"] == "65534:65534"
    assert image.main(args) == 0
    assert "User" not in config(out)
