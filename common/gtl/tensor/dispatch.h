// Runs a generic body once for the C++ type of a runtime dtype:
//
//   GTL_DISPATCH_ALL(t.dtype(), T, { fill<T>(t.data<T>(), n, v); });
//
// Inside the body, T is float, half, bfloat16, int32_t, int64_t or uint8_t.
// GTL_DISPATCH_FLOATING covers only float, half and bfloat16 and rejects the rest by name.
#pragma once

#include <type_traits>

#include "gtl/runtime/error.h"
#include "gtl/tensor/dtype.h"

namespace gtl {

// Value conversion between element types: 16-bit floats go through float (rounding to nearest
// even), everything else is a static_cast.
template <typename To, typename From>
GTL_HOST_DEVICE inline To convert(From x) {
  if constexpr (std::is_same_v<From, half> || std::is_same_v<From, bfloat16>) {
    return convert<To>(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, half> || std::is_same_v<To, bfloat16>) {
    return To(static_cast<float>(x));
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace gtl

#define GTL_DISPATCH_CASE_(DT, CPPT, T, ...) \
  case ::gtl::DType::DT: {                   \
    using T = CPPT;                          \
    __VA_ARGS__;                             \
    break;                                   \
  }

#define GTL_DISPATCH_FLOATING(dtype, T, ...)                                                 \
  switch (dtype) {                                                                           \
    GTL_DISPATCH_CASE_(Float32, float, T, __VA_ARGS__)                                       \
    GTL_DISPATCH_CASE_(Float16, ::gtl::half, T, __VA_ARGS__)                                 \
    GTL_DISPATCH_CASE_(BFloat16, ::gtl::bfloat16, T, __VA_ARGS__)                            \
    default:                                                                                 \
      GTL_CHECK(false, "expected a floating-point dtype, got " << ::gtl::dtype_name(dtype)); \
  }

#define GTL_DISPATCH_ALL(dtype, T, ...)                           \
  switch (dtype) {                                                \
    GTL_DISPATCH_CASE_(Float32, float, T, __VA_ARGS__)            \
    GTL_DISPATCH_CASE_(Float16, ::gtl::half, T, __VA_ARGS__)      \
    GTL_DISPATCH_CASE_(BFloat16, ::gtl::bfloat16, T, __VA_ARGS__) \
    GTL_DISPATCH_CASE_(Int32, int32_t, T, __VA_ARGS__)            \
    GTL_DISPATCH_CASE_(Int64, int64_t, T, __VA_ARGS__)            \
    GTL_DISPATCH_CASE_(UInt8, uint8_t, T, __VA_ARGS__)            \
  }
