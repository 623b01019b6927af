"""DRAM stream rates on the GPU (not collected by pytest): a write-only
stream (fill_ and zero_ of 1 GiB) and a 1 GiB copy, CUDA events, the median
of 20. Run: python3 tests/dram_stream_bench.py
(The H200's figures, and what they were compared with, are in
hardware/sm_90a/HARDWARE.toml.)"""
import torch

N = 1 << 30


def median_us(f, reps: int = 20) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        f()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return sorted(times)[reps // 2]


def main() -> None:
    src = torch.empty(N, dtype=torch.uint8, device="cuda").fill_(1)
    dst = torch.empty(N, dtype=torch.uint8, device="cuda")
    for name, f, moved in (("fill_", lambda: dst.fill_(3), N), ("zero_", dst.zero_, N),
                           ("copy_", lambda: dst.copy_(src), 2 * N)):
        us = median_us(f)
        print(f"{name} 1 GiB: {us:.1f} us, {moved / us / 1e6:.2f} TB/s {'read + write' if moved > N else 'written'}")


if __name__ == "__main__":
    main()
