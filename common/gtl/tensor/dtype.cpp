#include "gtl/tensor/dtype.h"

#include "gtl/runtime/error.h"

namespace gtl {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32:
      return "float32";
    case DType::Float16:
      return "float16";
    case DType::BFloat16:
      return "bfloat16";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::UInt8:
      return "uint8";
  }
  return "?";
}

DType parse_dtype(const std::string& name) {
  for (DType t : {DType::Float32, DType::Float16, DType::BFloat16, DType::Int32, DType::Int64,
                  DType::UInt8}) {
    if (name == dtype_name(t)) return t;
  }
  if (name == "fp32") return DType::Float32;
  if (name == "fp16" || name == "half") return DType::Float16;
  if (name == "bf16") return DType::BFloat16;
  throw Error("unknown dtype '" + name +
              "': expected float32, float16, bfloat16, int32, int64 or uint8");
}

std::ostream& operator<<(std::ostream& os, DType t) {
  return os << dtype_name(t);
}

}  // namespace gtl
