"""`python -m gen soak`: launch each instance of a GEMM family many times
on rotated inputs (each instance in its own process, so a fault names its
instance and does not end the others), to catch faults that one correctness
launch does not show (races, intermittent hangs)."""
from __future__ import annotations

import subprocess
import sys
from typing import List


def _one(instance: str, family: str, M: int, N: int, K: int, launches: int, seed: int) -> int:
    import torch

    import runtime
    from gen.bench.torch_ref import quantize_act, quantize_weight, rel_rms, dequant_act, dequant_weight

    rt = runtime.load(torch.cuda.current_device())
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    sets = []
    for _ in range(2):
        w_q, w_s = quantize_weight(torch.randn(N, K, device="cuda", generator=gen) * 0.02)
        a_q, a_s = quantize_act(torch.randn(M, K, device="cuda", generator=gen).to(torch.bfloat16))
        out = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
        sets.append((a_q, a_s.t().contiguous(), w_q, w_s, out, a_s))
    call = getattr(rt, family)
    # split-K instances take their counters and partial tiles from a workspace
    extra = {"workspace": rt.workspace(M, 128, max_n=N)} if family == "w8a8_wgmma" else {}
    for i in range(launches):
        a_q, a_s_gm, w_q, w_s, out, _ = sets[i % 2]
        call(a_q, a_s_gm, w_q, w_s, out, instance=instance, **extra)
        if i % 25 == 24:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    a_q, _, w_q, w_s, out, a_s = sets[(launches - 1) % 2]
    err = rel_rms(out, dequant_act(a_q, a_s) @ dequant_weight(w_q, w_s).T)
    print(f"{instance} M={M} N={N} K={K}: {launches} launches, last rel RMS {err:.2e}", flush=True)
    return 0 if err < 2.0**-7 else 1


def soak(family: str, M: int, N: int, K: int, launches: int, seed: int, timeout_s: float) -> int:
    from runtime.manifest import load
    from runtime.paths import manifest_path

    import torch

    from runtime.loader import arch_for

    arch = arch_for(torch.cuda.get_device_capability())
    _, entries = load(manifest_path(arch))
    names = [e.name for e in entries if e.family == family]
    if not names:
        raise SystemExit(f"no {family} instance is built for {arch}")
    failed: List[str] = []
    for name in names:
        cmd = [sys.executable, "-m", "gen", "soak", "--family", family, "--instance", name, "--m", str(M),
               "--n", str(N), "--k", str(K), "--launches", str(launches), "--seed", str(seed)]
        try:
            rc = subprocess.run(cmd, timeout=timeout_s).returncode
        except subprocess.TimeoutExpired:
            print(f"{name}: no result within {timeout_s:.0f} s (hang?)", flush=True)
            rc = -1
        if rc:
            failed.append(name)
    print(f"soak {family} M={M} N={N} K={K}: {len(names) - len(failed)} of {len(names)} instances clean"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0
