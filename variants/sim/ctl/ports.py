"""The simulated clusters' ports: each lab gets its own, held for as long as the lab exists.

kwokctl picks a free port for every component by probing downwards from 32767
(``pkg/utils/net/unused_port.go``, kwok v0.8.0) at each create. A port a dead component
freed is then free to the next lab's create: with its etcd killed, one lab's API server
reconnected to the etcd another lab had started on that port, and the first lab measured the
second's cluster. So the lab allocates the ports itself and writes them into the kwokctl
config (the ``KwokctlConfiguration`` options ``etcdPort``, ``etcdPeerPort``,
``kubeApiserverPort``, ``kubeControllerManagerPort``, ``kubeSchedulerPort``,
``kwokControllerPort``: kwokctl's ``setupPorts`` only picks a port for an option left 0,
``pkg/kwokctl/runtime/binary/cluster_setup.go``).

A machine-wide registry (:func:`registry_path`, one JSON file per user in ``/tmp``, changed
under its own lock) maps each lab's work dir to its ports. A
lab's ports stay reserved while its work dir holds the marker file, dead components or not;
no other lab is given them. ``down`` releases them (:func:`release`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Final

#: The kwokctl options the lab sets, one port each.
OPTIONS: Final = (
    "etcdPort",
    "etcdPeerPort",
    "kubeApiserverPort",
    "kubeControllerManagerPort",
    "kubeSchedulerPort",
    "kwokControllerPort",
)
#: Where ports are taken from, highest first (kwok's own range: below the kernel's default
#: ephemeral range 32768-60999, so no outgoing connection holds them by chance).
HIGHEST: Final = 32767
LOWEST: Final = 20000
#: The file in a lab's work dir that holds its ports (``{"etcdPort": 32766, ...}``).
PORTS_FILE: Final = "ports.json"

Ports = dict[str, int]


def machine_dir() -> Path:
    """Where the machine-wide files of the simulated clusters live (this registry, the create
    lock): ``$GPULAB_SIM_MACHINE_DIR``, else ``/tmp``. Not ``$TMPDIR``: the lab gives every
    run a private one (scripts/pulumi), and these files must be the same for every lab on
    the machine."""
    chosen = os.environ.get("GPULAB_SIM_MACHINE_DIR")
    if chosen:
        return Path(chosen)
    return Path("/tmp") if os.path.isdir("/tmp") else Path(tempfile.gettempdir())


def registry_path() -> Path:
    """``<machine dir>/gpulab-simcluster-<uid>.ports.json``: the machine's reservations of
    this user."""
    return machine_dir() / f"gpulab-simcluster-{os.getuid()}.ports.json"


@contextlib.contextmanager
def _locked(path: Path | None) -> Iterator[None]:
    """Hold the registry's own lock (short: a read-modify-write of the file)."""
    lock = (path or registry_path()).with_suffix(".lock")
    with lock.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def bindable(port: int) -> bool:
    """True when nothing listens on ``port`` (127.0.0.1 and the wildcard address)."""
    for host in ("127.0.0.1", ""):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                return False
    return True


def load(path: Path | None = None) -> dict[str, Ports]:
    """The registry: work dir -> ports (``{}`` when absent or unreadable)."""
    try:
        doc = json.loads((path or registry_path()).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict):
        return {}
    return {str(k): {o: int(p) for o, p in v.items()} for k, v in doc.items() if isinstance(v, dict)}


def _save(entries: Mapping[str, Ports], path: Path | None = None) -> None:
    path = path or registry_path()
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(dict(entries), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def live(entries: Mapping[str, Ports], exists: Callable[[str], bool]) -> dict[str, Ports]:
    """The reservations whose lab still exists (``exists(workdir)``: its marker file is there)."""
    return {w: p for w, p in entries.items() if exists(w)}


def choose(
    reserved: Iterable[int],
    free: Callable[[int], bool] = bindable,
    options: Iterable[str] = OPTIONS,
    highest: int = HIGHEST,
    lowest: int = LOWEST,
) -> Ports:
    """One port per option, highest first, none ``reserved`` and each ``free`` now.

    Raises:
        OSError: the range has too few such ports.
    """
    taken = set(reserved)
    out: Ports = {}
    port = highest
    for option in options:
        while port >= lowest and (port in taken or not free(port)):
            port -= 1
        if port < lowest:
            raise OSError(f"no free port left in {lowest}-{highest} for the simulated cluster ({option})")
        out[option] = port
        taken.add(port)
        port -= 1
    return out


def reserve(
    workdir: Path,
    exists: Callable[[str], bool],
    fresh: bool = False,
    path: Path | None = None,
    free: Callable[[int], bool] = bindable,
) -> Ports:
    """The ports of the lab in ``workdir``: those it holds (its ``ports.json``), or new ones no
    other live lab holds (``fresh``: new ones anyway, e.g. after a port was taken under it).
    Call under the create lock; the registry and ``ports.json`` are written.
    """
    key = str(workdir)
    own = workdir / PORTS_FILE
    held: Ports | None = None
    if not fresh:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            doc = json.loads(own.read_text(encoding="utf-8"))
            held = {o: int(doc[o]) for o in OPTIONS}
    with _locked(path):
        entries = live(load(path), exists)
        others = {p for w, ports in entries.items() if w != key for p in ports.values()}
        if held is not None and others & set(held.values()):
            held = None  # another lab holds one of them (a registry lost and rebuilt): choose anew
        if held is None:
            previous = set(entries.get(key, {}).values()) if fresh else set()
            held = choose(others | previous, free)
        entries[key] = held
        _save(entries, path)
    own.write_text(json.dumps(held, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return held


def extend(
    workdir: Path,
    options: Iterable[str],
    exists: Callable[[str], bool],
    path: Path | None = None,
    free: Callable[[int], bool] = bindable,
) -> Ports:
    """Ports for ``options`` beyond the control plane's (a process the lab starts later, e.g.
    Kueue's controller: variants.sim.ctl.queues), added to the reservation of ``workdir`` and
    to its ``ports.json``: those it holds already, else new ones no live lab holds. A
    recreated cluster's reservation (:func:`reserve`) drops them; the next call chooses anew.
    """
    wanted = tuple(options)
    key = str(workdir)
    own = workdir / PORTS_FILE
    with _locked(path):
        entries = live(load(path), exists)
        mine = dict(entries.get(key, {}))
        if not all(o in mine for o in wanted):
            others = {p for w, ports in entries.items() if w != key for p in ports.values()}
            mine.update(choose(others | set(mine.values()), free, wanted))
            entries[key] = mine
            _save(entries, path)
            own.write_text(json.dumps(mine, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return {o: mine[o] for o in wanted}


def release(workdir: Path, path: Path | None = None) -> None:
    """Forget the reservation of ``workdir`` (its lab is gone)."""
    with _locked(path):
        entries = load(path)
        if entries.pop(str(workdir), None) is not None:
            with contextlib.suppress(OSError):
                _save(entries, path)
