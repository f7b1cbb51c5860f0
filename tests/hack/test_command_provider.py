"""The offline pulumi-command stand-in (hack/offline/command): its pure parts, then its gRPC
surface in-process (a fake engine collects the log lines). No Pulumi CLI needed."""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2, json_format
from pulumi.runtime.proto import engine_pb2_grpc, provider_pb2, provider_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]
PROVIDER_PY = ROOT / "hack" / "offline" / "command" / "pulumi_resource_command.py"


def _load() -> Any:
    spec = importlib.util.spec_from_file_location("pulumi_resource_command", PROVIDER_PY)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["pulumi_resource_command"] = mod
    spec.loader.exec_module(mod)  # also puts hack/offline/command on sys.path
    return mod


prc = _load()
logic = sys.modules["command_logic"]
cexec = sys.modules["command_exec"]
SECRET = {logic.SIG_KEY: logic.SECRET_SIG, "value": "s3cret"}
URN = "urn:pulumi:t::p::command:local:Command::c1"


def test_markers_match_the_pulumi_sdk() -> None:
    from pulumi.runtime import rpc

    assert logic.UNKNOWN == rpc.UNKNOWN
    assert rpc._special_sig_key == logic.SIG_KEY
    assert rpc._special_secret_sig == logic.SECRET_SIG


# -- diff ---------------------------------------------------------------------------------
def test_diff_no_change_ignores_engine_keys_and_treats_null_as_absent() -> None:
    olds = {"create": "a", "dir": None, "__defaults": ["x"]}
    news = {"create": "a", "version": "1.2.1", "__meta": 1, "stdin": None}
    d = logic.compute_diff(olds, news)
    assert not d.changed and d.replaces == [] and d.diffs == [] and d.detailed == {}


@pytest.mark.parametrize("key", ["create", "delete", "update", "dir", "interpreter", "logging", "stdin"])
def test_diff_other_inputs_update_in_place(key: str) -> None:
    d = logic.compute_diff({key: "a"}, {key: "b"})
    assert d.changed and d.replaces == [] and d.diffs == [key]
    assert d.detailed == {key: logic.UPDATE}


def test_diff_environment_element_paths_and_secrets_compare_whole() -> None:
    olds = {"environment": {"A": "1", "B": SECRET, "GONE": "x"}}
    news = {"environment": {"A": "2", "B": {**SECRET, "value": "other"}, "NEW VAR": "y"}}
    d = logic.compute_diff(olds, news)
    assert d.diffs == ["environment"] and d.replaces == []
    assert d.detailed == {
        "environment.A": logic.UPDATE,
        "environment.B": logic.UPDATE,
        "environment.GONE": logic.DELETE,
        'environment["NEW VAR"]': logic.ADD,
    }
    assert not logic.compute_diff(olds, olds).changed


def test_diff_triggers_replace_element_add_and_whole() -> None:
    d = logic.compute_diff({"triggers": [1, "a"], "create": "x"}, {"triggers": [2, "a", True], "create": "y"})
    assert d.replaces == ["triggers"] and d.diffs == ["create", "triggers"]
    assert d.detailed == {"triggers[0]": logic.UPDATE_REPLACE, "triggers[2]": logic.ADD_REPLACE, "create": 4}
    assert logic.compute_diff({}, {"triggers": ["a"]}).detailed == {"triggers": logic.ADD_REPLACE}
    assert logic.compute_diff({"triggers": ["a"]}, {}).replaces == ["triggers"]
    # a boolean is not the number 1; an unknown element is a change (replace in preview)
    assert logic.compute_diff({"triggers": [1]}, {"triggers": [True]}).changed
    assert logic.compute_diff({"triggers": ["a"]}, {"triggers": [logic.UNKNOWN]}).replaces == ["triggers"]


# -- check --------------------------------------------------------------------------------
def test_check_accepts_every_upstream_input_with_secrets_and_unknowns() -> None:
    news = {
        "create": SECRET,
        "update": logic.UNKNOWN,
        "delete": "rm -f x",
        "triggers": [1, {"a": SECRET}, None],
        "dir": "/tmp",
        "environment": {"A": SECRET, "B": logic.UNKNOWN, "C": "c"},
        "interpreter": ["/bin/bash", SECRET],
        "stdin": "in",
        "logging": "stdoutAndStderr",
        "addPreviousOutputInEnv": False,
        "__internal": object(),
        "assetPaths": None,
    }
    assert logic.check_failures(news) == []


@pytest.mark.parametrize(
    ("news", "prop", "words"),
    [
        ({"bogus": 1}, "bogus", "unrecognized property"),
        ({"logging": "loud"}, "logging", "stdoutAndStderr"),
        ({"logging": {**SECRET, "value": "loud"}}, "logging", "a secret value"),
        ({"environment": {"N": 3.0}}, "environment.N", "must be a string"),
        ({"environment": {"S": {**SECRET, "value": True}}}, "environment.S", "must be a string"),
        ({"environment": {"A=B": "x"}}, 'environment["A=B"]', "invalid environment variable name"),
        ({"environment": ["A"]}, "environment", "a map of strings"),
        ({"interpreter": ["/bin/sh", 5.0]}, "interpreter[1]", "must be a string"),
        ({"interpreter": "/bin/sh"}, "interpreter", "a list of strings"),
        ({"create": ["echo"]}, "create", "must be a string"),
        ({"addPreviousOutputInEnv": "yes"}, "addPreviousOutputInEnv", "a boolean"),
        ({"triggers": "a"}, "triggers", "a list"),
        ({"assetPaths": ["*.txt"]}, "assetPaths", "not supported"),
        ({"archivePaths": ["**"]}, "archivePaths", "not supported"),
    ],
)
def test_check_failures_name_the_property_and_the_standin(news: dict, prop: str, words: str) -> None:
    failures = logic.check_failures(news)
    assert [p for p, _ in failures] == [prop]
    reason = failures[0][1]
    assert words in reason and "offline stand-in for pulumi-command (gpu-lab toolchain)" in reason
    if logic.is_secret(news.get("logging")):
        assert "loud" not in reason  # a secret value is never shown


# -- environment, argv, trimming, errors ---------------------------------------------------
def test_build_env_layers_and_previous_outputs() -> None:
    STDOUT = "PULUMI_COMMAND_STDOUT"
    base = {"PATH": "/bin", "A": "base", STDOUT: "inherited"}
    env = logic.build_env(base, {"A": "mine", "B": "b"}, ("old out", ""))
    assert env == {"PATH": "/bin", "A": "mine", "B": "b", STDOUT: "old out"}
    assert "PULUMI_COMMAND_STDERR" not in env  # only non-empty previous values are set
    assert logic.build_env({}, None, ("o", "e"), add_previous=False) == {}
    assert logic.build_env({}, None, ("o", "e"), add_previous=True) == {
        STDOUT: "o",
        "PULUMI_COMMAND_STDERR": "e",
    }
    assert logic.build_env({"X": "1"}, {}, None) == {"X": "1"}


def test_argv_trimming_and_state() -> None:
    assert logic.argv_for(None, "echo a; b") == ["/bin/sh", "-c", "echo a; b"]
    assert logic.argv_for([], "x") == ["/bin/sh", "-c", "x"]
    assert logic.argv_for(["python3", "-c"], "print(1)") == ["python3", "-c", "print(1)"]
    assert logic.trim_newline("a\n\n") == "a\n"
    assert logic.trim_newline("a\r\n") == "a\r"
    assert logic.trim_newline("a") == "a" and logic.trim_newline("") == ""
    state = logic.state_of({"create": SECRET, "dir": None, "__x": 1, "stdout": "stale"}, "o", "e")
    assert state == {"create": SECRET, "stdout": "o", "stderr": "e"}


def test_error_text_is_upstreams_with_the_output_tail() -> None:
    assert cexec.go_quote('echo "a"\tb\n\x01é') == '"echo \\"a\\"\\tb\\n\\x01é"'
    assert cexec.exit_description(7) == "exit status 7"
    assert cexec.exit_description(-9) == "signal: killed"
    text = cexec.failure_text("exit status 1", "false", b"x" * 40000 + b"END")
    assert text.startswith('exit status 1: running "false":\n[... ')
    assert text.endswith("END") and len(text) < 33000


def test_line_splitter_lines_cr_and_the_unterminated_last_line() -> None:
    got: list[str] = []
    s = cexec.LineSplitter(got.append)
    for chunk in (b"one\r\ntw", b"o\n", b"\n", b"tail"):
        s.feed(chunk)
    assert got == ["one", "two", ""]
    s.close()
    assert got[-1] == "tail"


# -- running ------------------------------------------------------------------------------
def run(command: str, **kw: Any) -> tuple[str, str]:
    kw.setdefault("interpreter", None)
    kw.setdefault("env", dict(os.environ))
    kw.setdefault("cwd", os.getcwd())
    return cexec.run_command(command, **kw)  # type: ignore[no-any-return]


def test_run_captures_trims_and_takes_stdin_dir_and_env(tmp_path: Path) -> None:
    out, err = run(
        'cat; printf "%s|" "$HOSTILE"; pwd; echo e >&2',
        stdin="from stdin ",
        cwd=str(tmp_path),
        env={**os.environ, "HOSTILE": "a b; $(touch pwned) 'q' \"d\"\nz"},
    )
    assert out == f"from stdin a b; $(touch pwned) 'q' \"d\"\nz|{tmp_path}"
    assert err == "e" and not (tmp_path / "pwned").exists()


def test_run_interpreter_argv_is_never_shell_parsed(tmp_path: Path) -> None:
    hostile = "$(touch pwned); `touch pwned2` | rm -rf x && 'q'"
    out, _ = run(
        hostile, interpreter=[sys.executable, "-c", "import sys; print(sys.argv[1])"], cwd=str(tmp_path)
    )
    assert out == hostile and not list(tmp_path.iterdir())


def test_run_failure_carries_exit_status_command_and_output(tmp_path: Path) -> None:
    with pytest.raises(cexec.CommandFailed) as e:
        run("echo out; echo boom >&2; exit 3")
    head, _, output = str(e.value).partition("\n")
    assert head == 'exit status 3: running "echo out; echo boom >&2; exit 3":'
    # two pipes, as upstream's: the interleaving of stdout and stderr is not fixed
    assert sorted(output.splitlines()) == ["boom", "out"] and output.endswith("\n")
    with pytest.raises(cexec.CommandFailed, match="chdir /nonexistent-dir: no such file"):
        run("true", cwd="/nonexistent-dir")
    with pytest.raises(cexec.CommandFailed, match='exec: "no-such-shell-x": executable file not found'):
        run("true", interpreter=["no-such-shell-x"])


def test_run_timeout_kills_the_process_group(tmp_path: Path) -> None:
    t0 = time.monotonic()
    with pytest.raises(cexec.CommandFailed, match=r"signal: killed \(the 1s timeout expired\)"):
        run(f"(sleep 30; touch {tmp_path}/late) & sleep 30", timeout=1)
    assert time.monotonic() - t0 < 10
    time.sleep(0.2)
    assert not (tmp_path / "late").exists()


def test_run_logs_lines_while_the_command_runs() -> None:
    seen: list[tuple[float, str]] = []
    t0 = time.monotonic()
    run(
        "echo first; sleep 1.5; echo second >&2; echo quiet",
        log=lambda line: seen.append((time.monotonic() - t0, line)),
        log_stdout=False,
        log_stderr=True,
    )
    assert [line for _, line in seen] == ["second"]
    seen.clear()
    t0 = time.monotonic()
    run("echo first; sleep 1.5; echo second", log=lambda line: seen.append((time.monotonic() - t0, line)))
    assert [line for _, line in seen] == ["first", "second"]
    assert seen[0][0] < 1.0 <= seen[1][0]


# -- gRPC surface --------------------------------------------------------------------------
class FakeEngine(engine_pb2_grpc.EngineServicer):
    def __init__(self) -> None:
        self.logs: list[Any] = []

    def Log(self, request: Any, context: Any) -> Any:
        self.logs.append(request)
        return empty_pb2.Empty()


@pytest.fixture
def grpc_provider() -> Iterator[tuple[Any, FakeEngine]]:
    engine = FakeEngine()
    eserver = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    engine_pb2_grpc.add_EngineServicer_to_server(engine, eserver)
    eport = eserver.add_insecure_port("127.0.0.1:0")
    eserver.start()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    provider_pb2_grpc.add_ResourceProviderServicer_to_server(
        prc.CommandProvider(f"127.0.0.1:{eport}"), server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    yield provider_pb2_grpc.ResourceProviderStub(channel), engine
    channel.close()
    server.stop(0)
    eserver.stop(0)


def s(d: dict) -> Any:
    return prc.to_struct(d)


def d(msg: Any) -> dict:
    return dict(json_format.MessageToDict(msg))


def test_grpc_configure_info_and_refusals(grpc_provider: tuple[Any, FakeEngine]) -> None:
    stub, _ = grpc_provider
    assert stub.GetPluginInfo(empty_pb2.Empty()).version == "1.2.1"
    conf = stub.Configure(provider_pb2.ConfigureRequest())
    assert conf.acceptSecrets and conf.supportsPreview
    remote = "urn:pulumi:t::p::command:remote:Command::r"
    for call in (
        lambda: stub.Check(provider_pb2.CheckRequest(urn=remote, news=s({"create": "x"}))),
        lambda: stub.Invoke(provider_pb2.InvokeRequest(tok="command:local:run")),
        lambda: stub.Parameterize(provider_pb2.ParameterizeRequest()),
        lambda: stub.Construct(provider_pb2.ConstructRequest(type="command:x:Y")),
    ):
        with pytest.raises(grpc.RpcError) as e:
            call()
        assert "offline stand-in for pulumi-command (gpu-lab toolchain)" in e.value.details()
    with pytest.raises(grpc.RpcError, match="command:remote:Command"):
        stub.Check(provider_pb2.CheckRequest(urn=remote, news=s({})))


def test_grpc_check_echoes_and_fails(grpc_provider: tuple[Any, FakeEngine]) -> None:
    stub, _ = grpc_provider
    news = {"create": SECRET, "environment": {"K": SECRET}, "triggers": [logic.UNKNOWN]}
    resp = stub.Check(provider_pb2.CheckRequest(urn=URN, news=s(news)))
    assert d(resp.inputs) == news and not resp.failures
    resp = stub.Check(provider_pb2.CheckRequest(urn=URN, news=s({"assetPaths": ["x"], "logging": "all"})))
    assert sorted(f.property for f in resp.failures) == ["assetPaths", "logging"]


def test_grpc_lifecycle_preview_secrets_logs_update_and_delete(
    grpc_provider: tuple[Any, FakeEngine], tmp_path: Path
) -> None:
    stub, engine = grpc_provider
    rec = tmp_path / "rec"
    props = {
        "create": f"echo created; echo made >> {rec}",
        "delete": f'echo "del $TOKEN $PULUMI_COMMAND_STDOUT" >> {rec}',
        "environment": {"TOKEN": SECRET},
    }
    pre = stub.Create(provider_pb2.CreateRequest(urn=URN, name="c1", properties=s(props), preview=True))
    assert d(pre.properties)["stdout"] == logic.UNKNOWN and not rec.exists()
    made = stub.Create(provider_pb2.CreateRequest(urn=URN, name="c1", properties=s(props)))
    state = d(made.properties)
    assert made.id.startswith("c1") and len(made.id) == len("c1") + 8
    assert state["stdout"] == "created" and state["stderr"] == ""
    assert state["environment"]["TOKEN"] == SECRET  # the nested secret wrapper is kept
    assert [(m.message, m.urn, m.ephemeral, m.severity) for m in engine.logs] == [("created", URN, True, 1)]

    news = {**props, "create": f'echo "again:$PULUMI_COMMAND_STDOUT"; echo up >> {rec}'}
    diff = stub.Diff(provider_pb2.DiffRequest(urn=URN, olds=s(state), old_inputs=s(props), news=s(news)))
    assert diff.changes == provider_pb2.DiffResponse.DIFF_SOME and list(diff.diffs) == ["create"]
    assert not diff.replaces
    upd = stub.Update(provider_pb2.UpdateRequest(urn=URN, olds=s(state), news=s(news), old_inputs=s(props)))
    state2 = d(upd.properties)
    assert state2["stdout"] == "again:created"
    # Delete uses the stored state only: its command, environment and outputs
    stub.Delete(provider_pb2.DeleteRequest(urn=URN, id=made.id, properties=s(state2), old_inputs=s({})))
    assert rec.read_text().splitlines() == ["made", "up", "del s3cret again:created"]

    with pytest.raises(grpc.RpcError) as e:
        stub.Create(provider_pb2.CreateRequest(urn=URN, name="c1", properties=s({"create": "exit 4"})))
    assert e.value.code() == grpc.StatusCode.UNKNOWN
    assert e.value.details().startswith('exit status 4: running "exit 4":')


def test_grpc_cancel_kills_running_commands(grpc_provider: tuple[Any, FakeEngine]) -> None:
    stub, _ = grpc_provider
    errors: list[str] = []

    def create() -> None:
        try:
            stub.Create(provider_pb2.CreateRequest(urn=URN, name="c1", properties=s({"create": "sleep 30"})))
        except grpc.RpcError as e:
            errors.append(e.details())

    t = threading.Thread(target=create)
    t.start()
    time.sleep(1)
    stub.Cancel(empty_pb2.Empty())
    t.join(10)
    assert not t.is_alive() and errors and errors[0].startswith("signal: killed")
