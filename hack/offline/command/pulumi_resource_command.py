"""gpu-lab's offline stand-in for the ``command`` resource provider (pulumi-command v1.2.1).

Why this exists: the upstream provider is a Go module that the Go module proxy reachable
from this project's offline machines does not serve, while the Python SDK (PyPI
``pulumi-command==1.2.1``) is available. This plugin implements the one resource the lab
uses, ``command:local:Command``, with upstream's behaviour (create/update/delete commands,
``triggers`` replacing, ``environment``, ``dir``, ``interpreter``, ``stdin``, ``logging``,
``PULUMI_COMMAND_STDOUT``/``STDERR``, preview without running anything). Everything else
(``command:remote:*``, the ``command:local:run`` invoke, ``assetPaths``/``archivePaths``,
Construct/Call/Parameterize) is refused with an error naming the stand-in. On a connected
machine the engine downloads the real provider instead; ``hack/offline/command/install.sh``
puts this one into the plugin cache.

Process contract (``pkg/resource/plugin/provider_plugin.go`` in pulumi/pulumi): the engine
runs ``pulumi-resource-command [flags] <engine-address>`` in the program directory; the
plugin prints its gRPC port on the first stdout line and serves ``pulumirpc.ResourceProvider``
(stubs from the PyPI ``pulumi`` SDK) until it is interrupted. Command output lines are sent
to the engine's ``Engine/Log`` while the command runs.

Pure logic lives in ``command_logic.py`` (check, diff, state, environment) and
``command_exec.py`` (running a command), next to this file.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import sys
import threading
import time
from concurrent import futures
from pathlib import Path
from typing import Any, NoReturn

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
# Installed beside this file (install.sh); in the checkout, one folder up.
if not (HERE / "pulumi_protos.py").is_file():
    sys.path.insert(1, str(HERE.parent))

from pulumi_protos import bare_packages  # noqa: E402

bare_packages()  # the generated modules only, not the whole SDK (pulumi_protos.py says why)
try:
    import grpc
    from google.protobuf import empty_pb2, json_format, struct_pb2
    from pulumi.runtime.proto import engine_pb2, engine_pb2_grpc, plugin_pb2, provider_pb2, provider_pb2_grpc
except ImportError as exc:  # the engine shows this when the plugin exits before its port line
    sys.exit(
        f"pulumi-resource-command (gpu-lab stand-in): {exc} on {sys.executable}; it needs grpcio and "
        "the pulumi SDK: set GPULAB_PYTHON to the project's .venv/bin/python (`make venv`)"
    )

from command_exec import CommandFailed, Runs, run_command  # noqa: E402
from command_logic import (  # noqa: E402
    IMPLEMENTED_VERSION,
    INPUT_TYPES,
    LOCAL_COMMAND,
    STANDIN,
    UNKNOWN,
    build_env,
    check_failures,
    compute_diff,
    reveal,
    state_of,
)

VERSION_FILE = HERE / "VERSION"


def plugin_version() -> str:
    """The version to report: ``VERSION`` beside this file (written by install.sh), else 1.2.1."""
    try:
        return VERSION_FILE.read_text().strip() or IMPLEMENTED_VERSION
    except OSError:
        return IMPLEMENTED_VERSION


def to_dict(msg: struct_pb2.Struct) -> dict[str, Any]:
    """A ``google.protobuf.Struct`` as a plain dict (markers for secrets/unknowns kept)."""
    return dict(json_format.MessageToDict(msg))


def to_struct(d: dict[str, Any]) -> struct_pb2.Struct:
    """A plain dict as a ``google.protobuf.Struct``."""
    s = struct_pb2.Struct()
    s.update(d)
    return s


def resource_type(urn: str, typ: str = "") -> str:
    """The resource's type token: the request's ``type``, else the last type in the URN."""
    if typ:
        return typ
    parts = urn.split("::")
    return parts[2].split("$")[-1] if len(parts) >= 4 else ""


def resource_name(urn: str, name: str = "") -> str:
    """The resource's name: the request's ``name``, else the URN's last part."""
    return name or urn.split("::")[-1]


def _refuse(context: grpc.ServicerContext, what: str) -> NoReturn:
    context.abort(
        grpc.StatusCode.UNIMPLEMENTED,
        f"{what} is not implemented by the {STANDIN}, which implements only the resource "
        f"{LOCAL_COMMAND}; run on a machine that can download the real pulumi-command provider",
    )
    raise AssertionError("unreachable")  # context.abort raises


class CommandProvider(provider_pb2_grpc.ResourceProviderServicer):
    """The ``pulumirpc.ResourceProvider`` servicer; one instance per plugin process."""

    def __init__(self, engine_address: str) -> None:
        self.engine_address = engine_address
        self.runs = Runs()
        self._engine: engine_pb2_grpc.EngineStub | None = None
        self._lock = threading.Lock()

    # -- helpers ---------------------------------------------------------------------
    def _engine_stub(self) -> engine_pb2_grpc.EngineStub | None:
        with self._lock:
            if self._engine is None and self.engine_address:
                self._engine = engine_pb2_grpc.EngineStub(grpc.insecure_channel(self.engine_address))
            return self._engine

    def log(self, urn: str, message: str) -> None:
        """One output line to the engine: ephemeral INFO for ``urn``, as upstream's InfoStatus."""
        stub = self._engine_stub()
        if stub is None:
            return
        req = engine_pb2.LogRequest(severity=engine_pb2.INFO, message=message, urn=urn, ephemeral=True)
        # Best-effort: the command's outcome does not depend on its log reaching the engine.
        with contextlib.suppress(grpc.RpcError):
            stub.Log(req, timeout=30)

    def _only_local(self, context: grpc.ServicerContext, urn: str, typ: str = "") -> None:
        t = resource_type(urn, typ)
        if t != LOCAL_COMMAND:
            _refuse(context, f"the resource type {t or '(unknown)'}")

    def _execute(
        self,
        context: grpc.ServicerContext,
        urn: str,
        command: str,
        props: dict[str, Any],
        previous: tuple[str, str] | None,
        timeout: float,
    ) -> tuple[str, str]:
        """Run ``command`` with the options in ``props``; a failure aborts the RPC."""
        p = reveal(props)
        logging = p.get("logging")
        env = build_env(os.environ, p.get("environment"), previous, p.get("addPreviousOutputInEnv"))
        try:
            return run_command(
                command,
                interpreter=p.get("interpreter"),
                env=env,
                cwd=p.get("dir") or os.getcwd(),
                stdin=p.get("stdin"),
                timeout=timeout,
                log=lambda line: self.log(urn, line),
                log_stdout=logging in (None, "stdout", "stdoutAndStderr"),
                log_stderr=logging in (None, "stderr", "stdoutAndStderr"),
                runs=self.runs,
            )
        except CommandFailed as exc:
            # A bare error: no partial state is kept (as upstream's infer layer).
            context.abort(grpc.StatusCode.UNKNOWN, str(exc))
            raise AssertionError("unreachable") from None

    # -- plugin and provider configuration ---------------------------------------------
    def Handshake(self, request: Any, context: Any) -> Any:
        """Unimplemented, as upstream's: the engine then takes Configure's answer."""
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "Handshake is not implemented; use Configure")

    def GetPluginInfo(self, request: Any, context: Any) -> Any:
        """The version the plugin is installed as (1.2.1)."""
        return plugin_pb2.PluginInfo(version=plugin_version())

    def GetSchema(self, request: Any, context: Any) -> Any:
        """Refused: the stand-in carries no schema (the SDK comes from PyPI)."""
        _refuse(context, "GetSchema")

    def CheckConfig(self, request: Any, context: Any) -> Any:
        """The provider has no configuration: accept what the engine sends."""
        return provider_pb2.CheckResponse(inputs=request.news)

    def DiffConfig(self, request: Any, context: Any) -> Any:
        """No configuration, so never a provider replacement."""
        return provider_pb2.DiffResponse(changes=provider_pb2.DiffResponse.DIFF_NONE)

    def Configure(self, request: Any, context: Any) -> Any:
        """What upstream (pulumi-go-provider) answers; Handshake stays unimplemented as upstream's."""
        return provider_pb2.ConfigureResponse(
            acceptSecrets=True, supportsPreview=True, acceptResources=True, acceptOutputs=True
        )

    # -- resource lifecycle ------------------------------------------------------------
    def Check(self, request: Any, context: Any) -> Any:
        """Echo the new inputs (secrets and unknowns kept); fail on what cannot be run."""
        self._only_local(context, request.urn, request.type)
        failures = [
            provider_pb2.CheckFailure(property=prop, reason=reason)
            for prop, reason in check_failures(to_dict(request.news))
        ]
        return provider_pb2.CheckResponse(inputs=request.news, failures=failures)

    def Diff(self, request: Any, context: Any) -> Any:
        """``triggers`` changes replace, other input changes update, none is no change."""
        self._only_local(context, request.urn, request.type)
        state = to_dict(request.olds)
        if request.HasField("old_inputs"):
            olds = to_dict(request.old_inputs)
        else:  # an engine that does not send old inputs: take them from the state
            olds = {k: v for k, v in state.items() if k in INPUT_TYPES}
        news = to_dict(request.news)
        for path in request.ignoreChanges:  # top-level paths; the engine handles the rest
            if path in state:
                news[path] = state[path]
            elif path in news:
                del news[path]
        result = compute_diff(olds, news)
        return provider_pb2.DiffResponse(
            changes=provider_pb2.DiffResponse.DIFF_SOME
            if result.changed
            else provider_pb2.DiffResponse.DIFF_NONE,
            replaces=result.replaces,
            diffs=result.diffs,
            detailedDiff={
                path: provider_pb2.PropertyDiff(kind=kind, inputDiff=False)  # type: ignore[arg-type]
                for path, kind in result.detailed.items()
            },
            hasDetailedDiff=True,
            deleteBeforeReplace=False,  # the resource option decides; the engine applies it
        )

    def Create(self, request: Any, context: Any) -> Any:
        """Run ``create`` (nothing in preview: stdout/stderr are unknown then)."""
        self._only_local(context, request.urn, request.type)
        props = to_dict(request.properties)
        rid = resource_name(request.urn, request.name) + secrets.token_hex(4)
        if request.preview:
            state = state_of(props, UNKNOWN, UNKNOWN)
        elif props.get("create") is None:
            state = state_of(props, "", "")
        else:
            # Create never sees PULUMI_COMMAND_*, not even when it replaces an older resource.
            out, err = self._execute(
                context, request.urn, reveal(props["create"]), props, None, request.timeout
            )
            state = state_of(props, out, err)
        return provider_pb2.CreateResponse(id=rid, properties=to_struct(state))

    def Update(self, request: Any, context: Any) -> Any:
        """Run ``update``, else ``create``, with the previous stdout/stderr in the environment."""
        self._only_local(context, request.urn, request.type)
        olds = to_dict(request.olds)
        news = to_dict(request.news)
        if request.preview:
            return provider_pb2.UpdateResponse(properties=to_struct(state_of(news, UNKNOWN, UNKNOWN)))
        command = news.get("update")
        if command is None:
            command = news.get("create")
        if command is None:  # nothing to run: the old outputs stay
            state = state_of(news, olds.get("stdout", ""), olds.get("stderr", ""))
        else:
            previous = (reveal(olds.get("stdout")) or "", reveal(olds.get("stderr")) or "")
            out, err = self._execute(context, request.urn, reveal(command), news, previous, request.timeout)
            state = state_of(news, out, err)
        return provider_pb2.UpdateResponse(properties=to_struct(state))

    def Delete(self, request: Any, context: Any) -> Any:
        """Run ``delete`` from the stored state only (its environment, dir, interpreter...)."""
        self._only_local(context, request.urn, request.type)
        state = to_dict(request.properties)
        command = reveal(state.get("delete"))
        if command is not None:
            previous = (reveal(state.get("stdout")) or "", reveal(state.get("stderr")) or "")
            self._execute(context, request.urn, command, state, previous, request.timeout)
        return empty_pb2.Empty()

    def Read(self, request: Any, context: Any) -> Any:
        """Echo the state back (refresh runs nothing, as upstream)."""
        self._only_local(context, request.urn, request.type)
        props = to_dict(request.properties)
        if props:
            # Divergence (pulumi-command#1377): a state without stdout/stderr is given empty
            # ones, so the SDK never fails with "Missing required field 'stdout'".
            props.setdefault("stdout", "")
            props.setdefault("stderr", "")
        return provider_pb2.ReadResponse(id=request.id, properties=to_struct(props), inputs=request.inputs)

    def Cancel(self, request: Any, context: Any) -> Any:
        """Kill every running command (upstream cancels their contexts)."""
        self.runs.kill_all()
        return empty_pb2.Empty()

    # -- refused -----------------------------------------------------------------------
    def Invoke(self, request: Any, context: Any) -> Any:
        """Refused: no functions (``command:local:run``) in the stand-in."""
        _refuse(context, f"the function {request.tok or '(unknown)'}")

    def Construct(self, request: Any, context: Any) -> Any:
        """Refused: the command package has no components."""
        _refuse(context, f"Construct of {request.type or '(unknown)'}")

    def Call(self, request: Any, context: Any) -> Any:
        """Refused: the command package has no methods."""
        _refuse(context, f"Call of {request.tok or '(unknown)'}")

    def Parameterize(self, request: Any, context: Any) -> Any:
        """Refused: the command package is not parameterized."""
        _refuse(context, "Parameterize")


def _watch_parent(provider: CommandProvider, server: grpc.Server) -> None:
    parent = os.getppid()
    while True:
        time.sleep(1)
        if os.getppid() != parent:
            provider.runs.kill_all()
            server.stop(0)
            os._exit(0)


def main(argv: list[str]) -> int:
    """Entry point: ``pulumi-resource-command [flags...] ENGINE_ADDRESS``; prints the port."""
    positional = [a for a in argv if not a.startswith("-")]
    provider = CommandProvider(positional[-1] if positional else "")
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=64),
        options=[
            ("grpc.max_receive_message_length", 400 * 1024 * 1024),
            ("grpc.max_send_message_length", 400 * 1024 * 1024),
        ],
    )
    provider_pb2_grpc.add_ResourceProviderServicer_to_server(provider, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()

    def stop(signum: int, frame: Any) -> None:
        provider.runs.kill_all()
        server.stop(0)

    # Before the port is printed: the engine may stop the plugin (SIGINT, then SIGKILL 5 s
    # later) as soon as it has read it, and a SIGINT ignored at start stays ignored otherwise.
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(port, flush=True)
    threading.Thread(target=_watch_parent, args=(provider, server), daemon=True).start()
    server.wait_for_termination()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
