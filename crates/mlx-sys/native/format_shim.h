// Force-included into every mlx-c translation unit (see build.rs).
//
// mlx-c's private/io.h formats error messages with std::format, which libstdc++ before GCC 13
// does not provide. This supplies a minimal std::format that substitutes each `{}` with the next
// argument, in order; it is used only for those messages. Where the standard library has
// <format>, the real one is used and this file defines nothing.
#pragma once
#if defined(__has_include)
#if __has_include(<format>)
#include <format>
#endif
#endif
#if !defined(__cpp_lib_format)
#include <sstream>
#include <string>
#include <string_view>

namespace std {
namespace decode_baseline_shim {
inline void append(std::ostringstream& out, std::string_view fmt) { out << fmt; }

template <typename T, typename... Rest>
void append(std::ostringstream& out, std::string_view fmt, const T& first, const Rest&... rest) {
  auto at = fmt.find("{}");
  if (at == std::string_view::npos) {
    out << fmt;
    return;
  }
  out << fmt.substr(0, at) << first;
  append(out, fmt.substr(at + 2), rest...);
}
}  // namespace decode_baseline_shim

template <typename... Args>
std::string format(std::string_view fmt, const Args&... args) {
  std::ostringstream out;
  decode_baseline_shim::append(out, fmt, args...);
  return out.str();
}
}  // namespace std
#endif
