"""variants.sim.ctl.ports: a lab's ports are its own for as long as the lab exists."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from variants.sim.ctl import ports
from variants.sim.ctl.render import render_kwokctl_config


def test_choose_skips_reserved_and_busy_ports_one_per_option() -> None:
    busy = {32766}
    got = ports.choose({32767, 32764}, free=lambda p: p not in busy)
    assert list(got) == list(ports.OPTIONS)
    assert list(got.values()) == [32765, 32763, 32762, 32761, 32760, 32759]


def test_choose_raises_when_the_range_is_exhausted() -> None:
    with pytest.raises(OSError, match="no free port"):
        ports.choose(set(), free=lambda p: False, highest=20005, lowest=20000)


def test_a_dead_lab_keeps_its_ports_from_the_next_lab(tmp_path: Path) -> None:
    reg = tmp_path / "reg.json"
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    exists = {str(a), str(b)}.__contains__
    held_a = ports.reserve(a, exists, path=reg, free=lambda p: True)
    # Lab a's etcd died: its port is free again on the host, but a's directory still exists.
    held_b = ports.reserve(b, exists, path=reg, free=lambda p: True)
    assert not set(held_a.values()) & set(held_b.values())
    assert json.loads((a / ports.PORTS_FILE).read_text()) == held_a
    # a asks again (a re-create): the same ports, its own.
    assert ports.reserve(a, exists, path=reg, free=lambda p: True) == held_a


def test_ports_of_a_lab_that_is_gone_are_released(tmp_path: Path) -> None:
    reg = tmp_path / "reg.json"
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    held_a = ports.reserve(a, {str(a)}.__contains__, path=reg, free=lambda p: True)
    ports.release(a, path=reg)
    assert str(a) not in ports.load(reg)
    assert ports.reserve(b, {str(b)}.__contains__, path=reg, free=lambda p: True) == held_a


def test_fresh_ports_avoid_the_labs_own_previous_ones(tmp_path: Path) -> None:
    reg = tmp_path / "reg.json"
    a = tmp_path / "a"
    a.mkdir()
    first = ports.reserve(a, {str(a)}.__contains__, path=reg, free=lambda p: True)
    again = ports.reserve(a, {str(a)}.__contains__, fresh=True, path=reg, free=lambda p: True)
    assert not set(first.values()) & set(again.values())


def test_bindable_sees_a_listening_socket() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert not ports.bindable(s.getsockname()[1])


def test_the_kwokctl_config_carries_the_ports() -> None:
    held = dict(zip(ports.OPTIONS, range(32767, 32761, -1), strict=True))
    text = render_kwokctl_config(
        kube_version="v1.36.3", bin_dir=Path("/b"), log_file=Path("/l.log"), stages=[], ports=held
    )
    options = next(iter(__import__("yaml").safe_load_all(text)))["options"]
    assert {k: options[k] for k in ports.OPTIONS} == held
