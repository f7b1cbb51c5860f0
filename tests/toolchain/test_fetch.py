"""toolchain/sim/fetch.py: the sim toolchain's release binaries, fetched and verified, or the
Go build, and why.

The download path runs against a loopback server (tests/support/releases.py) that serves
files laid out as the real release URLs, with the projects' own checksum files; the
"binaries" here are tiny scripts (the end-to-end test, tests/e2e/test_sim_connected.py,
publishes the real ones built from Go modules).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support import releases
from tests.support.releases import ReleaseServer, SilentServer, fetch, publish, tamper

VERSIONS = fetch.read_versions()
K, E, W, H = (VERSIONS[k] for k in ("KUBERNETES_VERSION", "ETCD_VERSION", "KWOK_VERSION", "HELM_VERSION"))
ALL = [n for names in releases.BINARIES.values() for n in names]


def _fake_binaries(d: Path) -> dict[str, Path]:
    d.mkdir(parents=True, exist_ok=True)
    out = {}
    for n in ALL:
        p = d / n
        p.write_text(f"#!/bin/sh\necho {n} fake\n")
        p.chmod(0o755)
        out[n] = p
    return out


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """The pinned release, published under tmp_path/releases (name -> served file)."""
    return publish(tmp_path / "releases", _fake_binaries(tmp_path / "src"))


class Run:
    def __init__(self, rc: int, err: str, builds: list[dict[str, str]], seconds: float) -> None:
        self.rc, self.err, self.builds, self.seconds = rc, err, builds, seconds


def run_main(
    capsys: pytest.CaptureFixture[str], cache: Path, extra: dict[str, str], *, go: bool = False
) -> Run:
    """fetch.main with this cache and env, ``go`` on PATH or not, build.sh recorded (not run)."""
    builds: list[dict[str, str]] = []

    def build(env: Any) -> int:
        builds.append(dict(env))
        return 0

    env = {"GPULAB_CACHE": str(cache), "HOME": str(cache.parent), "PATH": "/usr/bin:/bin", **extra}
    t0 = time.monotonic()
    rc = fetch.main(
        [], env=env, which=lambda n: "/usr/local/go/bin/go" if go and n == "go" else None, run_build=build
    )
    return Run(rc, capsys.readouterr().err, builds, time.monotonic() - t0)


def test_urls_and_checksum_files_are_the_ones_upstream_publishes() -> None:
    """The file URLs are kwokctl v0.8.0's own defaults for these versions, and the checksum
    files are those each project's release process writes.

    - kubernetes-sigs/kwok v0.8.0 ``pkg/consts/consts.go``: ``KubeBinaryPrefix =
      "https://dl.k8s.io/release"``, ``EtcdBinaryPrefix =
      "https://github.com/etcd-io/etcd/releases/download"``, ``BinaryPrefix =
      "https://github.com/kubernetes-sigs/kwok/releases/download"``.
    - kwok v0.8.0 ``pkg/config/vars.go``: ``KubeBinaryPrefix + "/" + KubeVersion + "/bin/" +
      GOOS + "/" + GOARCH`` then ``"/kube-apiserver"``, ``"/kube-controller-manager"``,
      ``"/kube-scheduler"``, ``"/kubectl"`` (KubeVersion with its ``v``: ``AddPrefixV``);
      ``KwokBinaryPrefix + "/kwok-" + GOOS + "-" + GOARCH`` (KwokVersion ``v0.8.0``);
      ``EtcdBinaryPrefix + "/v" + EtcdVersion`` then ``"/etcd-v" + EtcdVersion + "-" + GOOS
      + "-" + GOARCH + ".tar.gz"`` and the binary ``EtcdBinaryTar + "#etcd"``.
    - kubernetes/release ``pkg/release/release.go`` (HEAD f618b2a3): ``CopyBinaries`` puts
      the server binaries in ``bin/<platform>/<arch>``; ``WriteChecksums`` writes, beside
      every file, ``<file>.sha256`` holding only the hex digest (``os.WriteFile(shaFileName,
      []byte(sha))``); ``ProductionBucketURL = "https://dl.k8s.io"``.
    - etcd-io/etcd release-3.6 ``scripts/release.sh``: ``shasum -a 256`` of the ``.tar.gz``
      and ``.zip`` files into ``SHA256SUMS``, uploaded with them to the GitHub release
      (``gh release upload ... ./release/SHA256SUMS``); ``scripts/build-binary.sh``: Linux
      archives are ``tar cfz etcd-<ver>-<os>-<arch>.tar.gz etcd-<ver>-<os>-<arch>``.
    - helm/helm v3.21.4 and dev-v3 ``Makefile`` (v3.22.0's tag is newer than the stored
      snapshot; the targets are unchanged between them): ``dist`` archives
      ``helm-${VERSION}-<os>-<arch>.tar.gz`` of the ``<os>-<arch>/`` directory;
      ``checksum`` writes ``<file>.sha256sum`` (``shasum -a 256`` output, ``<hex>  <file>``)
      and ``<file>.sha256`` (hex only); ``fetch-dist`` downloads from
      ``https://get.helm.sh/helm-${VERSION}-${obj}``; ``scripts/get-helm-3``:
      ``DOWNLOAD_URL="https://get.helm.sh/$HELM_DIST"``.
    - kwok v0.8.0 ``hack/releases.sh`` uploads ``<binary>-<os>-<arch>`` to the GitHub
      release and no checksum file (``.github/workflows/releases.yaml`` runs only
      ``make manifests cross-build``), so the sha256 is the one GitHub computes for every
      release asset: ``assets[].digest`` (``"sha256:<hex>"``) of ``GET
      /repos/{owner}/{repo}/releases/tags/{tag}`` (GitHub changelog 2025-06-03 "Releases
      now expose digests for release assets", github/roadmap#1136; google/go-github
      ``ReleaseAsset.Digest``, PR #3628).
    """
    arts = {a.name: a for a in fetch.artifacts(VERSIONS, {}, "amd64")}
    kube = f"https://dl.k8s.io/release/v{K}/bin/linux/amd64"
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"):
        a = arts[name]
        assert (a.url, a.checksum_url, a.checksum_kind) == (f"{kube}/{name}", f"{kube}/{name}.sha256", "hex")
    etcd = arts[f"etcd-v{E}-linux-amd64.tar.gz"]
    assert etcd.url == f"https://github.com/etcd-io/etcd/releases/download/v{E}/etcd-v{E}-linux-amd64.tar.gz"
    assert etcd.checksum_url == f"https://github.com/etcd-io/etcd/releases/download/v{E}/SHA256SUMS"
    assert etcd.install == ((f"etcd-v{E}-linux-amd64/etcd", "etcd"),)
    for name in ("kwok", "kwokctl"):
        a = arts[f"{name}-linux-amd64"]
        assert a.url == f"https://github.com/kubernetes-sigs/kwok/releases/download/v{W}/{name}-linux-amd64"
        assert a.checksum_url == f"https://api.github.com/repos/kubernetes-sigs/kwok/releases/tags/v{W}"
        assert a.checksum_kind == "github"
    helm = arts[f"helm-v{H}-linux-amd64.tar.gz"]
    assert helm.url == f"https://get.helm.sh/helm-v{H}-linux-amd64.tar.gz"
    assert helm.checksum_url == helm.url + ".sha256sum" and helm.install == (("linux-amd64/helm", "helm"),)
    assert [a.name for a in fetch.artifacts(VERSIONS, {}, "arm64")][-1] == f"helm-v{H}-linux-arm64.tar.gz"


def test_the_fetched_versions_are_the_ones_the_go_build_pins() -> None:
    """Same versions either way: every URL carries the version build.sh builds (versions.env),
    and build.sh's wrappers pin those same module versions (toolchain/sim/go/*/go.mod)."""
    by_comp = {a.component: a for a in fetch.artifacts(VERSIONS, {}, "amd64")}
    assert f"/v{K}/" in by_comp["kube"].url and f"/v{E}/" in by_comp["etcd"].url
    assert f"/v{W}/" in by_comp["kwok"].url and f"-v{H}-" in by_comp["helm"].url
    wrappers = fetch.WRAPPERS
    assert f"k8s.io/kubernetes v{K}" in (wrappers / "kube" / "go.mod").read_text()
    assert f"go.etcd.io/etcd/server/v3 v{E}" in (wrappers / "etcd" / "go.mod").read_text()
    assert f"sigs.k8s.io/kwok v{W}" in (wrappers / "kwok" / "go.mod").read_text()
    assert f"helm.sh/helm/v3 v{H}" in (wrappers / "helm" / "go.mod").read_text()


def test_checksum_documents_parse_as_published() -> None:
    hexd = "ab" * 32
    # dl.k8s.io: only the hex, no newline (kubernetes/release WriteChecksums).
    assert fetch.parse_checksum("hex", hexd, "kubectl", "u") == hexd
    assert fetch.parse_checksum("hex", hexd.upper() + "\n", "kubectl", "u") == hexd
    # shasum -a 256 output (etcd SHA256SUMS, helm .sha256sum), binary-mode "*" tolerated.
    sums = f"{'00' * 32}  etcd-v{E}-darwin-amd64.zip\n{hexd}  etcd-v{E}-linux-amd64.tar.gz\n"
    assert fetch.parse_checksum("sums", sums, f"etcd-v{E}-linux-amd64.tar.gz", "u") == hexd
    assert fetch.parse_checksum("sums", f"{hexd} *helm.tgz\n", "helm.tgz", "u") == hexd
    doc = json.dumps({"assets": [{"name": "kwok-linux-amd64", "digest": f"sha256:{hexd}"}]})
    assert fetch.parse_checksum("github", doc, "kwok-linux-amd64", "u") == hexd
    for kind, text, name, why in [
        ("hex", "<html>moved</html>", "kubectl", "holds no sha256"),
        ("sums", sums, f"etcd-v{E}-linux-arm64.tar.gz", "lists no sha256 for"),
        ("github", doc, "kwokctl-linux-amd64", "lists no asset"),
        ("github", json.dumps({"assets": [{"name": "k", "digest": None}]}), "k", "has no sha256 digest"),
        ("github", "rate limited", "k", "not a GitHub release document"),
    ]:
        with pytest.raises(fetch.BadRelease, match=why):
            fetch.parse_checksum(kind, text, name, "u")


def test_download_installs_verified_binaries_and_links_them(
    tmp_path: Path, tree: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """No go on PATH: the release files are fetched, checked, cached by version and linked
    into sim/bin, and the first lines say which binaries, from where and why."""
    cache = tmp_path / "cache"
    with ReleaseServer(tmp_path / "releases") as server:
        r = run_main(capsys, cache, server.env())
    assert r.rc == 0, r.err
    assert r.builds == []
    sim = cache / "sim"
    for n in ALL:
        link = sim / "bin" / n
        assert link.is_symlink() and os.access(link, os.X_OK), n
        assert subprocess.run([str(link)], capture_output=True, text=True).stdout == f"{n} fake\n"
    assert os.readlink(sim / "bin" / "etcd") == f"../release/etcd-{E}/bin/etcd"
    assert sorted(p.name for p in (sim / "release").iterdir()) == sorted(
        [f"etcd-{E}", f"helm-{H}", f"kube-{K}", f"kwok-{W}"]
    )
    rec = json.loads((sim / "release" / f"kube-{K}" / ".complete").read_text())
    assert rec["source"] == "release" and rec["version"] == K and len(rec["files"]) == 4
    err = r.err
    assert "asking the release servers for their checksum files first" in err
    assert f"connected: 127.0.0.1:{server.url.rsplit(':', 1)[1]} answered" in err
    assert f"{server.env()['GPULAB_KUBE_RELEASE_URL']}/v{K}/bin/linux/amd64/{{kube-apiserver," in err
    assert "sha256 from SHA256SUMS" in err and "asset digests" in err
    assert "each matched its published sha256" in err
    assert "GPULAB_OFFLINE=1 builds from Go modules instead" in err
    assert not list((sim / "release").glob("*.partial*"))


def test_a_second_run_uses_the_cache_and_asks_no_server(
    tmp_path: Path, tree: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    with ReleaseServer(tmp_path / "releases") as server:
        assert run_main(capsys, cache, server.env()).rc == 0
        asked = len(server.requests)
        (cache / "sim" / "bin" / "kubectl").unlink()  # a link lost: made again from the cache
        again = run_main(capsys, cache, server.env())
    assert again.rc == 0 and len(server.requests) == asked
    assert "nothing to fetch" in again.err and (cache / "sim" / "bin" / "kubectl").is_symlink()


def test_a_checksum_mismatch_stops_with_the_file_both_checksums_and_the_fix(
    tmp_path: Path, tree: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Without go: exit 1, nothing installed, and the message names the file, the published
    and the received sha256 and the fix."""
    published = releases.sha256_of(tree["kube-scheduler"])
    tamper(tree["kube-scheduler"])
    got = releases.sha256_of(tree["kube-scheduler"])
    cache = tmp_path / "cache"
    with ReleaseServer(tmp_path / "releases") as server:
        r = run_main(capsys, cache, server.env())
    assert r.rc == 1 and r.builds == []
    url = f"{server.env()['GPULAB_KUBE_RELEASE_URL']}/v{K}/bin/linux/amd64/kube-scheduler"
    assert "checksum mismatch: kube-scheduler" in r.err
    assert f"file:      {url}\n" in r.err
    assert f"expected:  sha256 {published}  (published in {url}.sha256)" in r.err
    assert f"got:       sha256 {got}" in r.err
    assert "fix: run the same command again" in r.err and "GPULAB_OFFLINE=1" in r.err
    sim = cache / "sim"
    assert not (sim / "bin").exists() and not list((sim / "release").iterdir())


def test_a_checksum_mismatch_with_go_falls_back_to_the_go_build_and_says_why(
    tmp_path: Path, tree: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    tamper(tree[f"helm-v{H}-linux-amd64.tar.gz"])
    with ReleaseServer(tmp_path / "releases") as server:
        r = run_main(capsys, tmp_path / "cache", server.env(), go=True)
    assert r.rc == 0 and len(r.builds) == 1
    assert "checksum mismatch: helm-v" in r.err
    assert f"on 2 cores): helm-v{H}-linux-amd64.tar.gz failed its checksum (above)" in r.err


def test_a_server_that_does_not_answer_means_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A port that accepts and never answers: given up after GPULAB_DOWNLOAD_TIMEOUT, then
    the Go build with the reason; without go, exit 1 naming the fix."""
    with SilentServer() as server:
        env = {**server.env(), "GPULAB_DOWNLOAD_TIMEOUT": "1"}
        no_go = run_main(capsys, tmp_path / "a", env)
        with_go = run_main(capsys, tmp_path / "b", env, go=True)
    assert no_go.rc == 1 and no_go.seconds < 10
    host = server.url.split("://")[1]
    assert f"no release binaries: not connected: {host} did not answer (timed out)" in no_go.err
    assert "the Go build is needed" in no_go.err and "fix: install Go >= 1.26" in no_go.err
    assert with_go.rc == 0 and len(with_go.builds) == 1
    assert "from Go modules (toolchain/sim/build.sh, minutes on 2 cores): not connected:" in with_go.err


def test_a_refused_connection_and_an_http_error_fall_back_with_their_reason(
    tmp_path: Path, tree: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    with SilentServer() as closed:
        url = closed.url
    refused = run_main(capsys, tmp_path / "a", {k: url + "/x" for k in fetch.DEFAULT_BASES}, go=True)
    assert "not connected: 127.0.0.1" in refused.err and "refused" in refused.err.lower()
    (tree["kube-apiserver"].parent / "kube-apiserver.sha256").unlink()
    with ReleaseServer(tmp_path / "releases") as server:
        missing = run_main(capsys, tmp_path / "b", server.env(), go=True)
    assert missing.rc == 0 and len(missing.builds) == 1
    assert "kube-apiserver.sha256 answered HTTP 404" in missing.err


def test_a_download_cut_short_is_not_installed(
    tmp_path: Path, tree: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    with ReleaseServer(tmp_path / "releases") as server:
        kwok = f"https://github.com/kubernetes-sigs/kwok/releases/download/v{W}/kwok-linux-amd64"
        server.cut.add("/" + releases.url_path(kwok))
        r = run_main(capsys, tmp_path / "cache", server.env())
    assert r.rc == 1 and "cut short" in r.err
    assert not (tmp_path / "cache" / "sim" / "bin").exists()


def test_offline_flag_builds_from_go_modules_and_asks_no_server(
    tmp_path: Path, tree: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    with ReleaseServer(tmp_path / "releases") as server:
        r = run_main(capsys, tmp_path / "cache", {**server.env(), "GPULAB_OFFLINE": "1"}, go=True)
        no_go = run_main(capsys, tmp_path / "cache", {**server.env(), "GPULAB_OFFLINE": "1"})
        assert server.requests == []
    assert r.rc == 0 and len(r.builds) == 1 and "on 2 cores): GPULAB_OFFLINE=1" in r.err
    assert no_go.rc == 1 and no_go.builds == [] and "fix: install Go >= 1.26" in no_go.err


def _fake_build_cache(cache: Path) -> None:
    """What build.sh leaves: <comp>-<ver>/bin/... and .complete holding the wrapper fingerprint."""
    for comp, key in (("kube", K), ("etcd", E), ("kwok", W), ("helm", H)):
        d = cache / "sim" / f"{comp}-{key}"
        (d / "bin").mkdir(parents=True)
        for b in fetch.BUILD_BINARIES[comp]:
            (d / "bin" / b).write_text("#!/bin/sh\n")
            (d / "bin" / b).chmod(0o755)
        (d / ".complete").write_text(fetch.wrapper_fingerprint(fetch.WRAPPERS / comp) + "\n")


def test_a_complete_go_build_is_reused_without_go_or_network(
    tmp_path: Path, tree: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    _fake_build_cache(cache)
    assert fetch.cached_build(cache, VERSIONS)
    with ReleaseServer(tmp_path / "releases") as server:
        r = run_main(capsys, cache, server.env())
        assert server.requests == []
    assert r.rc == 0 and len(r.builds) == 1
    assert f"the Go build of Kubernetes v{K}" in r.err and "nothing is compiled or fetched" in r.err
    # Built from other wrapper sources: not reused (build.sh would rebuild, which needs go).
    (cache / "sim" / f"etcd-{E}" / ".complete").write_text("0123456789abcdef\n")
    assert not fetch.cached_build(cache, VERSIONS)


def test_the_fingerprint_is_build_shs() -> None:
    """fetch.wrapper_fingerprint equals build.sh's ``fingerprint`` (sha256sum of go.mod, go.sum,
    *.go concatenated, first 16 hex), computed here by the same shell pipeline."""
    for comp in fetch.COMPONENTS:
        d = fetch.WRAPPERS / comp
        sh = 'for f in "$1"/go.mod "$1"/go.sum "$1"/*.go; do [ -f "$f" ] && cat "$f"; done'
        sh += " | sha256sum | cut -c1-16"
        out = subprocess.run(["bash", "-c", sh, "_", str(d)], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == fetch.wrapper_fingerprint(d), comp


def test_archives_yield_only_regular_file_members(tmp_path: Path) -> None:
    """The binary is copied out of its member by our own name; a link, or a missing member,
    is refused (nothing is extracted by a path taken from the archive)."""
    good = tmp_path / "good.tar.gz"
    bad = tmp_path / "bad.tar.gz"
    with tarfile.open(good, "w:gz") as tf:
        info = tarfile.TarInfo("linux-amd64/helm")
        info.size = 3
        tf.addfile(info, io.BytesIO(b"abc"))
    with tarfile.open(bad, "w:gz") as tf:
        link = tarfile.TarInfo("linux-amd64/helm")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tf.addfile(link)
    fetch._extract(good, "linux-amd64/helm", tmp_path / "helm")
    assert (tmp_path / "helm").read_bytes() == b"abc"
    with pytest.raises(fetch.BadRelease, match="not a regular file"):
        fetch._extract(bad, "linux-amd64/helm", tmp_path / "x")
    with pytest.raises(fetch.BadRelease, match="has no linux-amd64/kubectl"):
        fetch._extract(good, "linux-amd64/kubectl", tmp_path / "x")


def test_platforms_without_every_release_use_the_go_build() -> None:
    assert fetch.goarch("x86_64", "Linux") == "amd64" and fetch.goarch("aarch64", "Linux") == "arm64"
    with pytest.raises(fetch.Unsupported, match="Linux only"):
        fetch.goarch("arm64", "Darwin")
    with pytest.raises(fetch.Unsupported, match="ppc64le"):
        fetch.goarch("ppc64le", "Linux")


def test_bad_overrides_are_errors_not_fallbacks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = run_main(capsys, tmp_path / "c", {"GPULAB_KUBE_RELEASE_URL": "file:///etc"}, go=True)
    assert r.rc == 2 and "GPULAB_KUBE_RELEASE_URL='file:///etc' is not an http(s) URL" in r.err
    assert r.builds == []
    r = run_main(capsys, tmp_path / "c", {"GPULAB_DOWNLOAD_TIMEOUT": "soon"}, go=True)
    assert r.rc == 2 and "GPULAB_DOWNLOAD_TIMEOUT='soon'" in r.err


def test_the_cli_runs_with_the_system_python_before_any_venv(tmp_path: Path) -> None:
    """setup.sh runs ``python3 toolchain/sim/fetch.py``: standard library only."""
    env = {
        "PATH": "/usr/bin:/bin",
        "GPULAB_CACHE": str(tmp_path),
        "GPULAB_OFFLINE": "1",
        "HOME": str(tmp_path),
    }
    p = subprocess.run(
        [sys.executable, "-I", str(fetch.HERE / "fetch.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 1 and "GPULAB_OFFLINE=1" in p.stderr and "no go on PATH" in p.stderr
