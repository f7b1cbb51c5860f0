"""A loopback stand-in for the release servers that toolchain/sim/fetch.py downloads from.

Our machines are offline, so the download path is tested against files laid out as the
real release URLs are: :func:`publish` writes, under one root directory, a tree whose paths
are those URLs without their scheme (``<root>/dl.k8s.io/release/v1.36.3/bin/linux/amd64/
kube-apiserver`` ...), packaged the way each project packages its release (plain files or
``.tar.gz`` with the projects' directory layout) with the projects' checksum files.
:class:`ReleaseServer` serves that root on 127.0.0.1, and its :meth:`~ReleaseServer.env`
is the base-URL overrides that point fetch.py at it. :class:`SilentServer` accepts
connections and never answers.

The binaries published are whatever the caller gives: tiny scripts in the unit tests, the
binaries toolchain/sim/build.sh built from Go modules in the end-to-end test (so "the
release" has the pinned versions, repackaged as upstream packages them).

Run as ``python -m tests.support.releases --cache DIR`` to fill ``DIR/sim`` with "downloaded"
binaries made from this machine's Go build (and link the offline Pulumi build beside them),
so that ``GPULAB_CACHE=DIR make test-e2e`` runs the lab's tests against the download path.
"""

from __future__ import annotations

import argparse
import hashlib
import http.server
import importlib.util
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, Self

from tests.support.sandbox import ROOT, user_cli_path


def load_fetch() -> ModuleType:
    """toolchain/sim/fetch.py as a module (toolchain/ is no package)."""
    name = "gpulab_sim_fetch"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "toolchain" / "sim" / "fetch.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


fetch = load_fetch()
#: Every binary the sim toolchain installs, by component (what fetch.py fetches).
BINARIES = {
    "kube": ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"),
    "etcd": ("etcd",),
    "kwok": ("kwok", "kwokctl"),
    "helm": ("helm",),
}


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def url_path(url: str) -> str:
    """A real URL's place under the served root: ``https://dl.k8s.io/x`` -> ``dl.k8s.io/x``."""
    return url.split("://", 1)[1]


def _place(src: Path, dest: Path) -> None:
    """Put ``src`` at ``dest`` as a symlink (the served bytes are src's; replacing ``dest``
    later never touches ``src``)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.unlink(missing_ok=True)
    dest.symlink_to(src.resolve())


def _tar_gz(dest: Path, top: str, files: Mapping[str, Path | bytes]) -> None:
    """``tar czf dest top`` of a directory ``top`` holding ``files`` (name -> source file or
    bytes): a directory entry, then regular files, as `tar cfz` of a directory writes."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(dest, "w:gz", compresslevel=1) as tf:
        d = tarfile.TarInfo(top)
        d.type, d.mode, d.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
        tf.addfile(d)
        for name, src in files.items():
            if isinstance(src, bytes):
                info = tarfile.TarInfo(f"{top}/{name}")
                info.size, info.mode, info.mtime = len(src), 0o644, int(time.time())
                tf.addfile(info, io.BytesIO(src))
            else:
                tf.add(str(src), arcname=f"{top}/{name}", recursive=False)


def publish(
    root: Path,
    binaries: Mapping[str, Path],
    versions: Mapping[str, str] | None = None,
    arch: str = "amd64",
) -> dict[str, Path]:
    """Lay out the pinned release files under ``root``, as the real URLs are.

    Args:
        binaries: installed name -> file to publish as that binary (every name of
            :data:`BINARIES`).
        versions: toolchain/versions.env (default: the real one).

    Returns:
        published file name -> its path under ``root`` (``kube-apiserver``,
        ``etcd-v3.6.16-linux-amd64.tar.gz``, ``kwok-linux-amd64``, ...).

    Layouts and checksum files (the sources are cited in tests/toolchain/test_fetch.py):
    dl.k8s.io ``<name>`` + ``<name>.sha256`` holding only the hex (no newline); etcd
    ``etcd-v<E>-linux-<arch>.tar.gz`` with ``etcd-v<E>-linux-<arch>/{etcd,README.md}`` and a
    ``SHA256SUMS`` of ``<hex>  <file>`` lines; kwok ``<binary>-linux-<arch>`` with the GitHub
    release JSON (``assets[].digest``) at the API path; helm
    ``helm-v<H>-linux-<arch>.tar.gz`` with ``linux-<arch>/{helm,LICENSE,README.md}`` and
    ``.sha256sum`` (``<hex>  <file>``) and ``.sha256`` (hex) beside it.
    """
    versions = versions or fetch.read_versions()
    arts = fetch.artifacts(versions, {}, arch)
    out: dict[str, Path] = {}
    sums: dict[str, list[str]] = {}
    github: dict[str, list[dict[str, Any]]] = {}
    for a in arts:
        dest = root / url_path(a.url)
        if a.component == "kube" or a.component == "kwok":
            _place(binaries[a.binaries[0]], dest)
        elif a.component == "etcd":
            top = a.name.removesuffix(".tar.gz")
            _tar_gz(dest, top, {"etcd": binaries["etcd"], "README.md": b"etcd (repackaged for tests)\n"})
        elif a.component == "helm":
            top = f"linux-{arch}"
            _tar_gz(
                dest,
                top,
                {"helm": binaries["helm"], "LICENSE": b"Apache-2.0\n", "README.md": b"helm (repackaged)\n"},
            )
        digest = sha256_of(dest)
        out[a.name] = dest
        if a.checksum_kind == "hex":
            _write(root / url_path(a.checksum_url), digest)  # kubernetes/release: no newline
        elif a.checksum_kind == "sums":
            sums.setdefault(a.checksum_url, []).append(f"{digest}  {a.name}")
            if a.component == "helm":
                _write(root / url_path(a.url + ".sha256"), digest + "\n")
        elif a.checksum_kind == "github":
            github.setdefault(a.checksum_url, []).append(
                {
                    "name": a.name,
                    "size": dest.stat().st_size,
                    "digest": f"sha256:{digest}",
                    "browser_download_url": a.url,
                }
            )
    for url, lines in sums.items():
        _write(root / url_path(url), "\n".join(lines) + "\n")
    for url, assets in github.items():
        tag = url.rsplit("/", 1)[-1]
        doc = {"tag_name": tag, "name": tag, "draft": False, "prerelease": False, "assets": assets}
        _write(root / url_path(url), json.dumps(doc, indent=1))
    return out


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def tamper(path: Path) -> None:
    """Replace a published file by other bytes (its checksum file stays as published)."""
    path.unlink()
    path.write_bytes(b"not the file the project published\n")


class _Limiter:
    """A shared byte budget per second across every connection (None: unlimited)."""

    def __init__(self, rate: float | None) -> None:
        self.rate = rate
        self.lock = threading.Lock()
        self.next_free = time.monotonic()

    def take(self, n: int) -> None:
        if not self.rate:
            return
        with self.lock:
            now = time.monotonic()
            start = max(now, self.next_free)
            self.next_free = start + n / self.rate
            wait = self.next_free - now
        time.sleep(max(0.0, wait))


class _Loopback:
    """A server on 127.0.0.1 in a daemon thread (a context manager); ``url`` is its base."""

    url: str
    thread: threading.Thread

    def env(self) -> dict[str, str]:
        """The base-URL overrides (fetch.DEFAULT_BASES' variables) pointing here, with the
        real URLs' paths below them."""
        return {k: f"{self.url}/{url_path(v)}" for k, v in fetch.DEFAULT_BASES.items()}

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        raise NotImplementedError


class ReleaseServer(_Loopback):
    """Serves ``root`` on ``127.0.0.1:<free port>`` in a thread (a context manager).

    Attributes:
        requests: the paths asked for, in order.
        cut: URL paths sent only half (with the full ``Content-Length``), then closed.
        bytes_sent: the bytes of file bodies sent.
    """

    def __init__(self, root: Path, *, rate_bytes_per_s: float | None = None) -> None:
        self.root = root
        self.requests: list[str] = []
        self.cut: set[str] = set()
        self.bytes_sent = 0
        limiter = _Limiter(rate_bytes_per_s)
        outer = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a: Any, **kw: Any) -> None:
                super().__init__(*a, directory=str(root), **kw)

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def send_head(self) -> Any:
                outer.requests.append(self.path)
                return super().send_head()

            def copyfile(self, source: Any, outputfile: Any) -> None:
                half = self.path in outer.cut
                total = os.fstat(source.fileno()).st_size
                sent = 0
                while chunk := source.read(1 << 16):
                    if half and sent + len(chunk) > total // 2:
                        chunk = chunk[: total // 2 - sent]
                    limiter.take(len(chunk))
                    outputfile.write(chunk)
                    sent += len(chunk)
                    outer.bytes_sent += len(chunk)
                    if half and sent >= total // 2:
                        self.close_connection = True
                        return

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


class SilentServer(_Loopback):
    """A TCP port on 127.0.0.1 that accepts connections and never sends a byte."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.conns: list[socket.socket] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.conns.append(conn)

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(5)
        for c in self.conns:
            c.close()
        self.sock.close()


def built_binaries(cache: Path, versions: Mapping[str, str] | None = None) -> dict[str, Path] | None:
    """The Go build's binaries in ``cache`` (``$GPULAB_CACHE``) by installed name, as the
    release would ship them (kube-apiserver & co. are the one multi-call binary, which
    dispatches on its file name); None when that build is not complete."""
    versions = versions or fetch.read_versions()
    if not fetch.cached_build(cache, versions):
        return None
    sim = cache / "sim"
    d = {
        "kube": sim / f"kube-{versions['KUBERNETES_VERSION']}" / "bin",
        "etcd": sim / f"etcd-{versions['ETCD_VERSION']}" / "bin",
        "kwok": sim / f"kwok-{versions['KWOK_VERSION']}" / "bin",
        "helm": sim / f"helm-{versions['HELM_VERSION']}" / "bin",
    }
    out = {}
    for comp, names in BINARIES.items():
        for n in names:
            out[n] = (d[comp] / ("hyperkube" if comp == "kube" else n)).resolve()
    return out


@contextmanager
def serving_build(
    tmp: Path, cache: Path, *, rate_bytes_per_s: float | None = None
) -> Iterator[ReleaseServer]:
    """Publish the Go build in ``cache`` under ``tmp/releases`` and serve it.

    Raises:
        FileNotFoundError: that build is not complete (run ``make toolchain-tests``).
    """
    bins = built_binaries(cache)
    if bins is None:
        raise FileNotFoundError(f"the Go build of the sim toolchain is not complete in {cache}/sim")
    publish(tmp / "releases", bins)
    with ReleaseServer(tmp / "releases", rate_bytes_per_s=rate_bytes_per_s) as server:
        yield server


def quiet_network_env(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` without proxy variables (loopback must not go through a proxy)."""
    return {k: v for k, v in base.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}


def fresh_clone(dest: Path, *, venv: bool = True) -> Path:
    """What a clone of this working tree holds (tracked files and untracked ones git does
    not ignore, modes and times kept), copied to ``dest``; nothing of ``.state``, the stack
    files or the caches. With ``venv``, ``.venv`` links to the checkout's (same
    requirements, so ``make venv`` has nothing to do); without, ``make`` creates it."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    for rel in sorted({p for p in out.decode().split("\0") if p}):
        src = ROOT / rel
        if not src.is_file():  # deleted in the working tree, or a submodule
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel, follow_symlinks=False)
    if venv:
        (dest / ".venv").symlink_to(ROOT / ".venv")
    return dest


USER_CLI_VERSION = "v3.299.0"


def user_machine_env(tmp: Path, real_cli: str, extra: Mapping[str, str]) -> dict[str, str]:
    """A connected user's machine without Go: their own ``pulumi`` (``real_cli`` behind a
    wrapper that reports :data:`USER_CLI_VERSION`, as tests/engine/test_user_toolchain.py
    presents it), a PATH with no ``go``, an empty ``GPULAB_CACHE`` (tmp/cache), a file
    backend in tmp/backend, this process's environment less every ``GPULAB_*``,
    ``PULUMI_*``, ``GO*``, ``KWOK_*`` and proxy variable; then ``extra``.

    Raises:
        AssertionError: a ``go`` is still on that PATH.
    """
    path = user_cli_path(tmp / "userbin", real_cli, USER_CLI_VERSION)
    drop = ("PULUMI_", "GPULAB_", "GO", "KWOK_", "VIRTUAL_ENV")
    env = {k: v for k, v in quiet_network_env(os.environ).items() if not k.startswith(drop)}
    (tmp / "backend").mkdir(exist_ok=True)
    env.update(
        PATH=path,
        GPULAB_CACHE=str(tmp / "cache"),
        PULUMI_BACKEND_URL=f"file://{tmp / 'backend'}",
        PULUMI_CONFIG_PASSPHRASE="user-secret",
        no_proxy="127.0.0.1,localhost",
    )
    env.update(extra)
    return env


def main(argv: list[str] | None = None) -> int:
    """CLI: fill ``--cache`` with "downloaded" sim binaries (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", required=True, type=Path, help="the GPULAB_CACHE to fill")
    ap.add_argument(
        "--from-cache", type=Path, default=fetch.cache_root(os.environ), help="the Go build's cache"
    )
    args = ap.parse_args(argv)
    cache: Path = args.cache.absolute()
    src: Path = args.from_cache.absolute()
    cache.mkdir(parents=True, exist_ok=True)
    for shared in ("bin", "pulumi"):  # the offline Pulumi build, reused as it is
        if (src / shared).exists() and not (cache / shared).exists():
            (cache / shared).symlink_to(src / shared)
    import tempfile

    with (
        tempfile.TemporaryDirectory(prefix="gpulab-releases-") as tmp,
        serving_build(Path(tmp), src) as server,
    ):
        env = {**quiet_network_env(os.environ), **server.env(), "GPULAB_CACHE": str(cache)}
        env.pop("GPULAB_OFFLINE", None)
        rc = subprocess.run(
            [sys.executable, str(ROOT / "toolchain" / "sim" / "fetch.py")], env=env
        ).returncode
    if rc == 0:
        print(f"GPULAB_CACHE={cache}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
