// The inputs and references of lab 10's tests, shared by the tests and the lab's judge: the judge
// draws the same inputs from the grading seed and recomputes the references in double precision,
// without the student's code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "attention_shape.h"
#include "gtl_test_seed.h"

namespace lab10_cases {

// The longest sequence of the emulated tests (the emulator runs a kernel's threads one after
// another); the GPU tests go to thousands.
constexpr int kEmulatedMaxT = 130;

// ---- cases: a shape and how large the scores get
// ------------------------------------------------- Edge lengths (one query, fewer keys than a
// tile, one tile exactly, a tile and one, several tiles with a tail), both head dimensions, causal
// and not; then two lengths drawn from the seed. The cases of length 67 and the second drawn one
// take queries 24 times larger: scores near 200, whose exponential overflows float32 (past 88.7)
// unless the row's max is subtracted first.
struct Case {
  lab10::AttentionShape shape;
  float q_scale = 1.f;
};
inline std::vector<Case> cases(const std::string& test, int max_t) {
  std::vector<Case> out;
  for (int d : {64, 128})
    for (bool causal : {false, true})
      for (int t : {1, 7, 32, 33, 67})
        if (t <= max_t) out.push_back({{2, t, d, causal}, t == 67 ? 24.f : 1.f});
  std::mt19937_64 g = gtl::test_seed::generator(test);
  for (int i = 0; i < 2; ++i)
    out.push_back({{int(gtl::test_seed::draw(g, 1, 3)), int(gtl::test_seed::draw(g, 2, max_t)),
                    i == 0 ? 64 : 128, i == 1},
                   i == 1 ? 24.f : 1.f});
  return out;
}

// The GPU tests' cases: the emulated ones, then longer ones drawn from the same seed, up to 1,024
// (many blocks at once), a causal one at 1,024 and a long one with large scores.
constexpr int kGpuMaxT = 1024;
inline std::vector<Case> gpu_cases(const std::string& test) {
  std::vector<Case> out = cases(test, kEmulatedMaxT);
  for (const Case& c : cases(test + ".long", kGpuMaxT))
    if (c.shape.t > kEmulatedMaxT) out.push_back(c);
  out.push_back({{4, kGpuMaxT, 64, true}, 1.f});
  out.push_back({{2, 1000, 128, false}, 24.f});
  return out;
}

inline std::string describe(const Case& c) {
  const lab10::AttentionShape& s = c.shape;
  return "bh " + std::to_string(s.bh) + ", t " + std::to_string(s.t) + ", d " +
         std::to_string(s.d) + (s.causal ? ", causal" : ", not causal") +
         (c.q_scale != 1.f ? ", large scores" : "");
}

// ---- inputs: q, k, v, dout; keys grow along the sequence, so the row max moves from tile to tile
// -
struct Inputs {
  std::vector<float> q, k, v, dout;
};
inline Inputs inputs(const Case& cs) {
  const lab10::AttentionShape& s = cs.shape;
  const size_t n = size_t(s.bh) * s.t * s.d;
  std::mt19937 rng(unsigned(s.bh * 1000003 + s.t * 131 + s.d + (s.causal ? 7 : 0)));
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  Inputs in{std::vector<float>(n), std::vector<float>(n), std::vector<float>(n),
            std::vector<float>(n)};
  // Later keys are larger (up to 3x): a later tile holds larger scores for some queries, so an
  // output accumulated under an earlier max must be rescaled.
  for (size_t e = 0; e < n; ++e) {
    const size_t pos = (e / s.d) % s.t;
    in.q[e] = 2.f * cs.q_scale * unit(rng);
    in.k[e] = unit(rng) * (1.f + 2.f * float(pos) / float(std::max(1, s.t - 1)));
    in.v[e] = unit(rng);
    in.dout[e] = unit(rng);
  }
  return in;
}

// ---- the reference, in double, with each output element's tolerance
// ------------------------------ A float32 sum of n terms a_1..a_n, each known to a relative error
// e, is within (e + n u) sum |a_k| of the exact sum, to first order (u = 2^-24, float32's unit
// roundoff; any order of summation). Applied to the scores, then through softmax and the output
// sums, this gives a bound per element computed from the data (the handout derives each line); the
// tolerance is twice it, which covers the second-order terms and expf's and logf's error (at most 2
// ulp on a GPU). Observed errors sit far below it; the mistakes the checks exist for (a key too
// many or too few, a running sum not rescaled, a tail tile read past the end) sit far above it.
struct Reference {
  std::vector<double> o, lse, dq, dk, dv;                      // the exact values
  std::vector<double> o_tol, lse_tol, dq_tol, dk_tol, dv_tol;  // and their tolerances
};
inline Reference reference(const Case& cs, const Inputs& in) {
  const lab10::AttentionShape& s = cs.shape;
  const int t = s.t, d = s.d;
  const double u = std::ldexp(1.0, -24), scale = 1.0 / std::sqrt(double(d));
  const double floor = std::ldexp(1.0, -120);
  const size_t n = size_t(s.bh) * t * d, rows = size_t(s.bh) * t;
  auto zeros = [](size_t k, double x = 0.0) { return std::vector<double>(k, x); };
  Reference r{zeros(n),        zeros(rows),     zeros(n),           zeros(n),
              zeros(n),        zeros(n, floor), zeros(rows, floor), zeros(n, floor),
              zeros(n, floor), zeros(n, floor)};
  // Per head: P, the scores' error bounds, dP and dS with their error bounds.
  std::vector<double> p(size_t(t) * t), score_err(size_t(t) * t), dp(size_t(t) * t),
      ds(size_t(t) * t), ds_err(size_t(t) * t);
  for (int h = 0; h < s.bh; ++h) {
    const size_t base = size_t(h) * t * d;
    auto at = [&](const std::vector<float>& x, int row, int c) {
      return double(x[base + size_t(row) * d + c]);
    };
    auto sees = [&](int i, int j) { return !s.causal || j <= i; };
    for (int i = 0; i < t; ++i) {
      // Scores: a d-term dot product, then the scale: error (d + 1) u scale sum |q_c k_c|.
      double m = -INFINITY, worst_score_err = 0;
      for (int j = 0; j < t; ++j) {
        if (!sees(i, j)) continue;
        double dot = 0, magnitude = 0;
        for (int c = 0; c < d; ++c) {
          dot += at(in.q, i, c) * at(in.k, j, c);
          magnitude += std::fabs(at(in.q, i, c) * at(in.k, j, c));
        }
        p[size_t(i) * t + j] = dot * scale;
        score_err[size_t(i) * t + j] = (d + 1) * u * scale * magnitude;
        worst_score_err = std::max(worst_score_err, score_err[size_t(i) * t + j]);
        m = std::max(m, dot * scale);
      }
      double sum = 0;
      for (int j = 0; j < t; ++j)
        if (sees(i, j)) sum += std::exp(p[size_t(i) * t + j] - m);
      const double lse = m + std::log(sum);
      r.lse[size_t(h) * t + i] = lse;
      // lse: the worst score's error, the t-term sum of exponentials (each within 2 u), the log.
      r.lse_tol[size_t(h) * t + i] += 2 * (worst_score_err + (t + 2) * u + u * std::fabs(lse));
      for (int j = 0; j < t; ++j)
        p[size_t(i) * t + j] = sees(i, j) ? std::exp(p[size_t(i) * t + j] - m) / sum : 0.0;
      // P_ij's relative error: its own score's, the normaliser's (the worst score's and its sum's),
      // the running rescales (at most one per key) and the exponential's.
      const double p_rel = 2 * worst_score_err + (2 * t + 4) * u;
      for (int c = 0; c < d; ++c) {
        double acc = 0, magnitude = 0;
        for (int j = 0; j < t; ++j) {
          acc += p[size_t(i) * t + j] * at(in.v, j, c);
          magnitude += p[size_t(i) * t + j] * std::fabs(at(in.v, j, c));
        }
        r.o[base + size_t(i) * d + c] = acc;
        r.o_tol[base + size_t(i) * d + c] += 2 * (p_rel + (t + 1) * u) * magnitude;
      }
    }
    // Backward, given o and lse in float32: P_ij = exp(S_ij - lse_i) (relative error: the
    // score's, lse's rounding to float, the exponential's), dP_ij = dO_i . v_j (a d-term sum), the
    // row term R_i = sum_j P_ij dP_ij, dS = P (dP - R), then dQ = scale dS K, dK = scale dS^T Q,
    // dV = P^T dO (sums over at most t terms). R_i's tolerance covers a kernel that sums it over
    // the row in float32 and one that finds it from the forward's float32 outputs (d-term sums of
    // rounded values): the sum of both bounds.
    std::vector<double> dp_magnitude(t);
    for (int i = 0; i < t; ++i) {
      const double lse_round = u * std::fabs(r.lse[size_t(h) * t + i]);
      double row = 0, row_err = 0, outputs_magnitude = 0;
      for (int j = 0; j < t; ++j) {
        double dot = 0, magnitude = 0;
        for (int c = 0; c < d; ++c) {
          dot += at(in.dout, i, c) * at(in.v, j, c);
          magnitude += std::fabs(at(in.dout, i, c) * at(in.v, j, c));
        }
        dp[size_t(i) * t + j] = dot;
        dp_magnitude[j] = magnitude;
        const double pij = p[size_t(i) * t + j];
        const double p_rel = score_err[size_t(i) * t + j] + lse_round + 2 * u;
        row += pij * dot;
        row_err += pij * (p_rel * std::fabs(dot) + (d + 1) * u * magnitude) +
                   (t + 1) * u * pij * std::fabs(dot);
      }
      for (int c = 0; c < d; ++c)
        outputs_magnitude += std::fabs(at(in.dout, i, c) * r.o[base + size_t(i) * d + c]);
      row_err += (d + 2) * u * outputs_magnitude;
      for (int j = 0; j < t; ++j) {
        const double pij = p[size_t(i) * t + j], dot = dp[size_t(i) * t + j];
        const double p_rel = score_err[size_t(i) * t + j] + lse_round + 2 * u;
        ds[size_t(i) * t + j] = pij * (dot - row);
        ds_err[size_t(i) * t + j] =
            pij * (p_rel * std::fabs(dot - row) + (d + 1) * u * dp_magnitude[j] + row_err);
      }
    }
    for (int i = 0; i < t; ++i)
      for (int j = 0; j < t; ++j) {
        const size_t ij = size_t(i) * t + j;
        if (p[ij] == 0.0) continue;
        const double p_rel = score_err[ij] + u * std::fabs(r.lse[size_t(h) * t + i]) + 2 * u;
        for (int c = 0; c < d; ++c) {
          const size_t qi = base + size_t(i) * d + c, kj = base + size_t(j) * d + c;
          r.dq[qi] += ds[ij] * at(in.k, j, c) * scale;
          r.dk[kj] += ds[ij] * at(in.q, i, c) * scale;
          r.dv[kj] += p[ij] * at(in.dout, i, c);
          const double ds_bound = ds_err[ij] + (t + 2) * u * std::fabs(ds[ij]);
          r.dq_tol[qi] += 2 * ds_bound * std::fabs(at(in.k, j, c)) * scale;
          r.dk_tol[kj] += 2 * ds_bound * std::fabs(at(in.q, i, c)) * scale;
          r.dv_tol[kj] += 2 * (p_rel + (t + 1) * u) * p[ij] * std::fabs(at(in.dout, i, c));
        }
      }
  }
  return r;
}

// The float32 forms of the reference's o and lse: what backward is given in its own tests, so
// that TODO 3 is graded whatever the state of TODO 2.
inline std::vector<float> to_float(const std::vector<double>& x) {
  return std::vector<float>(x.begin(), x.end());
}

}  // namespace lab10_cases
