"""Pulumi's generated gRPC modules, imported without the SDK package around them.

The stand-ins (the Python language host, the pulumi-command provider) need only
``pulumi.runtime.proto``: the message and service modules generated from Pulumi's ``.proto``
files. Importing it the usual way runs ``pulumi/__init__.py`` first, which imports the whole
SDK (resources, outputs, the runtime: about 0.15 CPU-s of a stand-in's 0.3 s start, and the
engine starts one per language host and provider, several per ``pulumi up``).
:func:`bare_packages` puts plain package objects for ``pulumi`` and ``pulumi.runtime`` in
``sys.modules``, pointing at the installed SDK's directories, so that ``from
pulumi.runtime.proto import ...`` loads only the generated modules (which import each other
relatively and ``google.protobuf``, nothing else of the SDK). Only for a process that uses
nothing else of the SDK: every other ``pulumi.X`` import in it would find an empty package.

Installed beside each stand-in (hack/offline/build-pulumi.sh, hack/offline/command/install.sh).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import types


def bare_packages() -> None:
    """Register ``pulumi`` and ``pulumi.runtime`` as bare packages of the installed SDK's
    directories (nothing when ``pulumi`` is imported already, or not installed: the import
    that follows then fails as it would have, naming the missing SDK)."""
    if "pulumi" in sys.modules:
        return
    spec = importlib.util.find_spec("pulumi")
    if spec is None or not spec.submodule_search_locations:
        return
    root = next(iter(spec.submodule_search_locations))
    for name, path in (("pulumi", root), ("pulumi.runtime", os.path.join(root, "runtime"))):
        module = types.ModuleType(name)
        module.__path__ = [path]
        module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        module.__spec__.submodule_search_locations = [path]
        sys.modules[name] = module
