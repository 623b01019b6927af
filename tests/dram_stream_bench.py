"""DRAM stream rates on the GPU (not collected by pytest): a write-only
stream (fill_ and zero_ of 1 GiB) and a 1 GiB copy, timed as gen bench
times its arms (gen.bench.timing.time_us: CUDA events, median of batches;
the bench's own copy row is the copy). Run: PYTHONPATH=. python3
tests/dram_stream_bench.py (the H200's figures, and what they were
compared with, are in hardware/sm_90a/HARDWARE.toml)."""
import torch

from gen.bench.timing import time_us

N = 1 << 30


def main() -> None:
    src = torch.empty(N, dtype=torch.uint8, device="cuda").fill_(1)
    dst = torch.empty(N, dtype=torch.uint8, device="cuda")
    for name, f, moved in (("fill_", lambda: dst.fill_(3), N), ("zero_", dst.zero_, N),
                           ("copy_", lambda: dst.copy_(src), 2 * N)):
        us = time_us(torch, [f], batch=5, batches=5)
        print(f"{name} 1 GiB: {us:.1f} us, {moved / us / 1e6:.2f} TB/s {'read + write' if moved > N else 'written'}")


if __name__ == "__main__":
    main()
