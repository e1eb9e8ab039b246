// The references of TODO 4b and TODO 5's finalize_gradients, shared by the in-process tests
// (sequence_parallel_test.cpp, data_tensor_parallel_test.cpp) and the processes tests
// (tp_processes_test.cpp), so that a check run on threads and its run on processes compare with the
// same numbers within the same bounds: the core's unsharded ResidualMLP run child by child and the
// handout's bounds of 4b at TP = k (sp_bounds), and one process's gradients of the whole batch and
// the handout's bound of finalize_gradients.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtl/nn/module.h"
#include "gtl/ops/elementwise.h"
#include "gtl/ops/math_mode.h"
#include "lab08_cases.h"
#include "tensor_parallel.h"

namespace lab08_references {

using gtl::Tensor;
using lab08::Slice;
using lab08_cases::Case;
using lab08_cases::Grid;
using lab08_cases::kSpDim;
namespace nn = gtl::nn;

// ---- TODO 4b
// Rank r's rows of a [B*T, D] reference: its positions of every sequence.
inline std::vector<float> rank_rows(const Tensor& t, const Case& c, Slice mine) {
  return lab08_cases::positions(t.reshape({c.batch, c.time, kSpDim}), mine.begin, mine.end)
      .to_vector();
}
// The same rows of a per-element bound of a [B*T, D] tensor.
inline std::vector<double> rank_bounds(const std::vector<double>& b, const Case& c, Slice mine) {
  std::vector<double> out;
  for (int64_t i = 0; i < c.batch; ++i)
    for (int64_t t = mine.begin; t < mine.end; ++t)
      for (int64_t e = 0; e < kSpDim; ++e)
        out.push_back(b[std::size_t((i * c.time + t) * kSpDim + e)]);
  return out;
}

// The core's unsharded ResidualMLP on the whole batch, run child by child (ln, fc1, gelu, fc2,
// then the residual add, as its forward does) in row-invariant mode: what the ranks' results are
// compared with, and the operands of the bounds ("Sequence parallelism, within a bound" in the
// handout). Every tensor [N, D] or [N, 4D], N = B*T; grads in parameter order.
struct Unsharded {
  Tensor y, dx, gelu, dh, dln, xhat, rstd;
  std::vector<Tensor> grads;
};
inline Unsharded run_unsharded(const lab08_cases::SpCase& m) {
  gtl::ops::ScopedRowInvariant row_invariant(true);
  const int64_t n = m.x.size(0) * m.x.size(1);
  const Tensor x = m.x.reshape({n, kSpDim}), dy = m.dy.reshape({n, kSpDim});
  const auto& layer = m.full->children();
  std::vector<nn::Context> ctx(layer.size());
  Unsharded u;
  const Tensor ln = layer[0]->forward(x, ctx[0]);
  const Tensor h = layer[1]->forward(ln, ctx[1]);
  u.gelu = layer[2]->forward(h, ctx[2]);
  u.y = gtl::ops::add(x, layer[3]->forward(u.gelu, ctx[3]));
  u.dh = layer[2]->backward(ctx[2], layer[3]->backward(ctx[3], dy));
  u.dln = layer[1]->backward(ctx[1], u.dh);
  const Tensor mean = ctx[0].saved.at(1);
  u.rstd = ctx[0].saved.at(2);
  u.dx = gtl::ops::add(dy, layer[0]->backward(ctx[0], u.dln));
  for (const auto& p : m.full->parameters()) u.grads.push_back(p.grad.clone());
  u.xhat = Tensor::empty({n, kSpDim});  // as the LayerNorm's backward forms it, in float
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < kSpDim; ++c)
      u.xhat.data<float>()[i * kSpDim + c] =
          (x.data<float>()[i * kSpDim + c] - mean.data<float>()[i]) * u.rstd.data<float>()[i];
  return u;
}

// The bounds of the handout at TP = k > 1, per element of the unsharded y, dx [N, D] and of the
// three replicated gradients [D]. beta_y and beta_dln: the contraction bound of fc2's output
// (K = 4D, cut in k) and of the LayerNorm's output gradient dln (dh times fc1's weight, K = 4D).
struct SpBounds {
  std::vector<double> y, dx;
  std::vector<std::vector<double>> replicated;  // ln.weight, ln.bias, fc2.bias
};
inline SpBounds sp_bounds(const lab08_cases::SpCase& m, const Unsharded& u, int k) {
  const auto p = m.full->parameters();
  const int64_t n = u.y.size(0), d = kSpDim;
  const double uu = lab08_cases::kU;
  const std::vector<double> beta_y = lab08_cases::contraction_bound(u.gelu, p[4].value, p[5].value);
  const std::vector<double> beta = lab08_cases::contraction_bound(u.dh, p[2].value, Tensor(), true);
  const float* w = p[0].value.data<float>();
  const float* xh = u.xhat.data<float>();
  const float* g = u.dln.data<float>();
  SpBounds b;
  b.y.resize(beta_y.size());
  for (std::size_t e = 0; e < beta_y.size(); ++e)
    b.y[e] = 2.0 * (beta_y[e] + 2.0 * uu * std::fabs(double(u.y.data<float>()[e])));
  // dx = dy + the LayerNorm's backward of dln, linear in dln: per row,
  // L_c(v) = |w_c| v_c + (1/D) sum_j |w_j| v_j + |xhat_c| (1/D) sum_j |w_j xhat_j| v_j.
  b.dx.resize(beta.size());
  for (int64_t i = 0; i < n; ++i) {
    double lb1 = 0, lb2 = 0, la1 = 0, la2 = 0;
    for (int64_t j = 0; j < d; ++j) {
      const auto e = std::size_t(i * d + j);
      const double wj = std::fabs(double(w[j])), xj = std::fabs(double(xh[e]));
      lb1 += wj * beta[e], lb2 += wj * xj * beta[e];
      la1 += wj * std::fabs(double(g[e])), la2 += wj * xj * std::fabs(double(g[e]));
    }
    const double rstd = u.rstd.data<float>()[i];
    for (int64_t c = 0; c < d; ++c) {
      const auto e = std::size_t(i * d + c);
      const double wc = std::fabs(double(w[c])), xc = std::fabs(double(xh[e]));
      const double l_beta = wc * beta[e] + lb1 / double(d) + xc * lb2 / double(d);
      const double a = wc * std::fabs(double(g[e])) + la1 / double(d) + xc * la2 / double(d);
      b.dx[e] = 2.0 * (rstd * (l_beta + 16.0 * uu * a) +
                       2.0 * uu * std::fabs(double(u.dx.data<float>()[e])));
    }
  }
  // The replicated gradients: 2 (k + 3) u sum_i |t_i| + 2 sum_i |xhat_i| beta_i (ln.weight),
  // with xhat_i = 1 for ln.bias; fc2.bias's terms dy_i are the same bits on both sides.
  b.replicated = {lab08_cases::replicated_bound(u.dln, u.xhat, k + 2),
                  lab08_cases::replicated_bound(u.dln, Tensor(), k + 2),
                  lab08_cases::replicated_bound(m.dy.reshape({n, d}), Tensor(), k)};
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < d; ++c) {
      const auto e = std::size_t(i * d + c);
      b.replicated[0][std::size_t(c)] += 2.0 * std::fabs(double(xh[e])) * beta[e];
      b.replicated[1][std::size_t(c)] += 2.0 * beta[e];
    }
  return b;
}

// ---- TODO 5 (finalize_gradients)

// The gradient of the whole batch's loss computed by one process: the core's unsharded layer on
// all dp b sequences, each sequence's dy the gradient of its replica's loss (lab08_cases.h,
// make_dp_tp_case), scaled to the whole batch's mean loss.
inline std::vector<Tensor> one_process_gradients(const lab08_cases::SpCase& m, const Grid& g) {
  std::vector<Tensor> grads = lab08_cases::mlp_gradients(m, m.x, m.dy);
  for (Tensor& t : grads)
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] /= float(g.dp);
  return grads;
}

// The bound of the handout ("The same as one process, within a bound"), 2 (N + 2) u S per element,
// with S = sum_i |tau_i| over the N rows MEASURED: the gradient of the core's layer on row i alone
// (one row: every gradient element is that row's term, rounded once) from its replica's dy,
// rescaled to the whole batch's mean loss as one_process_gradients is.
inline std::vector<std::vector<double>> one_process_bounds(const lab08_cases::SpCase& m,
                                                           const Grid& g) {
  const int64_t b = m.x.size(0), t = m.x.size(1), n = b * t;
  std::vector<std::vector<double>> s;
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < t; ++j) {
      const Tensor x = lab08_cases::positions(lab08_cases::sequences(m.x, i, i + 1), j, j + 1);
      const Tensor dy = lab08_cases::positions(lab08_cases::sequences(m.dy, i, i + 1), j, j + 1);
      const std::vector<Tensor> row = lab08_cases::mlp_gradients(m, x, dy);
      s.resize(row.size());
      for (std::size_t p = 0; p < row.size(); ++p) {
        s[p].resize(std::size_t(row[p].numel()), 0.0);
        for (int64_t e = 0; e < row[p].numel(); ++e)
          s[p][std::size_t(e)] += std::fabs(double(row[p].data<float>()[e]));
      }
    }
  for (auto& v : s)
    for (double& e : v) e *= 2.0 * double(n + 2) * lab08_cases::kU / double(g.dp);
  return s;
}

}  // namespace lab08_references
