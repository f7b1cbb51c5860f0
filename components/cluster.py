"""What every cluster component gives the rest of the lab (minikube, sim, ...)."""

from __future__ import annotations

import json
from typing import Any

import pulumi

#: The interpreter the lab's helper commands run on. The Makefile and the dynamic
#: provider shim put the project's virtualenv first on PATH, so this is its python; a
#: bare name keeps machine paths out of command lines (and out of resource diffs).
PYTHON = "python3"


def parse_json_stdout(stdout: pulumi.Output[str], what: str) -> pulumi.Output[Any]:
    """The JSON object a helper command printed; a clear error when it printed something else."""

    def load(text: str) -> Any:
        try:
            return json.loads(text.strip().splitlines()[-1]) if text and text.strip() else {}
        except ValueError as exc:
            raise ValueError(f"{what} printed no JSON object on its last stdout line: {exc}") from exc

    return stdout.apply(load)


class ClusterOutputs:
    """Attributes a cluster component exposes.

    Attributes:
        kind: the variant, ``"minikube"`` | ``"sim"`` | ...
        kubeconfig: flattened kubeconfig text (secret).
        kubernetes_version: the server's gitVersion.
        ready: the resource whose completion means the API server answers.
    """

    kind: str
    kubeconfig: pulumi.Output[str]
    kubernetes_version: pulumi.Output[str]
    ready: pulumi.Resource
