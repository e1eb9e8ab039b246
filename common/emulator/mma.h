// The emulator's mma.h: CUDA's warp matrix functions (namespace nvcuda::wmma, the C++ face of the
// tensor cores) for kernels compiled as C++ (see cuda_emulator.h), shape m16n16k16 only: matrix_a
// and matrix_b fragments of __half or __nv_bfloat16, row_major or col_major; accumulators of
// float or __half. What students get wrong fails here as on a GPU:
//
// - Every call is warp-collective: all 32 lanes of the warp make it together, with the same
//   pointer, ldm and layout; a call that some lanes skip or reach after exiting stops the program
//   with the kernel's line (a GPU hangs or computes garbage).
// - Which lane holds which element in x[] is unspecified in CUDA. Here lane l's x[i] holds the
//   element at row e / 16, column e % 16 of the fragment's 16 x 16 tile, where
//   e = ((32 * i + l) * 37 + salt) mod 256, the salt depending on the use (matrix_a, matrix_b,
//   accumulator): not row-major, so a kernel that indexes x[i] as if it knew the layout gets a
//   wrong answer; a loop over all num_elements (scaling, an activation) is right. As in the
//   toolkit, __half matrix_a and matrix_b fragments have 16 elements per lane (each element is in
//   x[i] and x[i + 8]), the others 8.
// - ldm counts elements and must be a multiple of 16 bytes (8 for 16-bit types, 4 for float); the
//   pointer must be 256-bit (32-byte) aligned. Anything else stops the program, as the CUDA docs
//   make it undefined.
// - mma_sync computes D = A * B + C: element (r, c) is C(r, c) + A(r, 0) * B(0, c) + ... +
//   A(r, 15) * B(15, c), added in that order in float32, each product exact (16-bit inputs), each
//   sum rounded to nearest; a __half D is rounded once at the end. A GPU's order is unspecified:
//   a CPU reference that sums in this order gets the same bits. D may be the same fragment as C.
// - A fragment's layout (row_major / col_major) says how the tile lies in memory: loading a
//   column-major tile into a row_major fragment gives the transpose, and a wrong result.
// Not emulated: other shapes, tf32, double and integer fragments, satf, and tensor-core speed.
#pragma once

#include <cstdint>
#include <source_location>
#include <string>
#include <type_traits>

#include "cuda_bf16.h"
#include "cuda_emulator.h"
#include "cuda_fp16.h"

namespace nvcuda::wmma {

struct matrix_a;
struct matrix_b;
struct accumulator;
struct row_major;
struct col_major;
enum layout_t { mem_row_major, mem_col_major };

template <typename T, int size>
struct fragment_base {
  enum { num_elements = size };
  using element_type = T;
  T x[size];
};

template <typename Use, int m, int n, int k, typename T, typename Layout = void>
class fragment;

template <typename Use, typename T, typename Layout>
class fragment<Use, 16, 16, 16, T, Layout>
    : public fragment_base<T, std::is_same_v<Use, accumulator> || !std::is_same_v<T, __half> ? 8
                                                                                             : 16> {
  static constexpr bool kMultiplicand =
      std::is_same_v<Use, matrix_a> || std::is_same_v<Use, matrix_b>;
  static_assert(
      !kMultiplicand || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>,
      "matrix_a and matrix_b fragments hold __half or __nv_bfloat16 (emulated: m16n16k16)");
  static_assert(!kMultiplicand || std::is_same_v<Layout, row_major> ||
                    std::is_same_v<Layout, col_major>,
                "matrix_a and matrix_b fragments need a layout: row_major or col_major");
  static_assert(kMultiplicand || (std::is_same_v<Use, accumulator> && std::is_void_v<Layout> &&
                                  (std::is_same_v<T, float> || std::is_same_v<T, __half>)),
                "accumulator fragments hold float or __half and take no layout");
};

template <typename T, int size>
void fill_fragment(fragment_base<T, size>& f, const std::type_identity_t<T>& v) {
  for (T& e : f.x) e = v;
}

}  // namespace nvcuda::wmma

namespace emu::wmma {
using namespace nvcuda::wmma;

// The tile element (row * 16 + column) that x[i] of lane `lane` holds: see the header comment.
template <typename Use>
int element_of(int lane, int i) {
  const int salt = std::is_same_v<Use, matrix_a> ? 101 : std::is_same_v<Use, matrix_b> ? 59 : 13;
  return ((32 * i + lane) * 37 + salt) & 255;
}

// Where tile element e lies in memory, in elements from the tile's pointer.
inline size_t offset_of(int e, unsigned ldm, layout_t layout) {
  const size_t row = e / 16, col = e % 16;
  return layout == mem_row_major ? row * ldm + col : col * ldm + row;
}

template <typename Layout>
constexpr layout_t kMemLayout = std::is_same_v<Layout, row_major> ? mem_row_major : mem_col_major;

// What every lane passes to a load or store: the same in all 32, or the program stops.
struct MemoryArgs {
  const void* ptr;
  unsigned ldm;
  layout_t layout;
};

inline void check_memory_args(const WarpCall& call, const MemoryArgs* const* warp, size_t bytes) {
  for (int l = 1; l < 32; ++l)
    if (warp[l]->ptr != warp[0]->ptr || warp[l]->ldm != warp[0]->ldm ||
        warp[l]->layout != warp[0]->layout)
      fail(describe(call) + ": lanes 0 and " + std::to_string(l) +
           " pass a different pointer, ldm or layout; all lanes of the warp must pass the same");
  if (reinterpret_cast<uintptr_t>(warp[0]->ptr) % 32 != 0)
    fail(describe(call) + ": the pointer is not 256-bit (32-byte) aligned (address % 32 = " +
         std::to_string(reinterpret_cast<uintptr_t>(warp[0]->ptr) % 32) +
         "); declare shared tiles __align__(32) and start each tile at a multiple of 32 bytes");
  if (warp[0]->ldm % (16 / bytes) != 0)
    fail(describe(call) + ": ldm = " + std::to_string(warp[0]->ldm) + " is not a multiple of " +
         std::to_string(16 / bytes) + " (ldm counts elements and must be a multiple of 16 bytes)");
}

// The loads: each lane fills its own x[] from the tile at p.
template <typename Use, typename T, typename Layout>
void load(fragment<Use, 16, 16, 16, T, Layout>& f, const T* p, unsigned ldm, layout_t layout,
          const WarpCall& call) {
  warp_collective(call, MemoryArgs{p, ldm, layout}, [&](const MemoryArgs* const* warp, int lane) {
    check_memory_args(call, warp, sizeof(T));
    for (int i = 0; i < f.num_elements; ++i)
      f.x[i] = p[offset_of(element_of<Use>(lane, i), ldm, layout)];
  });
}

// One lane's part of D = A * B + C: the warp's A and B fragments gathered into tiles (in float,
// exact), then this lane's elements of D, summed in the order the header comment gives.
template <typename TD, typename AB, typename LA, typename LB, typename TC>
void mma(fragment<accumulator, 16, 16, 16, TD>& d, const fragment<matrix_a, 16, 16, 16, AB, LA>& a,
         const fragment<matrix_b, 16, 16, 16, AB, LB>& b,
         const fragment<accumulator, 16, 16, 16, TC>& c, const WarpCall& call) {
  struct Operands {
    const fragment<matrix_a, 16, 16, 16, AB, LA>* a;
    const fragment<matrix_b, 16, 16, 16, AB, LB>* b;
  };
  warp_collective(call, Operands{&a, &b}, [&](const Operands* const* warp, int lane) {
    float ta[256], tb[256];
    for (int l = 0; l < 32; ++l) {
      for (int i = 0; i < a.num_elements; ++i)
        ta[element_of<matrix_a>(l, i)] = float(warp[l]->a->x[i]);
      for (int i = 0; i < b.num_elements; ++i)
        tb[element_of<matrix_b>(l, i)] = float(warp[l]->b->x[i]);
    }
    float out[fragment<accumulator, 16, 16, 16, TD>::num_elements];
    for (int i = 0; i < d.num_elements; ++i) {
      const int e = element_of<accumulator>(lane, i), row = e / 16, col = e % 16;
      float sum = float(c.x[i]);
      for (int k = 0; k < 16; ++k) sum += ta[row * 16 + k] * tb[k * 16 + col];
      out[i] = sum;
    }
    for (int i = 0; i < d.num_elements; ++i) d.x[i] = TD(out[i]);  // after reading C: D may be C
  });
}

}  // namespace emu::wmma

namespace nvcuda::wmma {

template <typename Use, typename T, typename Layout>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, Layout>& f, const T* p, unsigned ldm,
                      std::source_location where = std::source_location::current()) {
  static_assert(!std::is_void_v<Layout>, "an accumulator's load takes a layout_t");
  const emu::WarpCall call{"wmma::load_matrix_sync", where};
  emu::wmma::load(f, p, ldm, emu::wmma::kMemLayout<Layout>, call);
}

template <typename T>
void load_matrix_sync(fragment<accumulator, 16, 16, 16, T>& f, const T* p, unsigned ldm,
                      layout_t layout,
                      std::source_location where = std::source_location::current()) {
  const emu::WarpCall call{"wmma::load_matrix_sync", where};
  emu::wmma::load(f, p, ldm, layout, call);
}

// Each lane writes its own elements of the tile at p.
template <typename T>
void store_matrix_sync(T* p, const fragment<accumulator, 16, 16, 16, T>& f, unsigned ldm,
                       layout_t layout,
                       std::source_location where = std::source_location::current()) {
  const emu::WarpCall call{"wmma::store_matrix_sync", where};
  emu::warp_collective(
      call, emu::wmma::MemoryArgs{p, ldm, layout},
      [&](const emu::wmma::MemoryArgs* const* warp, int lane) {
        emu::wmma::check_memory_args(call, warp, sizeof(T));
        for (int i = 0; i < f.num_elements; ++i)
          p[emu::wmma::offset_of(emu::wmma::element_of<accumulator>(lane, i), ldm, layout)] =
              f.x[i];
      });
}

template <typename TD, typename AB, typename LA, typename LB, typename TC>
void mma_sync(fragment<accumulator, 16, 16, 16, TD>& d,
              const fragment<matrix_a, 16, 16, 16, AB, LA>& a,
              const fragment<matrix_b, 16, 16, 16, AB, LB>& b,
              const fragment<accumulator, 16, 16, 16, TC>& c,
              std::source_location where = std::source_location::current()) {
  const emu::WarpCall call{"wmma::mma_sync", where};
  emu::wmma::mma(d, a, b, c, call);
}

}  // namespace nvcuda::wmma
