// Element types of a tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

#include "gtl/tensor/half.h"

namespace gtl {

enum class DType : uint8_t { Float32, Float16, BFloat16, Int32, Int64, UInt8 };

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32:
      return 4;
    case DType::Float16:
      return 2;
    case DType::BFloat16:
      return 2;
    case DType::Int32:
      return 4;
    case DType::Int64:
      return 8;
    case DType::UInt8:
      return 1;
  }
  return 0;
}

constexpr bool is_floating(DType t) {
  return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16;
}

const char* dtype_name(DType t);  // "float32", "float16", ...
DType parse_dtype(const std::string& name);
std::ostream& operator<<(std::ostream& os, DType t);

// The DType of a C++ element type, for Tensor::data<T>().
template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct dtype_of<half> {
  static constexpr DType value = DType::Float16;
};
template <>
struct dtype_of<bfloat16> {
  static constexpr DType value = DType::BFloat16;
};
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = DType::Int32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::Int64;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr DType value = DType::UInt8;
};

}  // namespace gtl
