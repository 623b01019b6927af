#!/usr/bin/env bash
# The sm_90a GPU checks that are built but have not yet run on a GPU, in one
# script, so that the next session with a device runs them as one call
# instead of rewriting them. Each step writes its record or log under OUT and
# its exit status into OUT/steps.txt; a failing step does not stop the rest.
#
# Needs: an H100 or H200, torch, compute-sanitizer, build/sm_90a built at the
# commit given (python -m gen build --arch sm_90a), run from the repo root:
#   PYTHONPATH=. bash tests/gpu_pending_sm90a.sh OUT_DIR GIT_SHA
#
# (memcheck as tests/memcheck_wgmma_rows.py says: torch's caching allocator
# off, and the driver-entry-point probes of cuda-bindings not reported.)
#
# Pending (see hardware/sm_90a/HISTORY.md, sessions 54-57):
#  1. the 128x64 cluster-K-split twins (128x64x128_s7_gm16_t2_ck2,
#     128x64x128_s7_gm16_ck2_wl_u8_sf) timed against the routed instance,
#     64x64 s13 and 128x64 u8 sf, two seeds, from DRAM and with W in L2;
#     their GPU tests and racecheck/memcheck, and ncu of one call each at
#     4096x7168 M=128. Any card: compare within a run.
#  2. H200 only: the committed dispatch table dispatched (arms timed both
#     ways), two seeds, and racecheck/memcheck of the 64x80 c2x1 tile, which
#     has seen the sanitizers only on an H100.
set -u
OUT=${1:?usage: bash tests/gpu_pending_sm90a.sh OUT_DIR GIT_SHA}
SHA=${2:?usage: bash tests/gpu_pending_sm90a.sh OUT_DIR GIT_SHA}
mkdir -p "$OUT"
T0=$(date +%s)

# step NAME LIMIT_S CMD...: run with a time limit, log to OUT/NAME.log
step() {
  local name=$1 limit=$2; shift 2
  echo "[$(( $(date +%s) - T0 )) s] $name" | tee -a "$OUT/steps.txt"
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "    rc=$rc" | tee -a "$OUT/steps.txt"
  tail -3 "$OUT/$name.log"
}

nvidia-smi -L | tee "$OUT/gpu.txt"
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv >> "$OUT/gpu.txt"
card=h100; nvidia-smi -L | grep -q H200 && card=h200

twins="routed,64x64x128_s13_gm16_t2_sm90a,128x64x128_s8_gm16_wl_u8_sf,128x64x128_s7_gm16"
bench_twins=(python3 -m gen bench --all-instances --instances "$twins"
             --families w8a8_wgmma,cublaslt_block --git-sha "$SHA")
for seed in 0 1; do
  step "tw57-$card-ev$seed" 170 "${bench_twins[@]}" --m 64,128,256 \
       --shapes 4096x7168,2112x7168,5120x17408 --seed "$seed" \
       --out "$OUT/tw57-$card-ev$seed.json" --md "$OUT/tw57-$card-ev$seed.md"
done
step twins-pytest 150 python3 -m pytest -q tests/test_gpu_fast_w8a8.py -k 128x64x128_s7
step twins-racecheck 120 compute-sanitizer --error-exitcode 9 --report-api-errors no --tool racecheck python3 tests/racecheck_wgmma.py 128x64x128_s7
step twins-memcheck 120 env PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --error-exitcode 9 --tool memcheck --report-api-errors no python3 tests/racecheck_wgmma.py 128x64x128_s7
step twins-memcheck-rows 120 env PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --error-exitcode 9 --tool memcheck \
     --report-api-errors no python3 tests/memcheck_wgmma_rows.py 128x64x128_s7
step "tw57-$card-res" 120 "${bench_twins[@]}" --m 64,128 --shapes 4096x7168,4096x4096 \
     --timing resident --seed 2 --out "$OUT/tw57-$card-res.json" --md "$OUT/tw57-$card-res.md"
# where the bytes go at 4096x7168 M=128: L2 and DRAM bytes, the L2 fabric,
# per kernel, one profiled call each (tests/ncu_point.py)
P=w8a8_wgmma_e4m3e4m3_bf16_
step twins-ncu 240 ncu --clock-control none --cache-control all --nvtx --nvtx-include "prof/" \
     --section SpeedOfLight --metrics dram__bytes_read.sum,lts__t_bytes.sum,lts__ltcfabric2ltc_cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__m_xbar2l1tex_read_bytes.sum,sm__cycles_active.avg,gpc__cycles_elapsed.max \
     --csv --page details python3 tests/ncu_point.py 4096 7168 128 ${P}64x64x128_s13_gm16_t2_sm90a \
     ${P}128x64x128_s7_gm16_t2_ck2_sm90a ${P}128x64x128_s7_gm16_ck2_wl_u8_sf_sm90a ${P}128x64x128_s8_gm16_wl_u8_sf_sm90a \
     cublaslt_block

if [ "$card" = h200 ]; then
  for seed in 0 1; do
    step "disp57-$seed" 120 python3 -m gen bench --families w8a8_wgmma,w8a8_cutlass,cublaslt_block \
         --arm-order abba --seed $((570 + seed)) --git-sha "$SHA" \
         --out "$OUT/disp57-$seed.json" --md "$OUT/disp57-$seed.md"
  done
  step c2x1-racecheck 100 compute-sanitizer --error-exitcode 9 --report-api-errors no --tool racecheck python3 tests/racecheck_wgmma.py 64x80x128_s10_gm16_t2_c2x1
  step c2x1-memcheck 100 env PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --error-exitcode 9 --tool memcheck --report-api-errors no python3 tests/racecheck_wgmma.py 64x80x128_s10_gm16_t2_c2x1
fi
echo "[$(( $(date +%s) - T0 )) s] done" | tee -a "$OUT/steps.txt"
