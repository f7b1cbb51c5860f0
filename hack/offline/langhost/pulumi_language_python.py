"""A Python language host for the Pulumi engine (``pulumi-language-python``).

Why this exists: the upstream host is a Go module
(``github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3``) that the Go module
proxy reachable from this project's machines does not serve (every version answers 403),
while the CLI and the providers are served. This host implements the same gRPC contract
(``pulumirpc.LanguageRuntime`` from the Pulumi Python SDK's generated stubs) for what the
lab needs: ``pulumi preview``/``up``/``destroy``/``refresh`` of a Python program and Python
policy packs (``--policy-pack``). (The lab uses no dynamic providers; the offline toolchain
does not install their ``pulumi-resource-pulumi-python`` shim.)

Process contract (set by the engine, ``sdk/go/common/resource/plugin/langruntime_plugin.go``):
the engine starts ``pulumi-language-python [flags] <engine-address>``; the host prints its
gRPC port on the first stdout line and serves until the engine interrupts it (SIGINT, then
SIGKILL 5 s later).

Program execution is delegated to ``pulumi-language-python-exec``, the upstream runner
script shipped in the ``github.com/pulumi/pulumi/sdk/v3`` module zip, which
``hack/offline/build-pulumi.sh`` copies beside this file at build time (it is not committed here).

Errors: a program failure is returned as ``RunResponse.error`` (exit code 32 means the
program already printed an actionable message: ``bail``); a missing interpreter or runner
is reported with the first fix (``make toolchain``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

# Installed beside this file (hack/offline/build-pulumi.sh); in the checkout, one folder up.
_here = Path(__file__).resolve().parent
sys.path.insert(0, str(_here if (_here / "pulumi_protos.py").is_file() else _here.parent))
from pulumi_protos import bare_packages  # noqa: E402

bare_packages()  # the generated modules only, not the whole SDK (pulumi_protos.py says why)
import grpc  # noqa: E402
from google.protobuf import empty_pb2  # noqa: E402
from google.protobuf.json_format import MessageToDict  # noqa: E402
from pulumi.runtime.proto import language_pb2, language_pb2_grpc, plugin_pb2  # noqa: E402

HOST_DIR = Path(__file__).resolve().parent
EXEC_SCRIPT = HOST_DIR / "pulumi-language-python-exec"
VERSION_FILE = HOST_DIR / "VERSION"
# Exit code the upstream runner uses after it printed an actionable message.
USER_ACTIONABLE_EXIT = 32
# Asks the chosen interpreter which Pulumi resource plugins its installed SDKs need.
_PLUGIN_SCAN = r"""
import json, pathlib, sys, sysconfig
out = []
for base in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
    for f in pathlib.Path(base).glob("*/pulumi-plugin.json"):
        try:
            d = json.loads(f.read_text())
        except ValueError:
            continue
        if d.get("resource"):
            out.append({"name": d.get("name") or f.parent.name.replace("pulumi_", ""),
                        "version": d.get("version", ""), "server": d.get("server", "")})
print(json.dumps(out))
"""


def host_version() -> str:
    """The version this host reports: the CLI release it was built for, with ``+gpulab``."""
    try:
        return VERSION_FILE.read_text().strip()
    except OSError:
        return "0.0.0+gpulab"


def _options(info: language_pb2.ProgramInfo) -> dict[str, Any]:
    """``runtime.options`` from Pulumi.yaml as a plain dict (empty when absent)."""
    if not info.HasField("options"):
        return {}
    return dict(MessageToDict(info.options))


def virtualenv_for(info: language_pb2.ProgramInfo, plugin: bool = False) -> Path | None:
    """The virtualenv a program or plugin runs in: ``runtime.options.virtualenv`` (from
    Pulumi.yaml, or a policy pack's PulumiPolicy.yaml), relative to ``info.root_directory``
    (for a policy pack the pack's own directory); None when unset.

    As the official host does (pulumi/pulumi sdk/python/cmd/pulumi-language-python
    ``parseOptions`` and sdk/python/toolchain/pip.go ``resolveVirtualEnvironmentPath``,
    v3.259.0): a plugin other than a policy pack (``plugin``) defaults to ``venv``; a program
    and a policy pack keep the ambient interpreter when the option is unset.
    """
    venv = _options(info).get("virtualenv") or ("venv" if plugin else None)
    if not venv:
        return None
    root = info.root_directory or info.program_directory
    # filepath.Join cleans the result (`policy/../.venv` is `.venv`): so does normpath.
    return Path(venv) if os.path.isabs(venv) else Path(os.path.normpath(os.path.join(root, venv)))


def activated(env: dict[str, str], venv: Path | None) -> dict[str, str]:
    """``env`` with ``venv`` activated as the official host's ``ActivateVirtualEnv`` does
    (``VIRTUAL_ENV`` set, its ``bin`` first on ``PATH``, ``PYTHONHOME`` dropped); ``env``
    unchanged for None."""
    if venv is None:
        return env
    out = {k: v for k, v in env.items() if k != "PYTHONHOME"}
    out["VIRTUAL_ENV"] = str(venv)
    out["PATH"] = os.pathsep.join([str(venv / "bin"), *filter(None, [env.get("PATH")])])
    return out


def python_for(info: language_pb2.ProgramInfo, plugin: bool = False) -> str:
    """The interpreter for a program or plugin: its virtualenv's (:func:`virtualenv_for`),
    else PULUMI_PYTHON_CMD, else ``python3``.

    Raises:
        FileNotFoundError: the virtualenv named in the options does not exist, with the fix.
    """
    vdir = virtualenv_for(info, plugin)
    if vdir is not None:
        py = vdir / "bin" / "python"
        if not py.exists():
            raise FileNotFoundError(
                f"virtualenv {vdir} from runtime.options.virtualenv does not exist: "
                "run `make venv` (or `pulumi install`) in the project first"
            )
        return str(py)
    return os.environ.get("PULUMI_PYTHON_CMD", "python3")


class LanguageHost(language_pb2_grpc.LanguageRuntimeServicer):
    """gRPC servicer; one instance per host process."""

    def __init__(self, engine_address: str) -> None:
        self.engine_address = engine_address
        self._children: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()

    # -- bookkeeping -----------------------------------------------------------------
    def _track(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._children.add(proc)

    def _untrack(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._children.discard(proc)

    def terminate_children(self) -> None:
        with self._lock:
            procs = list(self._children)
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 5
        for p in procs:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()

    # -- RPCs ------------------------------------------------------------------------
    def Handshake(self, request: Any, context: Any) -> Any:
        if request.engine_address:
            self.engine_address = request.engine_address
        return language_pb2.LanguageHandshakeResponse()

    def GetPluginInfo(self, request: Any, context: Any) -> Any:
        return plugin_pb2.PluginInfo(version=host_version())

    def GetRequiredPlugins(self, request: Any, context: Any) -> Any:
        return language_pb2.GetRequiredPluginsResponse(plugins=[])

    def GetRequiredPackages(self, request: Any, context: Any) -> Any:
        try:
            py = python_for(request.info)
            out = subprocess.run(
                [py, "-c", _PLUGIN_SCAN], capture_output=True, text=True, check=True, timeout=60
            ).stdout
            found = json.loads(out)
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"cannot list required plugins: {exc}")
            raise  # unreachable: abort raises
        pkgs = [
            plugin_pb2.PackageDependency(
                kind="resource", name=p["name"], version=p["version"], server=p["server"]
            )
            for p in sorted(found, key=lambda p: p["name"])
        ]
        return language_pb2.GetRequiredPackagesResponse(packages=pkgs)

    def GetProgramDependencies(self, request: Any, context: Any) -> Any:
        return language_pb2.GetProgramDependenciesResponse(dependencies=[])

    def About(self, request: Any, context: Any) -> Any:
        try:
            py = python_for(request.info)
        except FileNotFoundError:
            py = "python3"
        ver = subprocess.run([py, "--version"], capture_output=True, text=True).stdout.strip()
        return language_pb2.AboutResponse(executable=py, version=ver.removeprefix("Python "))

    def InstallDependencies(self, request: Any, context: Any) -> Iterator[Any]:
        # A plugin's (a policy pack's too: `pulumi install` in its directory) defaults to venv.
        vdir = virtualenv_for(request.info, plugin=request.is_plugin)
        steps: list[list[str]] = []
        if vdir is not None:
            if not (vdir / "bin" / "python").exists():
                steps.append([sys.executable, "-m", "venv", str(vdir)])
            py = str(vdir / "bin" / "python")
        else:
            py = os.environ.get("PULUMI_PYTHON_CMD", "python3")
        req = Path(request.info.program_directory) / "requirements.txt"
        if req.exists():
            steps.append([py, "-m", "pip", "install", "-q", "-r", str(req)])
        for argv in steps:
            yield language_pb2.InstallDependenciesResponse(stdout=f"$ {' '.join(argv)}\n".encode())
            proc = subprocess.run(argv, capture_output=True)
            yield language_pb2.InstallDependenciesResponse(stdout=proc.stdout, stderr=proc.stderr)
            if proc.returncode != 0:
                context.abort(grpc.StatusCode.UNKNOWN, f"{argv[0]} exited {proc.returncode}")

    def Run(self, request: Any, context: Any) -> Any:
        try:
            py = python_for(request.info)
        except FileNotFoundError as exc:
            return language_pb2.RunResponse(error=str(exc))
        if not EXEC_SCRIPT.exists():
            return language_pb2.RunResponse(
                error=f"{EXEC_SCRIPT} is missing: run `make toolchain` to rebuild the Pulumi toolchain"
            )
        args = [py, "-u", str(EXEC_SCRIPT)]

        def opt(flag: str, value: str) -> None:
            if value:
                args.extend([f"--{flag}", value])

        opt("monitor", request.monitor_address)
        opt("engine", self.engine_address)
        opt("project", request.project)
        opt("root_directory", request.info.root_directory)
        opt("stack", request.stack)
        opt("pwd", request.pwd)
        opt("dry_run", "true" if request.dryRun else "false")
        opt("parallel", str(request.parallel))
        opt("organization", request.organization)
        args.append(request.info.entry_point or ".")
        args.extend(request.args)

        env = dict(os.environ)
        env["PULUMI_CONFIG"] = json.dumps(dict(request.config))
        env["PULUMI_CONFIG_SECRET_KEYS"] = json.dumps(list(request.configSecretKeys))
        try:
            proc = subprocess.Popen(args, env=env, cwd=request.pwd or None)
        except OSError as exc:
            return language_pb2.RunResponse(error=f"could not start {py}: {exc}")
        self._track(proc)

        def interrupt() -> None:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)

        context.add_callback(interrupt)
        try:
            code = proc.wait()
        finally:
            self._untrack(proc)
        sys.stdout.flush()
        sys.stderr.flush()
        if code == 0:
            return language_pb2.RunResponse()
        if code == USER_ACTIONABLE_EXIT:
            return language_pb2.RunResponse(bail=True)
        return language_pb2.RunResponse(error=f"program exited with non-zero exit code: {code}")

    def RunPlugin(self, request: Any, context: Any) -> Iterator[Any]:
        """Runs a Python plugin; for policy packs (kind ``analyzer``) ``python -m pulumi.policy``
        in the pack's virtualenv (PulumiPolicy.yaml ``runtime.options.virtualenv``), activated."""
        is_plugin = request.kind != "analyzer"
        try:
            py = python_for(request.info, plugin=is_plugin)
        except FileNotFoundError as exc:
            yield language_pb2.RunPluginResponse(stderr=f"{exc}\n".encode())
            yield language_pb2.RunPluginResponse(exitcode=1)
            return
        if request.kind == "analyzer":
            argv = [py, "-u", "-m", "pulumi.policy", *request.args, request.info.program_directory]
            cwd = request.info.program_directory
        else:
            argv = [py, "-u", request.info.program_directory, *request.args]
            cwd = request.pwd or request.info.program_directory
        env = activated(dict(os.environ), virtualenv_for(request.info, plugin=is_plugin))
        for kv in request.env:
            k, _, v = kv.partition("=")
            env[k] = v
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._track(proc)

        def kill() -> None:
            if proc.poll() is None:
                proc.kill()

        context.add_callback(kill)
        queue: list[Any] = []
        cond = threading.Condition()

        def pump(stream: Any, field: str) -> None:
            for chunk in iter(lambda: stream.read1(65536), b""):
                with cond:
                    queue.append(language_pb2.RunPluginResponse(**{field: chunk}))
                    cond.notify()
            with cond:
                queue.append(None)
                cond.notify()

        threads = [
            threading.Thread(target=pump, args=(proc.stdout, "stdout"), daemon=True),
            threading.Thread(target=pump, args=(proc.stderr, "stderr"), daemon=True),
        ]
        for t in threads:
            t.start()
        done = 0
        try:
            while done < 2:
                with cond:
                    while not queue:
                        cond.wait()
                    item = queue.pop(0)
                if item is None:
                    done += 1
                else:
                    yield item
            yield language_pb2.RunPluginResponse(exitcode=proc.wait())
        finally:
            self._untrack(proc)

    def Cancel(self, request: Any, context: Any) -> Any:
        self.terminate_children()
        return empty_pb2.Empty()


def _watch_parent(host: LanguageHost, server: grpc.Server) -> None:
    parent = os.getppid()
    while True:
        time.sleep(1)
        if os.getppid() != parent:
            host.terminate_children()
            server.stop(0)
            os._exit(0)


def main(argv: list[str]) -> int:
    """Entry point: ``pulumi-language-python [-flags...] ENGINE_ADDRESS``; prints the port."""
    positional = [a for a in argv if not a.startswith("-")]
    engine = positional[-1] if positional else ""
    host = LanguageHost(engine)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=16),
        options=[
            ("grpc.max_receive_message_length", 400 * 1024 * 1024),
            ("grpc.max_send_message_length", 400 * 1024 * 1024),
        ],
    )
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(host, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()

    def stop(signum: int, frame: Any) -> None:
        host.terminate_children()
        server.stop(0)

    # The engine shuts a plugin down with SIGINT and kills it 5 s later (plugin.go, since
    # pulumi#19603). Handled here, not left to Python's default: a process started with SIGINT
    # ignored (a `make lab &` from a script; POSIX shells ignore it in background jobs) keeps
    # it ignored, and every `pulumi` run would wait out those 5 s. Before the port is printed:
    # the engine may signal as soon as it has read it.
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    print(port, flush=True)
    threading.Thread(target=_watch_parent, args=(host, server), daemon=True).start()
    server.wait_for_termination()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
