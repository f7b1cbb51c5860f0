"""Why a burst and a sustained bf16 rate differ on an H200, and what a fair burst needs.

Run on the lent H200 in the exploration call (README.md beside this file) as
``python3 explore_tflops.py OUTDIR``; writes ``OUTDIR/explore-tflops.json`` (every timed run
with its host window, and every NVML sample) and prints a summary. Experiments, bf16 8192^3:

* ``reference``: the plain loop (``c = a @ b`` ten times between two CUDA events) after
  ``warmup`` untimed products and a rest, for several warm-up counts;
* ``variants``: the same with ``out=`` and/or PyTorch's reduced-precision reductions off
  (what :mod:`gpulab.tflops_measure` sets);
* ``timeline``: 30 s of back-to-back products in windows of 20, each window timed;
* ``recovery``: after 3 s of load, rest r seconds, then the plain loop;
* ``old``: the previous gpulab.tflops method (>= 1 s warm-up, then 3 runs of 20);
* fp16 and fp32 timelines; and a 3 s nvidia-smi ``-lms 100`` sampler check.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from gpulab import tflops_clocks

N = 8192
FLOP = 2 * N**3


def rate(seconds_per_product: float) -> float:
    return FLOP / seconds_per_product / 1e12


def timed(fn: Any, k: int) -> float:
    s = torch.cuda.Event(enable_timing=True)
    e = torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(k):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / 1e3 / k


def main() -> None:
    out_dir = Path(sys.argv[1])
    runs: list[dict[str, Any]] = []
    sampler = tflops_clocks.open_sampler(0, interval_s=0.01)
    print("sampler", sampler.source, flush=True)
    g = torch.Generator(device="cuda").manual_seed(0)
    mats = {}
    for name, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", torch.float32)):
        a = torch.randn(N, N, device="cuda", dtype=dt, generator=g)
        b = torch.randn(N, N, device="cuda", dtype=dt, generator=g)
        mats[name] = (a, b, torch.empty(N, N, device="cuda", dtype=dt))
    a, b, c = mats["bf16"]
    m = torch.backends.cuda.matmul
    defaults = (m.allow_bf16_reduced_precision_reduction, m.allow_fp16_reduced_precision_reduction)
    torch.matmul(a, b)
    torch.cuda.synchronize()

    def plain() -> None:
        a @ b

    def with_out() -> None:
        torch.matmul(a, b, out=c)

    def record(exp: str, fn: Any, k: int, **extra: Any) -> float:
        t0 = time.perf_counter()
        sp = timed(fn, k)
        t1 = time.perf_counter()
        runs.append({"exp": exp, "k": k, "t0": t0, "t1": t1, "s": sp, "tflops": rate(sp), **extra})
        return rate(sp)

    def load(fn: Any, seconds: float) -> None:
        t = time.perf_counter()
        while time.perf_counter() - t < seconds:
            for _ in range(20):
                fn()
            torch.cuda.synchronize()

    def warm(fn: Any, n: int) -> None:
        for _ in range(n):
            fn()
        torch.cuda.synchronize()

    time.sleep(3)
    for rep in range(3):
        time.sleep(3)
        warm(plain, 5)
        print("reference w5", rep, round(record("reference", plain, 10, warmup=5, rep=rep), 1), flush=True)
    for w in (0, 1, 2, 10, 20, 50):
        time.sleep(3)
        warm(plain, w)
        print("reference w", w, round(record("reference", plain, 10, warmup=w), 1), flush=True)
    for label, fn, flags_off in (
        ("out", with_out, False),
        ("flagsoff", plain, True),
        ("out+flagsoff", with_out, True),
    ):
        m.allow_bf16_reduced_precision_reduction = not flags_off
        m.allow_fp16_reduced_precision_reduction = not flags_off
        for rep in range(2):
            time.sleep(3)
            warm(fn, 5)
            got = record("variant", fn, 10, label=label, rep=rep)
            print("variant", label, rep, round(got, 1), flush=True)
        m.allow_bf16_reduced_precision_reduction, m.allow_fp16_reduced_precision_reduction = defaults
    time.sleep(3)
    t_end = time.perf_counter() + 30
    while time.perf_counter() < t_end:
        record("timeline", plain, 20, dtype="bf16")
    tl = [r["tflops"] for r in runs if r["exp"] == "timeline"]
    print("timeline bf16 first/last windows", [round(x) for x in tl[:5]], [round(x) for x in tl[-5:]])
    for r in (0.0, 0.2, 0.5, 1.0, 2.0, 5.0):
        load(plain, 3)
        time.sleep(r)
        warm(plain, 5)
        print("recovery rest", r, round(record("recovery", plain, 10, rest=r), 1), flush=True)
    time.sleep(3)
    m.allow_bf16_reduced_precision_reduction = False
    load(with_out, 1.0)
    old = [record("old", with_out, 20, rep=i) for i in range(3)]
    m.allow_bf16_reduced_precision_reduction = defaults[0]
    print("old method", [round(x, 1) for x in old], "median", round(statistics.median(old), 1))
    for name, secs, k in (("fp16", 10, 20), ("fp32", 8, 5)):
        x, y, _ = mats[name]
        time.sleep(3)

        def prod(x: Any = x, y: Any = y) -> None:
            x @ y

        warm(prod, 3)
        t_end = time.perf_counter() + secs
        while time.perf_counter() < t_end:
            record("timeline", prod, k, dtype=name)
        tl = [r["tflops"] for r in runs if r["exp"] == "timeline" and r["dtype"] == name]
        print("timeline", name, [round(v) for v in tl[:3]], [round(v) for v in tl[-3:]], flush=True)
    samples = sampler.stop()
    smi = tflops_clocks.SmiSampler(device=0, interval_ms=100)
    smi.start()
    load(plain, 3)
    smi_samples = smi.stop()
    print("smi samples", len(smi_samples), smi_samples[-3:] if smi_samples else None)
    for r in runs:
        r["clocks"] = tflops_clocks.summarize(samples, r["t0"], r["t1"])
    doc = {
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
        "size": N,
        "sampler": sampler.source,
        "runs": runs,
        "samples": [[s.t, s.sm_mhz, s.power_w, s.power_instant_w, s.reasons, s.temp_c] for s in samples],
        "smiSamples": [[s.t, s.sm_mhz, s.power_w] for s in smi_samples],
    }
    (out_dir / "explore-tflops.json").write_text(json.dumps(doc))
    for r in runs:
        if r["exp"] != "timeline":
            ck = r["clocks"]
            print(
                r["exp"],
                {k: r[k] for k in ("warmup", "label", "rest", "rep") if k in r},
                round(r["tflops"], 1),
                "sm",
                ck["smClockMHz"],
                "P",
                ck["powerW"],
                "Pi",
                ck["powerInstantW"],
                ck["clockEventReasons"],
            )


if __name__ == "__main__":
    main()
