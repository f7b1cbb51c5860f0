"""Run the finished probe and topology readers on this host; write what each saw to OUTDIR.

Run on the lent H200 (README.md beside this file) as ``python3 final_probe.py OUTDIR`` from
the repository root. Writes the raw nvidia-smi outputs the probe parsed, each path's facts as
JSON, ``probe-compare.json`` (NVML against nvidia-smi), the raw ``nvidia-smi topo -m``, both
topology readings and ``topology-compare.json``; prints a summary.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from gpulab import nvml, probe, topology


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    seen: list[dict[str, object]] = []

    def recording_run(argv: Sequence[str]) -> tuple[int | None, str, str]:
        rc, stdout, stderr = probe.run_command(argv)
        name = f"smi-{len(seen)}.out"
        (out / name).write_text(stdout)
        seen.append({"argv": list(argv), "rc": rc, "stdout": name, "stderr": stderr})
        return rc, stdout, stderr

    by_nvml = nvml.probe_nvml()
    by_smi = probe.probe_nvidia_smi(recording_run)
    by_host = probe.probe_host()
    (out / "smi-commands.json").write_text(json.dumps(seen, indent=2))
    (out / "probe-nvml.json").write_text(json.dumps(by_nvml.to_json(), indent=2))
    (out / "probe-nvidia-smi.json").write_text(json.dumps(by_smi.to_json(), indent=2))
    (out / "probe-host.json").write_text(json.dumps(by_host.to_json(), indent=2))
    diffs = probe.compare_facts(by_nvml, by_smi)
    (out / "probe-compare.json").write_text(json.dumps({"differences": diffs}, indent=2))
    print("probe nvml:", json.dumps(by_nvml.to_json()))
    print("probe nvidia-smi:", json.dumps(by_smi.to_json()))
    print("probe_host source:", by_host.source, "| differences:", diffs)

    _rc, text, _err = probe.run_command(["nvidia-smi", "topo", "-m"])
    (out / "topo-m.txt").write_text(text)
    by_matrix = topology.parse_topo_matrix(text)
    pynvml = nvml.load_pynvml()
    with nvml.session(pynvml):
        by_nvml_topo = topology.read_nvml_topology(pynvml, os.cpu_count() or 1)
    (out / "topology-smi.json").write_text(json.dumps(by_matrix.to_json(), indent=2))
    (out / "topology-nvml.json").write_text(json.dumps(by_nvml_topo.to_json(), indent=2))
    tdiffs = topology.compare_topologies(by_matrix, by_nvml_topo)
    (out / "topology-compare.json").write_text(json.dumps({"differences": tdiffs}, indent=2))
    print("topology smi:", json.dumps(by_matrix.to_json()))
    print("topology nvml:", json.dumps(by_nvml_topo.to_json()))
    print("topology differences:", tdiffs)


if __name__ == "__main__":
    main()
