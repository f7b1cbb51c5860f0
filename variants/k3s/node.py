"""Where k3s keeps its containerd on the node, and the runtime class it renders for NVIDIA's
runtime: read by the variant's record (variants/k3s/__init__.py) and by its helper
(variants/k3s/ctl.py), here so the record need not import the helper."""

from __future__ import annotations

from typing import Final

#: k3s renders its containerd config here on every start (docs.k3s.io "Configuring containerd").
CONTAINERD_DIR: Final = "/var/lib/rancher/k3s/agent/etc/containerd/"
CONTAINERD_CONFIG: Final = CONTAINERD_DIR + "config.toml"
CONTAINERD_SOCKET: Final = "/run/k3s/containerd/containerd.sock"
RUNTIME_CLASS: Final = "nvidia"
