#!/usr/bin/env bash
# Exploration call on the lent H200 (README.md beside this file): nvidia-smi variants, topology,
# NVML's answers, and the bf16 burst/sustained experiments. Everything lands in /tmp/ex and
# comes back as one tarball, $OUT/explore.tgz (a call brings back 8 files at most).
set -u
D=/tmp/ex
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$D"
: >"$D/commands.txt"
run() {
  local name=$1
  shift
  "$@" >"$D/$name.out" 2>"$D/$name.err"
  echo "$name	rc=$?	$*" >>"$D/commands.txt"
}
date -u +%FT%TZ >"$D/date.txt"
run smi nvidia-smi
run smi-q nvidia-smi -q
run smi-L nvidia-smi -L
run query-base nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total,pci.bus_id --format=csv,noheader,nounits
run query-mig nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total,pci.bus_id,mig.mode.current,mig.mode.pending --format=csv,noheader,nounits
run query-mig-only nvidia-smi --query-gpu=index,pci.bus_id,mig.mode.current,mig.mode.pending --format=csv,noheader,nounits
run query-mig-header nvidia-smi --query-gpu=index,mig.mode.current,mig.mode.pending --format=csv
run query-unknown nvidia-smi --query-gpu=index,no.such.field --format=csv,noheader
run help-query nvidia-smi --help-query-gpu
run topo-m nvidia-smi topo -m
run topo-matrix nvidia-smi topo --matrix
run topo-mp nvidia-smi topo -mp
run topo-p2p-r nvidia-smi topo -p2p r
run topo-p2p-n nvidia-smi topo -p2p n
run topo-h nvidia-smi topo -h
run nvlink-status nvidia-smi nvlink --status
run nvlink-c nvidia-smi nvlink -c
run nvlink-h nvidia-smi nvlink -h
if command -v script >/dev/null; then run topo-m-tty script -qc "nvidia-smi topo -m" /dev/null; fi
run lscpu lscpu
run nproc nproc
run numa-sys sh -c 'for f in /sys/bus/pci/devices/0000:00:06.0/numa_node /sys/bus/pci/devices/0000:00:06.0/local_cpulist /sys/devices/system/node/online; do echo "$f: $(cat $f)"; done'
run versions python3 -c "import sys, torch, pynvml, importlib.metadata as m; print(sys.version); print('torch', torch.__version__, torch.version.cuda); print('pynvml', pynvml.__file__, m.version('nvidia-ml-py'))"
run nvml-dump python3 "$HERE/explore_nvml.py"
run tflops python3 "$HERE/explore_tflops.py" "$D"
run smi-q-perf nvidia-smi -q -d PERFORMANCE,CLOCK,POWER
tar czf "$OUT/explore.tgz" -C /tmp ex
cat "$D/commands.txt"
cat "$D/tflops.out" | grep -v '^timeline' | tail -60
cat "$D/topo-m.out"
