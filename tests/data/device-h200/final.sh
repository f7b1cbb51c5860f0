#!/usr/bin/env bash
# The finished code on the lent H200 (README.md beside this file): both probe paths, both
# topology readers, then the TFLOPS command as the benchmark Pod runs it. Results come back
# as $OUT/final.tgz plus $OUT/tflops.json.
set -u
D=/tmp/final
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$D"
date -u +%FT%TZ >"$D/date.txt"
python3 "$HERE/final_probe.py" "$D" 2>&1 | tee "$D/probe.log"
python3 -m gpulab.tflops --json --dtypes bf16,fp16,fp32,tf32 >"$D/tflops.json" 2>"$D/tflops.err"
echo "tflops rc=$?"
nvidia-smi -q -d PERFORMANCE >"$D/nvidia-smi-q-perf-after.txt"
cp "$D/tflops.json" "$OUT/tflops.json"
tar czf "$OUT/final.tgz" -C /tmp final
python3 - "$D/tflops.json" <<'EOF'
import json, sys
sys.path.insert(0, ".")
from gpulab import tflops
print(tflops._render_text(json.load(open(sys.argv[1]))))
EOF
cat "$D/tflops.err"
