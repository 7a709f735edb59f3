// Float16/bfloat16 accessors for targets where mlx-c's half.h declares none.
//
// mlx-c declares mlx_array_item_float16, mlx_array_item_bfloat16, mlx_array_data_float16 and
// mlx_array_data_bfloat16 only when the compiler has ARM half types, yet mlx-rs calls them on
// every target. Here they move the 16-bit patterns through uint16_t storage; the Rust side
// declares them in src/half_fallback.rs with matching layouts.
#if !defined(__aarch64__)
#include <cstdint>
#include <cstring>
#include <exception>

#include "mlx/c/array.h"
#include "mlx/c/error.h"
#include "mlx/c/private/array.h"

namespace {
template <typename Half>
int item_bits(uint16_t* res, const mlx_array arr) {
  try {
    Half value = mlx_array_get_(arr).item<Half>();
    std::memcpy(res, &value, sizeof(uint16_t));
  } catch (std::exception& e) {
    mlx_error(e.what());
    return 1;
  }
  return 0;
}

template <typename Half>
const uint16_t* data_bits(const mlx_array arr) {
  try {
    return reinterpret_cast<const uint16_t*>(mlx_array_get_(arr).data<Half>());
  } catch (std::exception& e) {
    mlx_error(e.what());
    return nullptr;
  }
}
}  // namespace

extern "C" int mlx_array_item_float16(uint16_t* res, const mlx_array arr) {
  return item_bits<mlx::core::float16_t>(res, arr);
}

extern "C" int mlx_array_item_bfloat16(uint16_t* res, const mlx_array arr) {
  return item_bits<mlx::core::bfloat16_t>(res, arr);
}

extern "C" const uint16_t* mlx_array_data_float16(const mlx_array arr) {
  return data_bits<mlx::core::float16_t>(arr);
}

extern "C" const uint16_t* mlx_array_data_bfloat16(const mlx_array arr) {
  return data_bits<mlx::core::bfloat16_t>(arr);
}
#endif
