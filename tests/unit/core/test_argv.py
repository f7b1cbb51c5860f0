"""gpulab.core.argv: a lab command is an argv, never a shell line; its step is named by its module."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpulab.core import argv
from variants import registry

HOSTILE = [
    "two words",
    "semi;colon",
    "$(touch /tmp/gpulab-argv-pwned)",
    "`id`",
    'it\'s "quoted"',
    "new\nline",
    "glob*?[x]",
    "--flag=value with space",
    "",
]


def test_encode_decode_round_trip_keeps_every_value_exact() -> None:
    cmd = ["python", "-m", "variants.sim.ctl", "up", *HOSTILE]
    assert argv.decode(argv.encode(cmd)) == cmd


@pytest.mark.parametrize("text", ["", "not json", "[]", '["a", 1]', '{"a": 1}', '"python"'])
def test_decode_refuses_anything_but_a_list_of_strings(text: str) -> None:
    with pytest.raises(argv.ArgvError):
        argv.decode(text)


def test_the_interpreter_runs_hostile_values_as_single_arguments_without_a_shell(tmp_path) -> None:
    """What pulumi-command does: interpreter argv + the command string as one more argument."""
    marker = tmp_path / "pwned"
    values = [*HOSTILE, f"$(touch {marker})", f"; touch {marker}"]
    cmd = ["python", "-c", "import json, sys; print(json.dumps(sys.argv[1:]))", *values]
    p = subprocess.run(
        [sys.executable, "-m", "gpulab.core.argv", argv.encode(cmd)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(p.stdout) == values
    assert not marker.exists(), "a shell ran"


def test_python_means_the_interpreter_gpulab_argv_runs_on() -> None:
    cmd = ["python", "-c", "import sys; print(sys.executable)"]
    p = subprocess.run(
        [sys.executable, "-m", "gpulab.core.argv", argv.encode(cmd)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert p.stdout.strip() == sys.executable


def test_a_missing_program_is_named() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "gpulab.core.argv", argv.encode(["no-such-tool-gpulab", "x"])],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 127 and "cannot run no-such-tool-gpulab" in p.stderr


def test_usage_errors_exit_2() -> None:
    assert argv.main([]) == 2
    assert argv.main(["not json"]) == 2


def test_steps_of_the_lab_and_of_each_variant() -> None:
    enc = argv.encode
    step_of = registry.step_of
    assert step_of(enc(["python", "-m", "gpulab.kube", "gate", "--timeout", "1"])) == "operator-gate"
    assert step_of(enc(["python", "-m", "variants.minikube.ctl", "up"])) == "minikube-start"
    assert step_of(enc(["python", "-m", "variants.sim.ctl", "up"])) == "sim-cluster"
    assert step_of(enc(["python", "-m", "variants.existing.ctl", "census"])) == "existing-census"
    assert step_of(enc(["/usr/local/bin/minikube", "start", "-p", "x"])) == "minikube-start"
    record = [
        "python",
        "-m",
        "gpulab.kube.identity",
        "record",
        "--then",
        "gpulab.kube.crd_check",
        "--chart",
        "/c",
    ]
    assert step_of(enc(record)) == "cluster-identity"
    assert step_of(enc(["python", "-m", "variants.sim.ctl", "down"])) is None
    assert step_of("not json") is None and step_of(None) is None
    # Without the variants' steps (passed in by the registry) a variant's helper has no name.
    assert argv.step_of(enc(["python", "-m", "variants.sim.ctl", "up"])) is None
    assert argv.step_of(enc(["python", "-m", "gpulab.kube", "gate"])) == "operator-gate"
