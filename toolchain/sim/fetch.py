"""The simulated control plane's binaries: the upstream release files, or the Go build.

``toolchain/setup.sh`` runs this for the ``sim`` stacks and for the tests. It prints, in the
first lines of ``make lab``, which binaries it uses, from where and why, then makes
``$GPULAB_CACHE/sim/bin`` (what ``toolchain/sim/env.sh`` and ``variants.sim.ctl`` use) link
to them. The versions are always those of ``toolchain/versions.env``, either way.

The choice, first match wins:

1. ``GPULAB_OFFLINE=1``: the Go build (``toolchain/sim/build.sh``), as on an air-gapped
   machine; it reuses its own cache.
2. The release files of the pinned versions are complete in the cache: used, no network.
3. The Go build of the pinned versions is complete in the cache (same sources): used
   (``build.sh`` only relinks it; no network, no compile).
4. Not Linux on amd64/arm64 (the platforms all four projects publish): the Go build.
5. Otherwise the machine may be connected, and the release files are downloaded. Whether it
   *is* connected is decided by asking: the small checksum files are fetched first, and the
   first answer (or the first failure) decides. A DNS name or a default route proves nothing
   behind a proxy or a firewall; an HTTP answer does. No answer within
   ``GPULAB_DOWNLOAD_TIMEOUT`` seconds (default 15), an HTTP error, or a file whose sha256
   differs from the published one: the Go build, with the reason printed. Without ``go`` on
   PATH that is an error naming the cause and the fix.

What is fetched, from where (the URLs kwokctl v0.8.0 itself downloads by default, and each
project's published checksums):

- kube-apiserver, kube-controller-manager, kube-scheduler, kubectl:
  ``https://dl.k8s.io/release/v<K>/bin/linux/<arch>/<name>``, sha256 in ``<name>.sha256``
  (the hex digest only);
- etcd: ``https://github.com/etcd-io/etcd/releases/download/v<E>/etcd-v<E>-linux-<arch>.tar.gz``
  (member ``etcd-v<E>-linux-<arch>/etcd``), sha256 in ``SHA256SUMS`` of the same release;
- kwok, kwokctl: ``https://github.com/kubernetes-sigs/kwok/releases/download/v<W>/``
  ``kwok-linux-<arch>`` and ``kwokctl-linux-<arch>``; kwok uploads no checksum file, so the
  sha256 is the ``digest`` GitHub publishes for every release asset (``api.github.com``,
  the release by tag);
- helm: ``https://get.helm.sh/helm-v<H>-linux-<arch>.tar.gz`` (member
  ``linux-<arch>/helm``), sha256 in ``<file>.sha256sum``.

The base URLs can be overridden (a mirror, or the tests' loopback server):
``GPULAB_KUBE_RELEASE_URL``, ``GPULAB_ETCD_RELEASE_URL``, ``GPULAB_KWOK_RELEASE_URL``,
``GPULAB_KWOK_RELEASE_API``, ``GPULAB_HELM_RELEASE_URL`` (defaults: :data:`DEFAULT_BASES`).
Only ``http``/``https`` URLs are accepted. Proxies come from the usual ``https_proxy``/
``no_proxy`` variables (urllib reads them).

Cache layout (outside the checkout, by version, beside the Go build's
``$GPULAB_CACHE/sim/<component>-<version>/``)::

    $GPULAB_CACHE/sim/release/<component>-<version>/bin/<binary>
    $GPULAB_CACHE/sim/release/<component>-<version>/.complete   (JSON: URLs, sha256, sizes)
    $GPULAB_CACHE/sim/bin/<binary> -> ../release/<component>-<version>/bin/<binary>

A component is moved into place only when every one of its files matched its checksum;
nothing half-downloaded is ever linked. Standard library only (it runs before the
virtualenv matters); no shell is ever run on a URL, a path or a checksum.

Exit codes: 0 ready, 1 no binaries could be had (the message names the cause and the fix),
2 usage; otherwise ``build.sh``'s own.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
VERSIONS = HERE.parent / "versions.env"
BUILD_SH = HERE / "build.sh"

#: Where each project publishes its release files (kwok v0.8.0 pkg/consts/consts.go:
#: ``KubeBinaryPrefix``, ``EtcdBinaryPrefix``, ``BinaryPrefix``; helm's get-helm-3 script).
DEFAULT_BASES: dict[str, str] = {
    "GPULAB_KUBE_RELEASE_URL": "https://dl.k8s.io/release",
    "GPULAB_ETCD_RELEASE_URL": "https://github.com/etcd-io/etcd/releases/download",
    "GPULAB_KWOK_RELEASE_URL": "https://github.com/kubernetes-sigs/kwok/releases/download",
    "GPULAB_KWOK_RELEASE_API": "https://api.github.com/repos/kubernetes-sigs/kwok/releases/tags",
    "GPULAB_HELM_RELEASE_URL": "https://get.helm.sh",
}
#: Seconds a connection or a read may stall before the server counts as not answering.
DEFAULT_TIMEOUT = 15.0
#: Components in the order they are listed (and built: helm last, as in build.sh).
COMPONENTS = ("kube", "etcd", "kwok", "helm")
#: ``platform.machine()`` -> the GOARCH name every project uses in its file names. kwok
#: v0.8.0 publishes Linux binaries for amd64 and arm64 only (Makefile BINARY_PLATFORMS).
ARCHES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
INSTALL_GO = "install Go >= 1.26 (https://go.dev/doc/install)"
PREFIX = "gpu-lab: sim toolchain:"
_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")
_MAX_CHECKSUM_BYTES = 1 << 20


def say(msg: str) -> None:
    """One line of ``make lab``'s account of the sim toolchain, on stderr."""
    print(f"{PREFIX} {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- errors


class FetchError(RuntimeError):
    """The release files could not be had; ``reason`` is one line for "why the Go build"."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(detail or reason)
        self.reason = reason
        self.detail = detail or reason


class NotConnected(FetchError):
    """A server did not answer (DNS, refused, timed out, cut short): this machine is offline,
    or behind something that blocks it."""

    def __init__(self, url: str, error: object) -> None:
        host = urllib.parse.urlsplit(url).netloc
        super().__init__(f"{host} did not answer ({error}) for {url}")
        self.url = url


class NotPublished(FetchError):
    """A server answered with an HTTP error for a file of a pinned version."""

    def __init__(self, url: str, status: int, text: str) -> None:
        hint = " (rate-limited or refused: try again later)" if status in (403, 429) else ""
        super().__init__(f"{url} answered HTTP {status} {text}".rstrip() + hint)
        self.url = url
        self.status = status


class BadRelease(FetchError):
    """The server answered, but not with what the project publishes (a checksum file
    without our file, an archive without the binary, an unsafe archive member)."""


class ChecksumMismatch(FetchError):
    """A downloaded file's sha256 differs from the one its project published.

    Attributes:
        name: the file as published (``kube-apiserver``, ``etcd-v3.6.16-linux-amd64.tar.gz``).
        url: where it came from.
        expected: the published sha256 (hex), from ``checksum_url``.
        actual: the sha256 of the bytes received (hex).
    """

    def __init__(self, name: str, url: str, expected: str, actual: str, checksum_url: str) -> None:
        self.name, self.url, self.expected, self.actual = name, url, expected, actual
        self.checksum_url = checksum_url
        detail = (
            f"checksum mismatch: {name}\n"
            f"  file:      {url}\n"
            f"  expected:  sha256 {expected}  (published in {checksum_url})\n"
            f"  got:       sha256 {actual}\n"
            "  nothing was installed: the file is deleted and no component is linked.\n"
            f"  fix: run the same command again (a download cut short or rewritten on the way, by a\n"
            "       proxy or a captive portal, gives this). If it persists, the file or your network is\n"
            "       not what the project published: set GPULAB_OFFLINE=1 to build the same versions\n"
            "       from Go modules instead (needs Go >= 1.26: https://go.dev/doc/install)."
        )
        super().__init__(f"{name} failed its checksum", detail)


class Unsupported(FetchError):
    """This platform has no release files of every component."""


# --------------------------------------------------------------------------- what is published


@dataclass(frozen=True)
class Artifact:
    """One published file and what is installed from it.

    Attributes:
        component: ``kube``, ``etcd``, ``kwok`` or ``helm``.
        version: the pinned version, without ``v`` (``1.36.3``).
        url: the file's URL.
        checksum_url: where its sha256 is published.
        checksum_kind: ``"hex"`` (the file holds only the hex digest: dl.k8s.io ``.sha256``),
            ``"sums"`` (``<hex>  <file name>`` lines: etcd ``SHA256SUMS``, helm ``.sha256sum``)
            or ``"github"`` (a GitHub release's JSON, ``assets[].digest = "sha256:<hex>"``).
        install: ``(member, binary)`` pairs: the archive member holding ``binary`` (its
            installed name), or ``""`` when the file itself is the binary.
    """

    component: str
    version: str
    url: str
    checksum_url: str
    checksum_kind: str
    install: tuple[tuple[str, str], ...]

    @property
    def name(self) -> str:
        """The file name as published (the URL's last segment)."""
        return self.url.rsplit("/", 1)[-1]

    @property
    def binaries(self) -> list[str]:
        return [b for _, b in self.install]


def _load_decide() -> Any:
    """toolchain/decide.py, loaded by path once (toolchain/ is no package)."""
    name = "gpulab_toolchain_decide"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE.parent / "decide.py")
        assert spec and spec.loader
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def read_versions(path: Path = VERSIONS) -> dict[str, str]:
    """toolchain/versions.env as a dict (decide.py's ``read_versions``)."""
    return dict(_load_decide().read_versions(path))


def bases(env: Mapping[str, str]) -> dict[str, str]:
    """The base URLs: :data:`DEFAULT_BASES`, each overridable by its variable in ``env``.

    Raises:
        ValueError: an override is not an ``http``/``https`` URL with a host.
    """
    out = {}
    for key, default in DEFAULT_BASES.items():
        value = (env.get(key) or default).rstrip("/")
        parts = urllib.parse.urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"{key}={value!r} is not an http(s) URL (e.g. {default})")
        out[key] = value
    return out


def goarch(machine: str | None = None, system: str | None = None) -> str:
    """The release files' architecture for this host (``amd64``, ``arm64``).

    Raises:
        Unsupported: not Linux, or an architecture kwok publishes no binaries for.
    """
    system = system or platform.system()
    machine = machine or platform.machine()
    if system != "Linux":
        raise Unsupported(
            f"this is {system}: dl.k8s.io publishes kube-apiserver and the other control-plane "
            "binaries for Linux only (kwokctl uses unofficial builds elsewhere)"
        )
    arch = ARCHES.get(machine.lower())
    if arch is None:
        raise Unsupported(f"kwok v0.8.0 publishes no Linux binaries for {machine} (only amd64, arm64)")
    return arch


def artifacts(versions: Mapping[str, str], env: Mapping[str, str], arch: str) -> list[Artifact]:
    """Every file to fetch for the pinned versions, in :data:`COMPONENTS` order.

    Sources (cited in tests/toolchain/test_fetch.py): kwok v0.8.0 ``pkg/config/vars.go``
    (``setKwokctlKubernetesConfig``, ``setKwokctlKwokConfig``, ``setKwokctlEtcdConfig``);
    kubernetes/release ``pkg/release/release.go`` (``CopyBinaries``: ``bin/<os>/<arch>/``,
    ``WriteChecksums``: ``<file>.sha256`` holding only the hex); etcd ``scripts/release.sh``
    and ``scripts/build-binary.sh`` (``SHA256SUMS``, ``etcd-<v>-<os>-<arch>/`` in the
    tarball); helm ``Makefile`` (``dist``, ``checksum``); kwok ``hack/releases.sh``
    (``<binary>-<os>-<arch>`` assets, no checksum file).
    """
    b = bases(env)
    k, e, w, h = (versions[x] for x in ("KUBERNETES_VERSION", "ETCD_VERSION", "KWOK_VERSION", "HELM_VERSION"))
    out: list[Artifact] = []
    kube = f"{b['GPULAB_KUBE_RELEASE_URL']}/v{k}/bin/linux/{arch}"
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"):
        out.append(Artifact("kube", k, f"{kube}/{name}", f"{kube}/{name}.sha256", "hex", (("", name),)))
    etcd_dir = f"etcd-v{e}-linux-{arch}"
    etcd = f"{b['GPULAB_ETCD_RELEASE_URL']}/v{e}"
    out.append(
        Artifact(
            "etcd",
            e,
            f"{etcd}/{etcd_dir}.tar.gz",
            f"{etcd}/SHA256SUMS",
            "sums",
            ((f"{etcd_dir}/etcd", "etcd"),),
        )
    )
    api = f"{b['GPULAB_KWOK_RELEASE_API']}/v{w}"
    for name in ("kwok", "kwokctl"):
        url = f"{b['GPULAB_KWOK_RELEASE_URL']}/v{w}/{name}-linux-{arch}"
        out.append(Artifact("kwok", w, url, api, "github", (("", name),)))
    helm = f"{b['GPULAB_HELM_RELEASE_URL']}/helm-v{h}-linux-{arch}.tar.gz"
    out.append(Artifact("helm", h, helm, f"{helm}.sha256sum", "sums", ((f"linux-{arch}/helm", "helm"),)))
    return out


def parse_checksum(kind: str, text: str, name: str, source: str) -> str:
    """The sha256 (lowercase hex) for file ``name`` in a checksum document of ``kind``.

    Raises:
        BadRelease: the document does not hold a sha256 for ``name``.
    """
    if kind == "hex":
        tokens = text.split()
        if tokens and _HEX64.match(tokens[0]):
            return tokens[0].lower()
        raise BadRelease(f"{source} holds no sha256 (got {text[:80]!r})")
    if kind == "sums":
        for line in text.splitlines():
            m = re.match(r"^([0-9a-fA-F]{64})\s+\*?(?:\./)?(\S.*?)\s*$", line)
            if m and m.group(2) == name:
                return m.group(1).lower()
        raise BadRelease(f"{source} lists no sha256 for {name}")
    if kind == "github":
        try:
            assets = json.loads(text).get("assets") or []
        except (ValueError, AttributeError) as exc:
            raise BadRelease(f"{source} is not a GitHub release document ({exc})") from exc
        for asset in assets:
            if isinstance(asset, dict) and asset.get("name") == name:
                digest = str(asset.get("digest") or "")
                algo, _, value = digest.partition(":")
                if algo == "sha256" and _HEX64.match(value):
                    return value.lower()
                raise BadRelease(f"{source}: asset {name} has no sha256 digest (digest={digest!r})")
        raise BadRelease(f"{source} lists no asset {name}")
    raise ValueError(f"unknown checksum kind {kind!r}")


# --------------------------------------------------------------------------- HTTP


def _open(url: str, timeout: float) -> Any:
    """``urlopen`` with our errors: :class:`NotPublished` for an HTTP status, else
    :class:`NotConnected`."""
    req = urllib.request.Request(url, headers={"User-Agent": "gpu-lab-toolchain (python urllib)"})
    try:
        return urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as exc:
        raise NotPublished(url, exc.code, str(exc.reason)) from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise NotConnected(url, getattr(exc, "reason", exc)) from exc


def fetch_text(url: str, timeout: float) -> str:
    """A small document (a checksum file, a release's JSON), at most 1 MiB."""
    with _open(url, timeout) as resp:
        try:
            data = resp.read(_MAX_CHECKSUM_BYTES + 1)
        except OSError as exc:
            raise NotConnected(url, exc) from exc
    if len(data) > _MAX_CHECKSUM_BYTES:
        raise BadRelease(f"{url} is larger than a checksum document ({_MAX_CHECKSUM_BYTES} bytes)")
    return data.decode("utf-8", errors="replace")


def download(url: str, dest: Path, timeout: float) -> tuple[str, int]:
    """Stream ``url`` into ``dest``; return its sha256 (hex) and size in bytes.

    Raises:
        NotConnected: no answer, a stall longer than ``timeout``, or fewer bytes than the
            server's ``Content-Length``.
        NotPublished: an HTTP error status.
    """
    digest = hashlib.sha256()
    size = 0
    with _open(url, timeout) as resp, open(dest, "wb") as out:
        expected = resp.headers.get("Content-Length")
        try:
            while chunk := resp.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
                size += len(chunk)
        except OSError as exc:
            raise NotConnected(url, f"cut short after {size} bytes: {exc}") from exc
    if expected and expected.isdigit() and int(expected) != size:
        raise NotConnected(url, f"cut short: {size} of {expected} bytes")
    return digest.hexdigest(), size


# --------------------------------------------------------------------------- cache


def cache_root(env: Mapping[str, str]) -> Path:
    """``${GPULAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-lab}`` (as build.sh and env.sh)."""
    if env.get("GPULAB_CACHE"):
        return Path(env["GPULAB_CACHE"])
    xdg = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
    return Path(xdg) / "gpu-lab"


def release_dir(cache: Path, component: str, version: str) -> Path:
    """``$GPULAB_CACHE/sim/release/<component>-<version>``."""
    return cache / "sim" / "release" / f"{component}-{version}"


def _by_component(arts: Iterable[Artifact]) -> dict[str, list[Artifact]]:
    out: dict[str, list[Artifact]] = {}
    for a in arts:
        out.setdefault(a.component, []).append(a)
    return out


def cached_release(cache: Path, arts: Sequence[Artifact]) -> dict[str, Any] | None:
    """The ``.complete`` records of every component when all its binaries are in place
    (executable, of the recorded size), else None."""
    records: dict[str, Any] = {}
    for comp, group in _by_component(arts).items():
        d = release_dir(cache, comp, group[0].version)
        try:
            rec = json.loads((d / ".complete").read_text())
        except (OSError, ValueError):
            return None
        files = rec.get("binaries", {})
        for a in group:
            for b in a.binaries:
                p = d / "bin" / b
                if not (os.access(p, os.X_OK) and p.stat().st_size == files.get(b, {}).get("size")):
                    return None
        records[comp] = rec
    return records


# The build cache's check lives in buildcache.py (decide.py asks it on every env.sh without
# loading this module's download machinery), loaded once, by decide.py's loader; its names are
# this module's too.
_buildcache = _load_decide().load_buildcache()
WRAPPERS = _buildcache.WRAPPERS
BUILD_BINARIES = _buildcache.BUILD_BINARIES
wrapper_fingerprint = _buildcache.wrapper_fingerprint
cached_build = _buildcache.cached_build


def link_release(cache: Path, arts: Sequence[Artifact]) -> Path:
    """Point ``$GPULAB_CACHE/sim/bin/<binary>`` at the release files (relative links, each
    replaced atomically); return the bin dir."""
    bindir = cache / "sim" / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    for a in arts:
        for b in a.binaries:
            target = Path("..") / "release" / f"{a.component}-{a.version}" / "bin" / b
            tmp = bindir / f".{b}.{os.getpid()}.tmp"
            tmp.unlink(missing_ok=True)
            os.symlink(target, tmp)
            os.replace(tmp, bindir / b)
    return bindir


def _extract(archive: Path, member: str, dest: Path) -> None:
    """Copy one regular-file member of a .tar.gz to ``dest`` (never a link, never a path
    taken from the archive).

    Raises:
        BadRelease: the member is absent or not a regular file, or the archive is unreadable.
    """
    try:
        with tarfile.open(archive, "r:gz") as tf:
            try:
                info = tf.getmember(member)
            except KeyError as exc:
                raise BadRelease(f"{archive.name} has no {member}") from exc
            if not info.isfile():
                raise BadRelease(f"{archive.name}: {member} is not a regular file")
            src = tf.extractfile(info)
            assert src is not None
            with src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise BadRelease(f"{archive.name} is not a readable .tar.gz ({exc})") from exc


def _partial(d: Path) -> Path:
    """This process's staging dir for ``d`` (``kube-1.36.3.partial-<pid>``): two runs at once
    never write into each other's."""
    return d.parent / f"{d.name}.partial-{os.getpid()}"


@dataclass
class Fetched:
    """One verified file: where from, its sha256 and size, the seconds it took."""

    artifact: Artifact
    sha256: str
    size: int
    seconds: float


def fetch_all(
    arts: Sequence[Artifact],
    cache: Path,
    timeout: float,
    *,
    workers: int = 4,
    log: Callable[[str], None] = say,
) -> list[Fetched]:
    """Download, verify and install every artifact; then link ``$GPULAB_CACHE/sim/bin``.

    The checksum documents are fetched first (one request each, in order): the first of
    them answers whether this machine is connected. Then the files, ``workers`` at a time,
    each hashed while it streams. Each component is staged in ``<dir>.partial-<pid>`` and renamed
    into place only when all its files matched; on any error every staging dir is removed.

    Raises:
        NotConnected, NotPublished, BadRelease, ChecksumMismatch: the first failure (a
            mismatch is reported before any other error of the same run).
    """
    docs: dict[str, str] = {}
    expected: dict[str, str] = {}
    for a in arts:
        if a.checksum_url not in docs:
            t0 = time.monotonic()
            docs[a.checksum_url] = fetch_text(a.checksum_url, timeout)
            if len(docs) == 1:
                host = urllib.parse.urlsplit(a.checksum_url).netloc
                log(f"connected: {host} answered in {time.monotonic() - t0:.1f} s")
        expected[a.url] = parse_checksum(a.checksum_kind, docs[a.checksum_url], a.name, a.checksum_url)

    groups = _by_component(arts)
    staging = {c: _partial(release_dir(cache, c, g[0].version)) for c, g in groups.items()}
    for d in staging.values():
        shutil.rmtree(d, ignore_errors=True)
        (d / "dl").mkdir(parents=True)
        (d / "bin").mkdir()

    def one(a: Artifact) -> Fetched:
        t0 = time.monotonic()
        path = staging[a.component] / "dl" / a.name
        got, size = download(a.url, path, timeout)
        if got != expected[a.url]:
            path.unlink(missing_ok=True)
            raise ChecksumMismatch(a.name, a.url, expected[a.url], got, a.checksum_url)
        for member, binary in a.install:
            dest = staging[a.component] / "bin" / binary
            if member:
                _extract(path, member, dest)
            else:
                os.replace(path, dest)
            dest.chmod(0o755)
        path.unlink(missing_ok=True)
        f = Fetched(a, got, size, time.monotonic() - t0)
        log(f"  ok {a.name}: {size / 2**20:.1f} MiB in {f.seconds:.1f} s, sha256 {got[:16]}... matches")
        return f

    results: list[Fetched] = []
    errors: list[FetchError] = []
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            futures = [pool.submit(one, a) for a in arts]
            for fut in futures:
                try:
                    results.append(fut.result())
                except concurrent.futures.CancelledError:
                    continue
                except FetchError as exc:
                    errors.append(exc)
                    for other in futures:  # no point starting the rest
                        other.cancel()
        if errors:
            mismatch = [e for e in errors if isinstance(e, ChecksumMismatch)]
            raise (mismatch or errors)[0]
        for comp, group in groups.items():
            d = staging[comp]
            shutil.rmtree(d / "dl")
            record = {
                "component": comp,
                "version": group[0].version,
                "source": "release",
                "fetched": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "files": [
                    {"url": f.artifact.url, "sha256": f.sha256, "checksum": f.artifact.checksum_url}
                    for f in results
                    if f.artifact.component == comp
                ],
                "binaries": {b: {"size": (d / "bin" / b).stat().st_size} for a in group for b in a.binaries},
            }
            (d / ".complete").write_text(json.dumps(record, indent=1) + "\n")
            final = release_dir(cache, comp, group[0].version)
            shutil.rmtree(final, ignore_errors=True)
            os.replace(d, final)
    finally:
        for d in staging.values():
            shutil.rmtree(d, ignore_errors=True)
    link_release(cache, arts)
    return results


# --------------------------------------------------------------------------- the choice


def describe(arts: Sequence[Artifact]) -> list[str]:
    """Lines naming which binaries come from where, checked against what."""
    out = []
    for group in _by_component(arts).values():
        names = " ".join(b for a in group for b in a.binaries)
        first = group[0]
        if len(group) > 1:
            where = first.url.rsplit("/", 1)[0] + "/{" + ",".join(a.name for a in group) + "}"
        else:
            where = first.url
        check = {
            "hex": "<file>.sha256",
            "sums": first.checksum_url.rsplit("/", 1)[-1],
            "github": f"the release's asset digests ({first.checksum_url}; kwok publishes no checksum file)",
        }[first.checksum_kind]
        out.append(f"  {names} v{first.version}: {where}, sha256 from {check}")
    return out


def _timeout(text: str | None) -> float:
    """``GPULAB_DOWNLOAD_TIMEOUT`` in seconds (default :data:`DEFAULT_TIMEOUT`).

    Raises:
        ValueError: not a number in (0, 3600].
    """
    if not text:
        return DEFAULT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 3600:
        raise ValueError(f"GPULAB_DOWNLOAD_TIMEOUT={text!r} is not a number of seconds in (0, 3600]")
    return value


def _run_build(env: Mapping[str, str]) -> int:
    """Run toolchain/sim/build.sh (no arguments: nothing user-supplied reaches it)."""
    return subprocess.run([str(BUILD_SH)], env=dict(env), check=False).returncode


def main(
    argv: list[str] | None = None,
    env: Mapping[str, str] | None = None,
    which: Callable[[str], str | None] = shutil.which,
    run_build: Callable[[Mapping[str, str]], int] = _run_build,
) -> int:
    """CLI: decide, say why, then fetch (or hand over to build.sh). See the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=4, help="parallel downloads (default 4)")
    args = ap.parse_args(argv)
    env = dict(os.environ if env is None else env)
    versions = read_versions()
    cache = cache_root(env)
    have_go = which("go") is not None
    offline = env.get("GPULAB_OFFLINE", "")
    pins = (
        f"Kubernetes v{versions['KUBERNETES_VERSION']}, etcd v{versions['ETCD_VERSION']}, "
        f"kwok v{versions['KWOK_VERSION']}, helm v{versions['HELM_VERSION']} (toolchain/versions.env)"
    )

    def build(why: str) -> int:
        if cached_build(cache, versions):
            say(
                f"the Go build of {pins}, cached in {cache / 'sim'}: used ({why}); "
                "toolchain/sim/build.sh relinks it, nothing is compiled or fetched"
            )
        elif not have_go:
            say(f"the Go build is needed ({why}) and there is no go on PATH")
            say(
                f"fix: {INSTALL_GO}"
                + ("" if offline not in ("", "0") else ", or run where the release servers answer")
            )
            return 1
        else:
            say(f"building {pins} from Go modules (toolchain/sim/build.sh, minutes on 2 cores): {why}")
        return run_build(env)

    if offline not in ("", "0"):
        return build(f"GPULAB_OFFLINE={offline}")
    try:
        timeout = _timeout(env.get("GPULAB_DOWNLOAD_TIMEOUT"))
        arts = artifacts(versions, env, goarch())
    except Unsupported as exc:
        return build(exc.reason)
    except ValueError as exc:
        say(f"error: {exc}; fix it or unset it")
        return 2
    if (records := cached_release(cache, arts)) is not None:
        when = min(str(r.get("fetched", "?")) for r in records.values())
        where = cache / "sim" / "release"
        say(f"release binaries of {pins}, downloaded {when} and verified then, cached in {where}")
        say(f"linked into {link_release(cache, arts)}; nothing to fetch")
        return 0
    if cached_build(cache, versions):
        return build("no release binaries are cached, and this build is")
    say(
        f"no cached binaries of {pins}: asking the release servers for their checksum files first "
        f"(an answer within {timeout:.0f} s means connected; GPULAB_OFFLINE=1 builds from Go modules instead)"
    )
    for line in describe(arts):
        say(line)
    t0 = time.monotonic()
    try:
        done = fetch_all(arts, cache, timeout, workers=args.workers)
    except ChecksumMismatch as exc:
        for line in exc.detail.splitlines():
            say(line)
        if not have_go:
            say("stopped: the other way, the Go build, needs go, and there is no go on PATH")
            return 1
        return build(f"{exc.name} failed its checksum (above)")
    except FetchError as exc:
        why = f"not connected: {exc.reason}" if isinstance(exc, NotConnected) else exc.reason
        say(f"no release binaries: {why}")
        return build(why)
    total = sum(f.size for f in done)
    say(
        f"release binaries of {pins}: {len(done)} files, {total / 2**20:.0f} MiB in "
        f"{time.monotonic() - t0:.0f} s, each matched its published sha256; cached in "
        f"{cache / 'sim' / 'release'}, linked into {cache / 'sim' / 'bin'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
