// The inputs and reference of lab 10's tensor-core GEMM tests (TODO 4), shared by the tests and
// the lab's judge: shapes (edge ones and two drawn from the seed), 16-bit inputs as float values,
// and the exact product in double with each element's tolerance.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtl/tensor/half.h"
#include "gtl_test_seed.h"

namespace lab10_gemm_cases {

struct Shape {
  int m, n, k;
};

// Multiples of 16 only (the contract): one tile, then m, n and k that few block tiles or steps
// along k divide; then two drawn from the seed, up to 160.
inline std::vector<Shape> shapes(const std::string& test) {
  std::vector<Shape> out = {{16, 16, 16},  {32, 48, 64},    {64, 64, 32},
                            {80, 144, 48}, {128, 128, 128}, {144, 16, 272}};
  std::mt19937_64 g = gtl::test_seed::generator(test);
  for (int i = 0; i < 2; ++i)
    out.push_back({16 * int(gtl::test_seed::draw(g, 1, 10)),
                   16 * int(gtl::test_seed::draw(g, 1, 10)),
                   16 * int(gtl::test_seed::draw(g, 1, 10))});
  return out;
}

// The GPU tests' shapes: the emulated ones, then sizes the emulator cannot reach, with tails of
// every block tile.
inline std::vector<Shape> gpu_shapes(const std::string& test) {
  std::vector<Shape> out = shapes(test);
  out.push_back({512, 768, 1024});
  out.push_back({1040, 1008, 528});
  return out;
}

inline std::string describe(const Shape& s, bool bf16) {
  return std::to_string(s.m) + " x " + std::to_string(s.n) + " x " + std::to_string(s.k) +
         (bf16 ? ", bf16" : ", fp16");
}

// A and B's values, already rounded to the 16-bit type (what the kernel is given).
struct Inputs {
  std::vector<float> a, b;
};
inline Inputs inputs(const Shape& s, bool bf16) {
  std::mt19937 rng(unsigned(s.m * 7919 + s.n * 131 + s.k + (bf16 ? 1 : 0)));
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  auto round = [&](float x) {
    return bf16 ? gtl::bfloat16_bits_to_float(gtl::float_to_bfloat16_bits(x))
                : gtl::half_bits_to_float(gtl::float_to_half_bits(x));
  };
  Inputs in{std::vector<float>(size_t(s.m) * s.k), std::vector<float>(size_t(s.k) * s.n)};
  for (float& x : in.a) x = round(unit(rng));
  for (float& x : in.b) x = round(unit(rng));
  return in;
}

// The exact C (products of 16-bit values are exact in float32, so only the sums round) and each
// element's tolerance: a float32 sum of k exact products, in any order, is within k u sum |a b|
// of the exact sum to first order (u = 2^-24); twice that, plus 2^-120 for subnormal results.
// An accumulator of 16-bit floats errs by about k 2^-11 sum |a b| (fp16) or k 2^-8 (bf16): far
// outside.
struct Reference {
  std::vector<double> c, tolerance;
};
inline Reference reference(const Shape& s, const Inputs& in) {
  const double u = std::ldexp(1.0, -24);
  Reference r{std::vector<double>(size_t(s.m) * s.n), std::vector<double>(size_t(s.m) * s.n)};
  for (int i = 0; i < s.m; ++i)
    for (int j = 0; j < s.n; ++j) {
      double sum = 0, magnitude = 0;
      for (int p = 0; p < s.k; ++p) {
        const double product = double(in.a[size_t(i) * s.k + p]) * in.b[size_t(p) * s.n + j];
        sum += product;
        magnitude += std::fabs(product);
      }
      r.c[size_t(i) * s.n + j] = sum;
      r.tolerance[size_t(i) * s.n + j] = 2 * (s.k + 1) * u * magnitude + std::ldexp(1.0, -120);
    }
  return r;
}

}  // namespace lab10_gemm_cases
