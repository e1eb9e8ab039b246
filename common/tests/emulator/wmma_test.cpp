// Tests of the emulator's warp matrix functions (common/emulator/mma.h) on kernels written as a
// tensor-core lab would write them (wmma_kernels.cu): one tile and a tiled GEMM in __half and
// __nv_bfloat16, bit for bit against a CPU reference that sums in the order mma.h documents
// (C, then the products k = 0, 1, ..., 15, in float); column-major B, accumulation into C, a
// column-major store, a __half accumulator; and the mistakes a GPU punishes: a kernel that assumes
// a fragment layout gets a wrong answer, and a call some lanes skip, a bad ldm, a misaligned
// pointer or half a warp stops the program.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <mma.h>  // the emulator's: fragment sizes

#include "wmma_kernels.h"

namespace {

constexpr int kTile = 16;
constexpr int kSchedules = 3;  // consecutive launches that cover every schedule in rotation

// Values whose products and sums round in float (mantissas of up to 8 random bits, exponents
// from -4 to 2, both signs): a reference that sums in another order gets other bits.
template <typename T>
std::vector<T> random_matrix(size_t count, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> mantissa(0, 255), exponent(-4, 2), sign(0, 1);
  std::vector<T> m;
  for (size_t i = 0; i < count; ++i)
    m.push_back(
        T((sign(gen) ? -1.f : 1.f) * std::ldexp(1.f + mantissa(gen) / 256.f, exponent(gen))));
  return m;
}

// c (m x n) = c0 + a (m x k, row-major) * b (k x n): element (i, j) is c0(i, j) + a(i, 0) * b(0, j)
// + ... in that order, in float. b(kk, j) is b[kk * ldb_row + j * ldb_col].
template <typename T>
std::vector<float> reference(const std::vector<T>& a, const std::vector<T>& b, const float* c0,
                             int m, int n, int k, int b_row_stride, int b_col_stride,
                             bool reverse_k = false) {
  std::vector<float> c(size_t(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float sum = c0 ? c0[i * n + j] : 0.f;
      for (int q = 0; q < k; ++q) {
        const int kk = reverse_k ? k - 1 - q : q;
        sum +=
            float(a[size_t(i) * k + kk]) * float(b[size_t(kk) * b_row_stride + j * b_col_stride]);
      }
      c[size_t(i) * n + j] = sum;
    }
  return c;
}

std::vector<float> transposed(const std::vector<float>& m, int rows, int cols) {
  std::vector<float> t(m.size());
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) t[size_t(j) * rows + i] = m[size_t(i) * cols + j];
  return t;
}

// The number of elements whose bits differ (NaN never equals: a NaN result is a mismatch).
int mismatches(const std::vector<float>& got, const std::vector<float>& want) {
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    uint32_t g, w;
    std::memcpy(&g, &got[i], 4);
    std::memcpy(&w, &want[i], 4);
    bad += g != w || std::isnan(got[i]);
  }
  return bad;
}

template <typename T>
class WmmaTile : public ::testing::Test {};
using InputTypes = ::testing::Types<__half, __nv_bfloat16>;
TYPED_TEST_SUITE(WmmaTile, InputTypes);

// d = a * b + c for every combination of B's layout, accumulate-or-not and D's store layout,
// under every schedule: bit for bit the reference. The data is such that the sum order matters.
TYPED_TEST(WmmaTile, MatchesTheReferenceBitForBit) {
  using T = TypeParam;
  constexpr int kElems = kTile * kTile;
  const std::vector<T> a = random_matrix<T>(kElems, 1), b = random_matrix<T>(kElems, 2);
  const std::vector<T> bt = [&] {  // b column-major
    std::vector<T> t(kElems);
    for (int r = 0; r < kTile; ++r)
      for (int c = 0; c < kTile; ++c) t[c * kTile + r] = b[r * kTile + c];
    return t;
  }();
  std::vector<float> c;
  for (T v : random_matrix<T>(kElems, 3)) c.push_back(float(v) * 8.f);
  const std::vector<float> plain = reference(a, b, nullptr, kTile, kTile, kTile, kTile, 1);
  const std::vector<float> accumulated = reference(a, b, c.data(), kTile, kTile, kTile, kTile, 1);
  ASSERT_GT(mismatches(reference(a, b, c.data(), kTile, kTile, kTile, kTile, 1, true), accumulated),
            0)
      << "the test data must make the summation order visible";
  for (int launch = 0; launch < kSchedules; ++launch)
    for (bool b_col : {false, true})
      for (bool accumulate : {false, true})
        for (bool d_col : {false, true}) {
          std::vector<float> d(kElems, -1.f);
          wmmatest::mma_tile(a.data(), (b_col ? bt : b).data(), b_col,
                             accumulate ? c.data() : nullptr, d.data(), d_col);
          const std::vector<float>& want = accumulate ? accumulated : plain;
          EXPECT_EQ(mismatches(d, d_col ? transposed(want, kTile, kTile) : want), 0)
              << "B " << (b_col ? "col" : "row") << "-major, "
              << (accumulate ? "d = a*b + c" : "d = a*b") << ", D stored "
              << (d_col ? "col" : "row") << "-major, launch " << launch;
        }
}

// B laid out column-major but loaded into a row_major fragment: the tile read is B's transpose,
// and the product is the wrong one, as on a GPU.
TYPED_TEST(WmmaTile, LayoutMismatchGivesTheTransposedProduct) {
  using T = TypeParam;
  constexpr int kElems = kTile * kTile;
  const std::vector<T> a = random_matrix<T>(kElems, 4), b = random_matrix<T>(kElems, 5);
  std::vector<float> d(kElems);
  wmmatest::mma_tile(a.data(), b.data(), /*b_col_major=*/true, nullptr, d.data(), false);
  EXPECT_EQ(mismatches(d, reference(a, b, nullptr, kTile, kTile, kTile, 1, kTile)), 0)
      << "a col_major fragment reads element (k, n) at b[n * 16 + k]";
  EXPECT_GT(mismatches(d, reference(a, b, nullptr, kTile, kTile, kTile, kTile, 1)),
            kTile * kTile / 2)
      << "a row-major B loaded as col_major must not give a * b";
}

// A __half accumulator: C widened to float, the products added in order in float, D rounded to
// __half once at the end.
TEST(WmmaHalfAccumulator, MatchesTheReferenceBitForBit) {
  constexpr int kElems = kTile * kTile;
  const std::vector<__half> a = random_matrix<__half>(kElems, 13),
                            b = random_matrix<__half>(kElems, 14),
                            c = random_matrix<__half>(kElems, 15);
  std::vector<float> c_float;
  for (__half v : c) c_float.push_back(float(v));
  const std::vector<float> sums = reference(a, b, c_float.data(), kTile, kTile, kTile, kTile, 1);
  std::vector<__half> d(kElems, __float2half(-1.f));
  wmmatest::mma_tile_half_accumulator(a.data(), b.data(), c.data(), d.data());
  int bad = 0;
  for (int i = 0; i < kElems; ++i)
    bad += __half_as_ushort(d[i]) != __half_as_ushort(__float2half_rn(sums[i]));
  EXPECT_EQ(bad, 0) << "elements of D not the float sum rounded once to __half";
}

template <typename T>
class WmmaTiledGemm : public ::testing::Test {};
TYPED_TEST_SUITE(WmmaTiledGemm, InputTypes);

// Several blocks of four warps, K in several steps through shared memory: each output tile is the
// running sum over k = 0 .. K-1 in order, bit for bit the reference, under every schedule.
TYPED_TEST(WmmaTiledGemm, MatchesTheReferenceBitForBit) {
  using T = TypeParam;
  constexpr int kM = 64, kN = 96, kK = 48;
  const std::vector<T> a = random_matrix<T>(kM * kK, 6), b = random_matrix<T>(kK * kN, 7);
  const std::vector<float> want = reference(a, b, nullptr, kM, kN, kK, kN, 1);
  for (int launch = 0; launch < kSchedules; ++launch) {
    std::vector<float> c(kM * kN, -1.f);
    wmmatest::tiled_gemm(a.data(), b.data(), c.data(), kM, kN, kK);
    EXPECT_EQ(mismatches(c, want), 0) << "launch " << launch;
  }
}

// A loop over all num_elements of the accumulator (a scale) is layout-free and right; a bias
// added by a column guessed from a row-major x[] layout is wrong on most elements: the mapping of
// x[] to the tile is unspecified, and the emulator's is not the naive one.
TEST(WmmaFragmentLayout, ElementwiseOpsWorkAndAssumedLayoutsFail) {
  constexpr int kElems = kTile * kTile;
  const std::vector<__half> a = random_matrix<__half>(kElems, 8),
                            b = random_matrix<__half>(kElems, 9);
  std::vector<float> bias(kTile);
  for (int j = 0; j < kTile; ++j) bias[j] = 100.f * (j + 1);
  const std::vector<float> product = reference(a, b, nullptr, kTile, kTile, kTile, kTile, 1);
  std::vector<float> d(kElems);
  wmmatest::mma_tile_epilogue(a.data(), b.data(), bias.data(), d.data(),
                              wmmatest::Epilogue::kScaleByTwo);
  std::vector<float> doubled = product;
  for (float& v : doubled) v *= 2.f;
  EXPECT_EQ(mismatches(d, doubled), 0) << "scaling every x[i] must scale the whole tile";
  wmmatest::mma_tile_epilogue(a.data(), b.data(), bias.data(), d.data(),
                              wmmatest::Epilogue::kBiasAssumingRowMajor);
  std::vector<float> biased = product;
  for (int i = 0; i < kElems; ++i) biased[i] += bias[i % kTile];
  EXPECT_GT(mismatches(d, biased), kElems / 2)
      << "a kernel that guesses which tile element x[i] holds must get a wrong answer";
}

// The fragments' sizes are the toolkit's (cuda's mma.hpp): code that uses num_elements, not a
// literal, is portable.
TEST(WmmaFragmentLayout, ElementCountsAreTheToolkits) {
  using namespace nvcuda;
  EXPECT_EQ((wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major>::num_elements),
            16);
  EXPECT_EQ((wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major>::num_elements),
            16);
  EXPECT_EQ(
      (wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major>::num_elements),
      8);
  EXPECT_EQ((wmma::fragment<wmma::accumulator, 16, 16, 16, float>::num_elements), 8);
  EXPECT_EQ((wmma::fragment<wmma::accumulator, 16, 16, 16, __half>::num_elements), 8);
}

// ---- misuse the emulator must stop --------------------------------------------------------------
class WmmaDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// `if (lane != 31) mma_sync(...)`: a GPU hangs or computes garbage; here the program stops,
// naming both calls and their lines.
TEST_F(WmmaDeathTest, LaneSkipsMmaSync) {
  EXPECT_DEATH(wmmatest::misuse(wmmatest::Misuse::kLaneSkipsMma),
               "CUDA emulator: wmma::mma_sync \\(wmma_kernels\\.cu:[0-9]+\\) is "
               "warp-collective: all 32 lanes of the warp must make the call together, but lane "
               "31 is in wmma::store_matrix_sync \\(wmma_kernels\\.cu:[0-9]+\\)");
}

TEST_F(WmmaDeathTest, LaneExitsBeforeMmaSync) {
  EXPECT_DEATH(wmmatest::misuse(wmmatest::Misuse::kLaneExitsBeforeMma),
               "wmma::mma_sync .* is warp-collective.*lane 5 has exited");
}

TEST_F(WmmaDeathTest, LdmNotAMultipleOf16Bytes) {
  EXPECT_DEATH(wmmatest::misuse(wmmatest::Misuse::kLdmNotMultipleOf8),
               "wmma::load_matrix_sync .*: ldm = 12 is not a multiple of 8");
}

TEST_F(WmmaDeathTest, PointerNotAligned) {
  EXPECT_DEATH(wmmatest::misuse(wmmatest::Misuse::kMisalignedPointer),
               "wmma::load_matrix_sync .*: the pointer is not 256-bit \\(32-byte\\) aligned "
               "\\(address % 32 = 16\\)");
}

// A per-lane pointer (as if each lane loaded its own row): the call takes one tile for the warp.
TEST_F(WmmaDeathTest, PointerDiffersBetweenLanes) {
  EXPECT_DEATH(wmmatest::misuse(wmmatest::Misuse::kPointerPerLane),
               "wmma::load_matrix_sync .*: lanes 0 and 1 pass a different pointer, ldm or layout");
}

TEST_F(WmmaDeathTest, HalfAWarp) {
  EXPECT_DEATH(wmmatest::misuse(wmmatest::Misuse::kPartialWarp),
               "wmma::load_matrix_sync .* is warp-collective.*lane 16 does not exist");
}

}  // namespace
