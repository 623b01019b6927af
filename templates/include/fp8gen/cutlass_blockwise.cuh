// W8A8 block-scaled GEMMs from CUTLASS 4.2's FP8 blockwise collectives
// (headers from the nvidia-cutlass package): sm90 (wgmma), sm100 (tcgen05,
// 1-SM and 2-SM) and sm120/sm121 (GeForce/GB10 blockwise). One header serves
// both builds of an instance: the cubin (the kernel) and the host shim
// (FP8GEN_HOST_SHIM: Params, grid and sizes for the runtime, through ctypes),
// so both see the same Params layout.
//
// Numerics: A [M,K] e4m3 row-major with 1x128 scales MN-major (token index
// contiguous, leading dimension ld_sfa >= M); B = W [N,K] e4m3 (K contiguous)
// with the checkpoint's [ceil(N/128), K/128] scales (K-major); FP32
// accumulation promoted per 128 K by CUTLASS; D [M,N] bf16 = acc (no C).
#pragma once
#include <cstring>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/detail/blockwise_scale_layout.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/operations.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

namespace fp8gen::cutlass_blockwise {

enum Schedule : int { kCooperative = 0, kPingpong = 1, k1Sm = 2, k2Sm = 3 };

// Per-arch collective choices: the arch tag, the mainloop and epilogue
// schedules, and the scale layouts (activation scales MN-major, weight
// scales K-major: the checkpoint's grid as it is).
template <int ARCH, int SCHEDULE>
struct ArchTraits;

template <int SCHEDULE>
struct ArchTraits<90, SCHEDULE> {
  static_assert(SCHEDULE == kCooperative || SCHEDULE == kPingpong, "sm90: cooperative or ping-pong");
  using Tag = cutlass::arch::Sm90;
  using Mainloop = cute::conditional_t<SCHEDULE == kPingpong, cutlass::gemm::KernelTmaWarpSpecializedPingpongFP8Blockwise,
                                       cutlass::gemm::KernelTmaWarpSpecializedCooperativeFP8Blockwise>;
  using Epilogue = cute::conditional_t<SCHEDULE == kPingpong, cutlass::epilogue::TmaWarpSpecialized,
                                       cutlass::epilogue::TmaWarpSpecializedCooperative>;
  using ScaleConfig = cutlass::detail::Sm90BlockwiseScaleConfig<1, 128, 128, cute::GMMA::Major::MN,
                                                                cute::GMMA::Major::K>;
};

template <int SCHEDULE>
struct ArchTraits<100, SCHEDULE> {
  static_assert(SCHEDULE == k1Sm || SCHEDULE == k2Sm, "sm100: 1-SM or 2-SM");
  using Tag = cutlass::arch::Sm100;
  using Mainloop = cute::conditional_t<SCHEDULE == k2Sm, cutlass::gemm::KernelTmaWarpSpecializedBlockwise2SmSm100,
                                       cutlass::gemm::KernelTmaWarpSpecializedBlockwise1SmSm100>;
  using Epilogue = cute::conditional_t<SCHEDULE == k2Sm, cutlass::epilogue::TmaWarpSpecialized2Sm,
                                       cutlass::epilogue::TmaWarpSpecialized1Sm>;
  using ScaleConfig = cutlass::detail::Sm100BlockwiseScaleConfig<1, 128, 128, cute::UMMA::Major::MN,
                                                                 cute::UMMA::Major::K>;
};

template <int SCHEDULE>
struct ArchTraits<120, SCHEDULE> {
  static_assert(SCHEDULE == kCooperative || SCHEDULE == kPingpong, "sm120: cooperative or ping-pong");
  using Tag = cutlass::arch::Sm120;
  using Mainloop = cute::conditional_t<SCHEDULE == kPingpong, cutlass::gemm::KernelTmaWarpSpecializedBlockwisePingpongSm120,
                                       cutlass::gemm::KernelTmaWarpSpecializedBlockwiseCooperativeSm120>;
  using Epilogue = cutlass::epilogue::collective::EpilogueScheduleAuto;
  using ScaleConfig = cutlass::detail::Sm120BlockwiseScaleConfig<1, 128, 128, cute::UMMA::Major::MN,
                                                                 cute::UMMA::Major::K>;
};

template <int ARCH, int TILE_M, int TILE_N, int CLUSTER_M, int CLUSTER_N, int SCHEDULE>
struct BlockwiseGemm {
  static_assert(128 % TILE_N == 0, "the collective holds one weight scale (128 output channels) per tile in N");
  using Traits = ArchTraits<ARCH, SCHEDULE>;
  using ElementA = cutlass::float_e4m3_t;
  using ElementB = cutlass::float_e4m3_t;
  using ElementD = cutlass::bfloat16_t;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::ColumnMajor;  // B^T = W [N, K], K contiguous
  using LayoutD = cutlass::layout::RowMajor;
  static constexpr int kAlignAB = 16;  // elements: 16-byte TMA rows
  static constexpr int kAlignD = 8;
  using TileShape = cute::Shape<cute::Int<TILE_M>, cute::Int<TILE_N>, cute::_128>;
  using ClusterShape = cute::Shape<cute::Int<CLUSTER_M>, cute::Int<CLUSTER_N>, cute::_1>;
  using ScaleConfig = typename Traits::ScaleConfig;
  using LayoutSFA = decltype(ScaleConfig::deduce_layoutSFA());
  using LayoutSFB = decltype(ScaleConfig::deduce_layoutSFB());
  // D = acc: a plain bf16 store, no source tensor (ElementC = void).
  using Fusion = cutlass::epilogue::fusion::LinearCombination<ElementD, float, void, float>;
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      typename Traits::Tag, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, LayoutD, kAlignD, ElementD, LayoutD,
      kAlignD, typename Traits::Epilogue, Fusion>::CollectiveOp;
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      typename Traits::Tag, cutlass::arch::OpClassTensorOp, ElementA, cute::tuple<LayoutA, LayoutSFA>, kAlignAB,
      ElementB, cute::tuple<LayoutB, LayoutSFB>, kAlignAB, float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      typename Traits::Mainloop>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, Mainloop, Epilogue>;
  using Params = typename Kernel::Params;
};

#ifdef FP8GEN_HOST_SHIM
// Host side: Arguments -> Params, with the activation scales' leading
// dimension given explicitly (the runtime pads M for 16-byte scale rows).
template <class G>
typename G::Kernel::Arguments arguments(const void* a, const float* sfa, int ld_sfa, const void* b, const float* sfb,
                                        void* d, int M, int N, int K, int sm_count) {
  using Kernel = typename G::Kernel;
  auto stride_a = cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, cute::make_shape(M, K, 1));
  auto stride_b = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, cute::make_shape(N, K, 1));
  auto stride_d = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, cute::make_shape(M, N, 1));
  // ScaleConfig::tile_atom_to_shape_SFA would pack the K-block stride to M;
  // the caller's leading dimension is padded, so the layout is spelled out:
  // ((1, ld_sfa), (128, K/128), 1), token stride 1, K-block stride ld_sfa.
  // The token extent is ld_sfa too: the collective loads scale rows by TMA,
  // which needs 16-byte extents, and the pad tokens' scales exist (zeros).
  const int kblocks = K / 128;
  typename G::LayoutSFA layout_sfa{
      cute::make_shape(cute::make_shape(cute::_1{}, ld_sfa), cute::make_shape(cute::_128{}, kblocks), 1),
      cute::make_stride(cute::make_stride(cute::_0{}, cute::_1{}), cute::make_stride(cute::_0{}, ld_sfa),
                        ld_sfa * kblocks)};
  auto layout_sfb = G::ScaleConfig::tile_atom_to_shape_SFB(cute::make_shape(M, N, K, 1));
  typename Kernel::Arguments args{
      cutlass::gemm::GemmUniversalMode::kGemm,
      {M, N, K, 1},
      {static_cast<const typename G::ElementA*>(a), stride_a, static_cast<const typename G::ElementB*>(b), stride_b,
       sfa, layout_sfa, sfb, layout_sfb},
      {{1.f, 0.f}, nullptr, stride_d, static_cast<typename G::ElementD*>(d), stride_d}};
  args.hw_info.sm_count = sm_count;
  return args;
}

// What the runtime calls (through the instance's extern "C" wrappers).
template <class G>
struct Shim {
  using Kernel = typename G::Kernel;
  enum Status : int { kOk = 0, kCannotImplement = 1, kBufferTooSmall = 2, kNeedsWorkspace = 3 };

  static size_t params_size() { return sizeof(typename G::Params); }

  static void info(int* threads, int* smem, int* cluster) {
    *threads = Kernel::MaxThreadsPerBlock;
    *smem = Kernel::SharedStorageSize;
    cluster[0] = cute::size<0>(typename G::ClusterShape{});
    cluster[1] = cute::size<1>(typename G::ClusterShape{});
    cluster[2] = 1;
  }

  // Params (TMA descriptors included) into `out`, and the launch grid.
  static int prepare(void* out, size_t cap, const void* a, const float* sfa, int ld_sfa, const void* b,
                     const float* sfb, void* d, int M, int N, int K, int sm_count, unsigned* grid) {
    auto args = arguments<G>(a, sfa, ld_sfa, b, sfb, d, M, N, K, sm_count);
    if (!Kernel::can_implement(args)) return kCannotImplement;
    if (Kernel::get_workspace_size(args) != 0) return kNeedsWorkspace;
    if (cap < sizeof(typename G::Params)) return kBufferTooSmall;
    typename G::Params params = Kernel::to_underlying_arguments(args, nullptr);
    const dim3 g = Kernel::get_grid_shape(params);
    grid[0] = g.x;
    grid[1] = g.y;
    grid[2] = g.z;
    std::memcpy(out, &params, sizeof(params));
    return kOk;
  }
};
#endif

}  // namespace fp8gen::cutlass_blockwise
