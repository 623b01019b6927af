"""Tensor-core rate of wgmma m64nNk32 e4m3 by N (the tile width): one CTA
of two warpgroups per SM, each issuing groups of 16 wgmmas from shared
memory, timed by clock64. HARDWARE.toml cites its H200 figures (4096 MACs
per cycle per SM at every N >= 64 tried) as the reason odd tile widths are
not slow in the tensor cores themselves. The `rs` kernels (RS_WIDTHS) take A
from registers instead (wgmma's register form), B from shared memory as
before, so that the two forms' rates can be compared; the `ff` kernels add
CUDA-core work beside the MMAs (FF_WIDTHS). HARDWARE.toml has the figures.

Build here (the pinned nvcc), run on the GPU (torch and cuda-bindings):
  python tests/wgmma_width_bench.py build wgmma_width.cubin
  python3 tests/wgmma_width_bench.py run wgmma_width.cubin"""
import subprocess
import sys
import tempfile
from pathlib import Path

WIDTHS = (32, 48, 64, 80, 96, 112, 128, 136, 144, 160, 176, 192, 224, 256)
RS_WIDTHS = (32, 64, 128, 256)
# `ff` kernels: the shared-memory form plus, while each group's MMAs run, a
# promotion's worth of FFMAs per thread (FF_PER_GROUP, on registers of their
# own), to see whether CUDA-core work slows the tensor cores by itself.
FF_WIDTHS = (64, 128)
FF_PER_GROUP = 4 * 64          # four K blocks of a 128-wide warpgroup tile
FORMS = [(n, "ss") for n in WIDTHS] + [(n, "rs") for n in RS_WIDTHS] + [(n, "ff") for n in FF_WIDTHS]
GROUP = 16                     # wgmmas per commit group
ITERS = 4000                   # groups per warpgroup
SMEM = 200 * 1024              # one CTA per SM
INCLUDE = Path(__file__).resolve().parent.parent / "templates" / "include"


def source() -> str:
    parts = ['#include <cstdint>', '#include "fp8gen/ptx_sm90.cuh"', "using namespace fp8gen;"]
    for n, form in FORMS:
        acc = n // 2
        regs = ", ".join(f"%{i}" for i in range(acc))
        outs = ", ".join(f'"+f"(d[{i}])' for i in range(acc))
        name = kernel_name(n, form)
        if form == "rs":  # A's fragment: 4 registers of e4m3 quadruples, the same for every k
            mma = f"""
__device__ __forceinline__ void mma_{name}(float (&d)[{acc}], const uint32_t* a, uint64_t b) {{
  asm volatile("wgmma.mma_async.sync.aligned.m64n{n}k32.f32.e4m3.e4m3 {{{regs}}}, {{%{acc}, %{acc + 1}, %{acc + 2}, %{acc + 3}}}, %{acc + 4}, 1, 1, 1;\\n"
               : {outs} : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}}"""
            call = f"mma_{name}(d, afrag, db + 2 * (k % 4))"
            prelude = ("  uint32_t afrag[4];\n"
                       "  for (int i = 0; i < 4; ++i) afrag[i] = 0x38303830u ^ ((threadIdx.x + i) * 2654435761u & 0x07070707u);\n")
        else:
            mma = f"""
__device__ __forceinline__ void mma_{name}(float (&d)[{acc}], uint64_t a, uint64_t b) {{
  asm volatile("wgmma.mma_async.sync.aligned.m64n{n}k32.f32.e4m3.e4m3 {{{regs}}}, %{acc}, %{acc + 1}, 1, 1, 1;\\n"
               : {outs} : "l"(a), "l"(b));
}}"""
            call = f"mma_{name}(d, da + 2 * (k % 4), db + 2 * (k % 4))"
            prelude = ""
        if form == "ff":  # x += y * s on 64 registers, FF_PER_GROUP / 64 times, between commit and wait
            prelude = ("  float x[64], y[64];\n"
                       "  for (int i = 0; i < 64; ++i) { x[i] = 0.f; y[i] = float(threadIdx.x + i) * 1e-3f; }\n")
            ffma = (f"#pragma unroll\n    for (int r = 0; r < {FF_PER_GROUP // 64}; ++r)\n#pragma unroll\n"
                    "      for (int i = 0; i < 64; ++i) x[i] = fmaf(y[i], 1.0001f, x[i]);\n"
                    "#pragma unroll\n    for (int i = 0; i < 64; ++i) ptx::fence_operand(x[i]);\n")
            keep = "#pragma unroll\n  for (int i = 0; i < 64; ++i) s += x[i];\n"
        else:
            ffma = keep = ""
        parts.append(mma + f"""
extern "C" __global__ void __launch_bounds__(256, 1) {name}(long long* cycles, float* sink, int iters) {{
  extern __shared__ __align__(1024) uint8_t smem[];
  const uint32_t base = (ptx::smem_addr(smem) + 1023u) & ~1023u;
  uint32_t* words = reinterpret_cast<uint32_t*>(smem + (base - ptx::smem_addr(smem)));
  for (int i = threadIdx.x; i < (128 + 256) * 128 / 4; i += blockDim.x)  // small finite e4m3 values
    words[i] = 0x38303830u ^ (i * 2654435761u & 0x07070707u);
  __syncthreads();
  const int wg = __shfl_sync(0xffffffffu, int(threadIdx.x / 128), 0);
  const uint64_t da = ptx::desc_k_major_sw128(base + wg * 64 * 128), db = ptx::desc_k_major_sw128(base + 128 * 128);
{prelude}  float d[{acc}];
#pragma unroll
  for (int i = 0; i < {acc}; ++i) d[i] = 0.f;
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {{
#pragma unroll
    for (int i = 0; i < {acc}; ++i) ptx::fence_operand(d[i]);
    ptx::wgmma_fence();
#pragma unroll
    for (int k = 0; k < {GROUP}; ++k) {call};
    ptx::wgmma_commit();
{ffma}    ptx::wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < {acc}; ++i) ptx::fence_operand(d[i]);
  }}
  const long long t1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < {acc}; ++i) s += d[i];
{keep}  sink[blockIdx.x * blockDim.x + threadIdx.x] = s;  // keeps the MMAs
  if (threadIdx.x % 128 == 0) cycles[blockIdx.x * 2 + wg] = t1 - t0;
}}""")
    return "\n".join(parts) + "\n"


def kernel_name(n: int, form: str) -> str:
    return {"ss": f"width{n}", "rs": f"rs{n}", "ff": f"ff{n}"}[form]


def build(out: Path) -> None:
    from gen.toolchain import toolchain

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "wgmma_width.cu"
        src.write_text(source())
        subprocess.run([str(toolchain().nvcc), "-cubin", "-std=c++17", "-O3", "-arch=sm_90a", f"-I{INCLUDE}",
                        str(src), "-o", str(out)], check=True)
    print(f"wrote {out}")


def run(cubin: Path) -> None:
    import ctypes
    import statistics

    import torch
    from cuda.bindings import driver as cu

    def ok(result):
        err, *rest = result
        if err != cu.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"CUDA driver error {err}")
        return rest[0] if rest else None

    torch.cuda.init()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    torch.empty(1, device="cuda")  # the primary context, current
    module = ok(cu.cuModuleLoadData(cubin.read_bytes()))
    cycles = torch.zeros(2 * sms, dtype=torch.int64, device="cuda")
    sink = torch.zeros(sms * 256, device="cuda")
    rates = {}
    print(f"{'form':>4} {'N':>4} {'cycles/wgmma':>13} {'MAC/cycle/SM':>13}")
    for n, form in FORMS:
        name = kernel_name(n, form)
        fn = ok(cu.cuModuleGetFunction(module, name.encode()))
        ok(cu.cuFuncSetAttribute(fn, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 SMEM))
        params = ((cycles.data_ptr(), sink.data_ptr(), ITERS), (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int))
        for _ in range(2):  # the second launch is the one read
            ok(cu.cuLaunchKernel(fn, sms, 1, 1, 256, 1, 1, SMEM, 0, params, 0))
        torch.cuda.synchronize()
        per = statistics.median(cycles.tolist()) / (ITERS * GROUP)  # both warpgroups issue at once
        rates[name] = 2 * 64 * n * 32 / per
        print(f"{form.upper():>4} {n:4d} {per:13.2f} {rates[name]:13.0f}")


def main(argv) -> int:
    if len(argv) != 2 or argv[0] not in ("build", "run"):
        print(__doc__)
        return 2
    (build if argv[0] == "build" else run)(Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
