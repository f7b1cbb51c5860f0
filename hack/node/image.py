"""Build an OCI image layout (a tar) from files of this machine: the real-node harness's images.

Workplace only (hack/node): the lent GPU machine reaches no registry, so the harness's
images (the pod sandbox, the device plugin, the smoke image, the compute image) are made
there from its own files and imported with ``ctr -n k8s.io images import``. Each image is
one layer holding the files given and, for every ELF file among them, the shared libraries
and the dynamic loader ``ldd`` names (so a binary runs in an otherwise empty root).

The layout follows the OCI image spec v1.1 (image-layout.md: ``oci-layout``,
``index.json``, ``blobs/sha256/<digest>``; manifest.md, config.md): the index entry carries
``io.containerd.image.name`` (the full reference, which containerd's importer names the
image by, core/transfer/image/imagestore.go ``imageName``) and
``org.opencontainers.image.ref.name`` (the tag).

    python3 image.py --name gpulab.local/node-smoke:1 --out smoke.tar \\
        --add /bin/sh=/bin/sh --libs-of /usr/bin/nvidia-smi --env PATH=/usr/bin:/bin --cmd sh
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

LAYER_MEDIA = "application/vnd.oci.image.layer.v1.tar+gzip"
CONFIG_MEDIA = "application/vnd.oci.image.config.v1+json"
MANIFEST_MEDIA = "application/vnd.oci.image.manifest.v1+json"
INDEX_MEDIA = "application/vnd.oci.image.index.v1+json"
#: What ldd prints for a library it resolved, and for the loader: "libc.so.6 => /lib/.. (0x..)",
#: "/lib64/ld-linux-x86-64.so.2 (0x..)"; "not found" is an error.
_LDD_LINE = re.compile(r"^\s*(?:(?P<soname>\S+) => )?(?P<path>/\S+) \(0x[0-9a-f]+\)$")
_LDD_MISSING = re.compile(r"^\s*(?P<soname>\S+) => not found$")
#: A fixed time for every entry: the same files make the same digests.
EPOCH = 0


class ImageError(Exception):
    """A file to add is missing, or ldd cannot resolve a library of one."""


@dataclass
class Image:
    """What goes into the image: ``files`` maps the path in the image to the file on this
    machine (its content; a symlink on this machine is stored as the file it points to)."""

    name: str
    files: dict[str, Path] = field(default_factory=dict)
    env: list[str] = field(default_factory=list)
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    #: The image's ``User`` (``UID[:GID]``): "" is root, as an image without USER.
    user: str = ""


def is_elf(path: Path) -> bool:
    """True for an ELF file (a binary or a shared library)."""
    with path.open("rb") as f:
        return f.read(4) == b"\x7fELF"


def parse_ldd(text: str, binary: str) -> list[str]:
    """The absolute paths in ``ldd``'s output (libraries and the loader, in order), without
    the vDSO.

    Raises:
        ImageError: a library ``ldd`` could not find (named).
    """
    out: list[str] = []
    for line in text.splitlines():
        missing = _LDD_MISSING.match(line)
        if missing:
            raise ImageError(f"{binary}: ldd finds no {missing.group('soname')}")
        m = _LDD_LINE.match(line)
        if m and m.group("path") not in out:
            out.append(m.group("path"))
    return out


def ldd(binary: Path) -> list[str]:
    """The shared libraries and loader ``binary`` needs (``ldd``); ``[]`` for a static one."""
    run = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False)
    text = run.stdout + run.stderr
    if "not a dynamic executable" in text or "statically linked" in text:
        return []
    if run.returncode != 0:
        raise ImageError(f"ldd {binary} failed ({run.returncode}): {text.strip()}")
    return parse_ldd(text, str(binary))


def with_libraries(files: dict[str, Path], libs_of: Iterable[Path] = ()) -> dict[str, Path]:
    """``files`` plus, for each ELF file among them and each of ``libs_of`` (binaries the
    runtime injects later, e.g. the host's nvidia-smi through CDI, whose C library must be
    in the image), the libraries it needs at the paths ldd gives."""
    out = dict(files)
    for src in [*files.values(), *libs_of]:
        if src.is_file() and is_elf(src):
            for lib in ldd(src):
                out.setdefault(lib, Path(lib))
        elif src in libs_of:
            raise ImageError(f"--libs-of {src}: no such ELF file")
    return out


def _add(tar: tarfile.TarFile, name: str, src: Path, dirs: set[str]) -> None:
    parts = PurePosixPath(name).parts[1:]
    for i in range(1, len(parts)):
        d = "/".join(parts[:i])
        if d not in dirs:
            dirs.add(d)
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, EPOCH
            tar.addfile(info)
    data = src.read_bytes()
    info = tarfile.TarInfo("/".join(parts))
    info.size, info.mode, info.mtime = len(data), src.stat().st_mode & 0o7777, EPOCH
    tar.addfile(info, io.BytesIO(data))


def layer_tar(files: dict[str, Path]) -> bytes:
    """The layer, an uncompressed tar: parent directories first, files in path order; every
    path absolute in ``files``, stored relative (as image layers are).

    Raises:
        ImageError: a source file is missing.
    """
    buf = io.BytesIO()
    dirs: set[str] = set()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in ("tmp", "etc", "dev", "proc", "sys"):
            dirs.add(d)
            info = tarfile.TarInfo(d)
            info.type, info.mtime = tarfile.DIRTYPE, EPOCH
            info.mode = 0o1777 if d == "tmp" else 0o755
            tar.addfile(info)
        for name in sorted(files):
            if not name.startswith("/"):
                raise ImageError(f"image path {name!r} must be absolute")
            src = files[name]
            if not src.is_file():
                raise ImageError(f"{src}: no such file (for {name} in the image)")
            _add(tar, name, src.resolve(), dirs)
    return buf.getvalue()


def _blob(blobs: dict[str, bytes], data: bytes) -> str:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return digest


def build(image: Image) -> dict[str, bytes]:
    """The OCI layout's files (path in the tar -> bytes) of ``image`` (module docstring)."""
    raw = layer_tar(image.files)
    # Level 1: the layer never leaves the machine, and NVIDIA's binaries (260 MB) take 40 s at 9.
    gz = gzip.compress(raw, compresslevel=1, mtime=EPOCH)
    blobs: dict[str, bytes] = {}
    layer = _blob(blobs, gz)
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Env": image.env,
            "Entrypoint": image.entrypoint or None,
            "Cmd": image.cmd or None,
            "WorkingDir": "/",
            **({"User": image.user} if image.user else {}),
            "Labels": image.labels or None,
        },
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(raw).hexdigest()]},
        "history": [{"created_by": "gpu-lab hack/node/image.py", "comment": "files of the GPU machine"}],
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    cfg = _blob(blobs, config_bytes)
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA,
        "config": {"mediaType": CONFIG_MEDIA, "digest": cfg, "size": len(config_bytes)},
        "layers": [{"mediaType": LAYER_MEDIA, "digest": layer, "size": len(gz)}],
    }
    manifest_bytes = json.dumps(manifest, sort_keys=True).encode()
    man = _blob(blobs, manifest_bytes)
    tag = image.name.rsplit(":", 1)[1] if ":" in image.name.rsplit("/", 1)[-1] else "latest"
    index = {
        "schemaVersion": 2,
        "mediaType": INDEX_MEDIA,
        "manifests": [
            {
                "mediaType": MANIFEST_MEDIA,
                "digest": man,
                "size": len(manifest_bytes),
                "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": {
                    "io.containerd.image.name": image.name,
                    "org.opencontainers.image.ref.name": tag,
                },
            }
        ],
    }
    out = {
        "oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
        "index.json": json.dumps(index, sort_keys=True).encode(),
    }
    for digest, data in blobs.items():
        out["blobs/sha256/" + digest.removeprefix("sha256:")] = data
    return out


def write_layout(layout: dict[str, bytes], out: Path) -> None:
    """Write the layout's files as one tar (what ``ctr images import`` reads)."""
    with tarfile.open(out, "w") as tar:
        for d in ("blobs", "blobs/sha256"):
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, EPOCH
            tar.addfile(info)
        for name, data in layout.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, EPOCH
            tar.addfile(info, io.BytesIO(data))


def parse_add(specs: Iterable[str]) -> dict[str, Path]:
    """``--add IMAGE_PATH=HOST_PATH`` (or a bare HOST_PATH, kept at the same path).

    Raises:
        ImageError: an image path that is not absolute.
    """
    files: dict[str, Path] = {}
    for spec in specs:
        dst, _, src = spec.partition("=")
        src = src or dst
        if not dst.startswith("/"):
            raise ImageError(f"--add {spec!r}: the image path must be absolute")
        files[dst] = Path(src)
    return files


def main(argv: Sequence[str] | None = None) -> int:
    """CLI (module docstring); prints the image's name and manifest digest."""
    ap = argparse.ArgumentParser(prog="image.py", description=__doc__.splitlines()[0])
    ap.add_argument("--name", required=True, help="full reference, e.g. gpulab.local/node-smoke:1")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--add", action="append", default=[], help="IMAGE_PATH=HOST_PATH (repeatable)")
    ap.add_argument(
        "--libs-of", action="append", default=[], type=Path, help="also the libraries this binary needs"
    )
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--entrypoint", nargs="*", default=[])
    ap.add_argument("--cmd", nargs="*", default=[])
    ap.add_argument("--label", action="append", default=[], help="KEY=VALUE")
    ap.add_argument("--user", default="", help="UID[:GID] the image runs as (its USER)")
    args = ap.parse_args(argv)
    try:
        files = with_libraries(parse_add(args.add), args.libs_of)
        image = Image(
            args.name,
            files,
            args.env,
            args.entrypoint,
            args.cmd,
            dict(lbl.split("=", 1) for lbl in args.label),
            args.user,
        )
        layout = build(image)
        write_layout(layout, args.out)
    except (ImageError, OSError) as exc:
        print(f"image.py: {exc}", file=sys.stderr)
        return 1
    index = json.loads(layout["index.json"])
    print(
        f"{args.name} {index['manifests'][0]['digest']} "
        f"({len(files)} files, {os.path.getsize(args.out)} bytes)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
