// Force-included into every mlx-c translation unit after format_shim.h (see build.rs).
//
// Adapts the mlx-c 0.7.0 sources to the MLX C++ API of newer releases, without editing them.
// Each adaptation is keyed on the MLX version whose headers are being compiled against, so
// the same sources still build, unchanged, against the MLX that mlx-c 0.7.0 was written for.
#pragma once
#ifdef __cplusplus
#include "mlx/ops.h"
#include "mlx/version.h"

#if MLX_VERSION_NUMERIC >= 32003
namespace mlx::core {
// MLX 0.32.3 inserted `global_scale` (per-expert tensor scales, used by the nvfp4 mode) before
// `sorted_indices` in gather_qmm. mlx-c 0.7.0's mlx_gather_qmm still passes `sorted_indices`
// in that position, which no longer converts. This overload takes the old argument list (it
// is the only viable one for it) and calls the new function with no global scale, which is
// what the old function computed; so mlx_gather_qmm keeps its C signature and its results.
inline array gather_qmm(
    const array& x,
    const array& w,
    const array& scales,
    const std::optional<array>& biases,
    std::optional<array> lhs_indices,
    std::optional<array> rhs_indices,
    bool transpose,
    std::optional<int> group_size,
    std::optional<int> bits,
    const std::string& mode,
    bool sorted_indices,
    StreamOrDevice s) {
  return gather_qmm(
      x,
      w,
      scales,
      biases,
      std::move(lhs_indices),
      std::move(rhs_indices),
      transpose,
      group_size,
      bits,
      mode,
      std::optional<array>{},
      sorted_indices,
      s);
}
} // namespace mlx::core
#endif
#endif
