"""The pure parts of gpu-lab's offline stand-in for pulumi-command's ``command:local:Command``.

Everything here works on plain Python values (the JSON form of ``google.protobuf.Struct``,
with the engine's secret and unknown markers left in place) and knows nothing about gRPC:
input checking, the diff decision, the environment and argv of a run, output trimming and
the text of a failure. ``pulumi_resource_command.py`` wires it to the engine.

Behaviour follows upstream pulumi-command v1.2.1 (``provider/pkg/provider/local`` and the
``infer`` layer of pulumi-go-provider v1.3.0); deliberate differences say "Divergence".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

STANDIN = "offline stand-in for pulumi-command (gpu-lab toolchain)"
LOCAL_COMMAND = "command:local:Command"
#: The version whose behaviour this stand-in implements (what GetPluginInfo reports by default).
IMPLEMENTED_VERSION = "1.2.1"

# Markers of the engine's property encoding (sdk/go/common/resource/plugin/rpc.go, also
# pulumi/runtime/rpc.py in the Python SDK). Spelled out so this module imports nothing heavy.
SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
UNKNOWNS = frozenset(
    {
        UNKNOWN,
        "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",  # bool
        "3eeb2bf0-c639-47a8-9e75-3b44932eb421",  # number
        "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",  # array
        "030794c1-ac77-496b-92df-f27374a8bd58",  # asset
        "e48ece36-62e2-4504-bad9-02848725956a",  # archive
        "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",  # object
    }
)

LOGGING_VALUES = ("stdout", "stderr", "stdoutAndStderr", "none")
DEFAULT_INTERPRETER = ("/bin/sh", "-c")
STDOUT_ENV = "PULUMI_COMMAND_STDOUT"
STDERR_ENV = "PULUMI_COMMAND_STDERR"

# Input kinds (schema.json of pulumi-command v1.2.1, resource command:local:Command).
STRING, BOOL, STRING_LIST, STRING_MAP, ANY_LIST, LOGGING = (
    "a string",
    "a boolean",
    "a list of strings",
    "a map of strings",
    "a list",
    "logging",
)
INPUT_TYPES: dict[str, str] = {
    "create": STRING,
    "update": STRING,
    "delete": STRING,
    "triggers": ANY_LIST,
    "dir": STRING,
    "environment": STRING_MAP,
    "interpreter": STRING_LIST,
    "stdin": STRING,
    "logging": LOGGING,
    "addPreviousOutputInEnv": BOOL,
}
#: Upstream inputs this stand-in does not implement: Check rejects them when set.
UNSUPPORTED = {
    "assetPaths": "collecting files as assets after the command",
    "archivePaths": "collecting files as an archive after the command",
}

# Detailed-diff kinds, named as in pulumirpc.PropertyDiff.Kind.
ADD, ADD_REPLACE, DELETE, DELETE_REPLACE, UPDATE, UPDATE_REPLACE = range(6)
_AS_REPLACE = {ADD: ADD_REPLACE, DELETE: DELETE_REPLACE, UPDATE: UPDATE_REPLACE}
#: Inputs whose change replaces the resource (schema ``replaceOnChanges``).
REPLACE_ON_CHANGES = frozenset({"triggers"})


# -- property values ------------------------------------------------------------------
def is_secret(value: Any) -> bool:
    """Whether ``value`` is the engine's secret wrapper ``{SIG_KEY: SECRET_SIG, "value": v}``."""
    return isinstance(value, dict) and value.get(SIG_KEY) == SECRET_SIG


def is_unknown(value: Any) -> bool:
    """Whether ``value`` is one of the engine's unknown (computed) markers."""
    return isinstance(value, str) and value in UNKNOWNS


def is_special(value: Any) -> bool:
    """Whether ``value`` is a signed object (secret, asset, archive, resource reference...)."""
    return isinstance(value, dict) and SIG_KEY in value


def reveal(value: Any) -> Any:
    """``value`` with every secret wrapper removed, at any depth (for running, never for output)."""
    if is_secret(value):
        return reveal(value.get("value"))
    if isinstance(value, list):
        return [reveal(v) for v in value]
    if isinstance(value, dict):
        return {k: reveal(v) for k, v in value.items()}
    return value


def path_string(path: Iterable[str | int]) -> str:
    """A property path as the engine spells it: ``environment.FOO``, ``triggers[0]``, ``a["b c"]``."""
    out = []
    for i, key in enumerate(path):
        if isinstance(key, int):
            out.append(f"[{key}]")
        elif key and all(c.isascii() and (c.isalnum() or c == "_") for c in key):
            out.append(key if i == 0 else f".{key}")
        else:
            escaped = key.replace('"', '\\"')
            out.append(f'["{escaped}"]')
    return "".join(out)


def _typename(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if is_special(value):
        return "a resource, asset or archive"
    return "an object"


# -- Check ----------------------------------------------------------------------------
def _kind_problems(kind: str, path: list[str | int], value: Any) -> list[tuple[str, str]]:
    """Check failures of one input value against its kind (unknowns and nulls always pass)."""
    was_secret = is_secret(value)
    v = reveal(value) if was_secret else value
    if v is None or is_unknown(v):
        return []
    where = path_string(path)

    def bad(expected: str, got: Any = v) -> list[tuple[str, str]]:
        return [(where, f"{where} must be {expected}, not {_typename(got)} ({STANDIN})")]

    if kind == STRING:
        return [] if isinstance(v, str) else bad("a string")
    if kind == BOOL:
        return [] if isinstance(v, bool) else bad("a boolean")
    if kind == LOGGING:
        if isinstance(v, str) and v in LOGGING_VALUES:
            return []
        shown = "a secret value" if was_secret else repr(v)
        return [(where, f"{where} must be one of {', '.join(LOGGING_VALUES)}; got {shown} ({STANDIN})")]
    if kind == ANY_LIST:
        return [] if isinstance(v, list) else bad("a list")
    if kind == STRING_LIST:
        if not isinstance(v, list):
            return bad("a list of strings")
        out: list[tuple[str, str]] = []
        for i, item in enumerate(v if was_secret else value):
            if reveal(item) is None:
                out.append(
                    (path_string([*path, i]), f"{path_string([*path, i])} must be a string ({STANDIN})")
                )
            else:
                out += _kind_problems(STRING, [*path, i], item)
        return out
    if kind == STRING_MAP:
        if not isinstance(v, dict) or is_special(v):
            return bad("a map of strings")
        out = []
        items = value if not was_secret else v
        for key, item in items.items():
            # Divergence: Go would pass such a key or value on and fail (or misbehave) at exec.
            if not key or "=" in key or "\0" in key:
                out.append((path_string([*path, key]), f"invalid environment variable name ({STANDIN})"))
                continue
            raw = reveal(item)
            if raw is None or not (isinstance(raw, str) or is_unknown(raw)):
                out.append(
                    (
                        path_string([*path, key]),
                        f"{path_string([*path, key])} must be a string, not {_typename(raw)} "
                        f"(environment values are strings; {STANDIN})",
                    )
                )
            elif "\0" in raw:
                out.append((path_string([*path, key]), f"a NUL character cannot be passed ({STANDIN})"))
        return out
    raise AssertionError(kind)


def check_failures(news: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(property, reason)`` for every input a ``command:local:Command`` cannot take.

    Unknown property names (as upstream's strict decoding), values of the wrong type, a
    ``logging`` outside its enum, and the inputs this stand-in does not implement. Keys
    starting with ``__`` are the engine's and are ignored.
    """
    failures: list[tuple[str, str]] = []
    for key in sorted(news):
        value = news[key]
        if key.startswith("__"):
            continue
        if key in UNSUPPORTED:
            if reveal(value) is not None:
                failures.append(
                    (key, f"{key} ({UNSUPPORTED[key]}) is not supported by the {STANDIN}; remove it")
                )
        elif key not in INPUT_TYPES:
            failures.append((key, f"unrecognized property {key!r} of {LOCAL_COMMAND} ({STANDIN})"))
        else:
            failures += _kind_problems(INPUT_TYPES[key], [key], value)
    return failures


# -- Diff -----------------------------------------------------------------------------
def _same(a: Any, b: Any) -> bool:
    """Deep equality that, unlike ``==``, tells booleans from numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _plain_object(v: Any) -> bool:
    return isinstance(v, dict) and not is_special(v)


def _diff_object(old: Mapping[str, Any], new: Mapping[str, Any], path: list[Any], acc: dict) -> None:
    # Absent and null are the same (PropertyMap.Diff: a null value "has no value").
    for key, ov in old.items():
        nv = new.get(key)
        if ov is None and nv is None:
            continue
        if ov is None:
            acc[path_string([*path, key])] = ADD
        elif nv is None:
            acc[path_string([*path, key])] = DELETE
        else:
            _diff_value(ov, nv, [*path, key], acc)
    for key, nv in new.items():
        if key not in old and nv is not None:
            acc[path_string([*path, key])] = ADD


def _diff_value(ov: Any, nv: Any, path: list[Any], acc: dict) -> None:
    if isinstance(ov, list) and isinstance(nv, list):
        for i in range(min(len(ov), len(nv))):
            _diff_value(ov[i], nv[i], [*path, i], acc)
        for i in range(len(ov), len(nv)):
            acc[path_string([*path, i])] = ADD
        for i in range(len(nv), len(ov)):
            acc[path_string([*path, i])] = DELETE
    elif _plain_object(ov) and _plain_object(nv):
        _diff_object(ov, nv, path, acc)
    elif not _same(ov, nv):
        # Secrets, unknowns and other signed values compare as wholes.
        acc[path_string(path)] = ADD if ov is None else DELETE if nv is None else UPDATE


@dataclass
class DiffResult:
    """The diff decision: changed or not, which top-level inputs replace, per-path kinds."""

    changed: bool
    replaces: list[str] = field(default_factory=list)
    diffs: list[str] = field(default_factory=list)
    detailed: dict[str, int] = field(default_factory=dict)


def _head(path: str) -> str:
    if path.startswith('["'):
        end = path.index('"]')
        return path[2:end].replace('\\"', '"')
    for i, c in enumerate(path):
        if c in ".[":
            return path[:i]
    return path


def compute_diff(old_inputs: Mapping[str, Any], news: Mapping[str, Any]) -> DiffResult:
    """Compare the last applied inputs with the new ones, as upstream's Diff does.

    ``version`` and ``__*`` keys are ignored, absent equals null. Any change under
    ``triggers`` replaces the resource; every other change is an in-place update.
    Divergence: upstream itself marks only a wholly added/removed ``triggers`` as a
    replace and leaves element changes (``triggers[0]``) to the SDK's
    ``replace_on_changes=["triggers[*]"]``; with the PyPI SDK the engine sees the same plan.
    """

    def keep(m: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in m.items() if k != "version" and not k.startswith("__")}

    acc: dict[str, int] = {}
    _diff_object(keep(old_inputs), keep(news), [], acc)
    detailed = {p: (_AS_REPLACE[k] if _head(p) in REPLACE_ON_CHANGES else k) for p, k in acc.items()}
    heads = {_head(p) for p in detailed}
    replaces = {_head(p) for p, k in detailed.items() if k in _AS_REPLACE.values()}
    return DiffResult(bool(detailed), sorted(replaces), sorted(heads), detailed)


# -- outputs --------------------------------------------------------------------------
def state_of(inputs: Mapping[str, Any], stdout: Any, stderr: Any) -> dict[str, Any]:
    """The resource state: the inputs as given (secret wrappers kept) plus stdout and stderr.

    Like upstream's re-encoded input struct, only known inputs that are set are echoed.
    stdout/stderr are never made secret here (``additional_secret_outputs`` does that).
    """
    out = {k: v for k, v in inputs.items() if k in INPUT_TYPES and v is not None}
    out["stdout"] = stdout
    out["stderr"] = stderr
    return out


def trim_newline(text: str) -> str:
    """``text`` without exactly one trailing newline (``\\r`` and further newlines stay)."""
    return text[:-1] if text.endswith("\n") else text


def build_env(
    base: Mapping[str, str],
    environment: Mapping[str, str] | None,
    previous: tuple[str, str] | None = None,
    add_previous: bool | None = None,
) -> dict[str, str]:
    """The command's environment: ``base`` (the provider's own), then ``environment``, then
    ``PULUMI_COMMAND_STDOUT``/``STDERR`` from ``previous`` when those are non-empty and
    ``add_previous`` (``addPreviousOutputInEnv``, unset meaning true) is not false."""
    env = dict(base)
    env.update(environment or {})
    if previous is not None and add_previous is not False:
        if previous[0]:
            env[STDOUT_ENV] = previous[0]
        if previous[1]:
            env[STDERR_ENV] = previous[1]
    return env


def argv_for(interpreter: list[str] | None, command: str) -> list[str]:
    """The interpreter (default ``/bin/sh -c``) followed by the command as one argument."""
    return [*(interpreter or DEFAULT_INTERPRETER), command]
