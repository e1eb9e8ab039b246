// Scoped NVTX ranges: named spans that Nsight Systems shows on its timeline.
//
//   { GTL_NVTX_RANGE("forward"); model.forward(x); }
//
// Without NVTX (CPU-only build) the macro expands to nothing: no call, no cost.
#pragma once

#ifdef GTL_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>

namespace gtl {
class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};
}  // namespace gtl

#define GTL_NVTX_CONCAT_(a, b) a##b
#define GTL_NVTX_CONCAT(a, b) GTL_NVTX_CONCAT_(a, b)
#define GTL_NVTX_RANGE(name) ::gtl::NvtxRange GTL_NVTX_CONCAT(gtl_nvtx_range_, __LINE__)(name)
#else
#define GTL_NVTX_RANGE(name) ((void)0)
#endif
