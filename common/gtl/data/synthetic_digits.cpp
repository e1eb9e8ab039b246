#include "gtl/data/synthetic_digits.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "gtl/tensor/philox.h"

namespace gtl::data {

namespace {

constexpr float kPi = 3.14159265358979f;

struct Point {
  float x, y;
};
using Stroke = std::vector<Point>;  // a polyline
using Glyph = std::vector<Stroke>;

// An elliptic arc from angle a0 to a1 (degrees; y points down, so -90 is the top).
Stroke arc(float cx, float cy, float rx, float ry, float a0, float a1, int segments = 12) {
  Stroke s;
  for (int i = 0; i <= segments; ++i) {
    const float a = (a0 + (a1 - a0) * static_cast<float>(i) / segments) * kPi / 180.f;
    s.push_back({cx + rx * std::cos(a), cy + ry * std::sin(a)});
  }
  return s;
}

Stroke append(Stroke s, std::initializer_list<Point> more) {
  s.insert(s.end(), more.begin(), more.end());
  return s;
}

// The ten glyphs in a unit box (x right, y down), drawn once.
const std::array<Glyph, 10>& glyphs() {
  static const std::array<Glyph, 10> g = {
      Glyph{arc(0.5f, 0.5f, 0.42f, 0.48f, 0, 360, 20)},
      Glyph{{{0.25f, 0.2f}, {0.5f, 0.02f}, {0.5f, 0.98f}}},
      Glyph{append(arc(0.5f, 0.3f, 0.4f, 0.28f, -160, 20), {{0.08f, 0.98f}, {0.95f, 0.98f}})},
      Glyph{arc(0.5f, 0.27f, 0.38f, 0.25f, -150, 90), arc(0.5f, 0.73f, 0.42f, 0.26f, -90, 150)},
      Glyph{{{0.7f, 0.98f}, {0.7f, 0.02f}, {0.05f, 0.68f}, {0.95f, 0.68f}}},
      Glyph{{{0.85f, 0.02f}, {0.2f, 0.02f}, {0.24f, 0.45f}},
            arc(0.5f, 0.68f, 0.4f, 0.3f, -130, 150)},
      Glyph{arc(0.5f, 0.7f, 0.38f, 0.28f, 0, 360, 16), arc(0.62f, 0.7f, 0.5f, 0.68f, 180, 260)},
      Glyph{{{0.05f, 0.02f}, {0.95f, 0.02f}, {0.35f, 0.98f}}},
      Glyph{arc(0.5f, 0.26f, 0.32f, 0.24f, 0, 360, 16), arc(0.5f, 0.73f, 0.4f, 0.26f, 0, 360, 16)},
      Glyph{arc(0.5f, 0.3f, 0.38f, 0.28f, 0, 360, 16), arc(0.38f, 0.3f, 0.5f, 0.68f, 0, 80)},
  };
  return g;
}

// Squared distance from p to the segment a-b.
float dist2_to_segment(Point p, Point a, Point b) {
  const float dx = b.x - a.x, dy = b.y - a.y;
  const float len2 = dx * dx + dy * dy;
  float t = len2 > 0.f ? ((p.x - a.x) * dx + (p.y - a.y) * dy) / len2 : 0.f;
  t = std::clamp(t, 0.f, 1.f);
  const float ex = p.x - (a.x + t * dx), ey = p.y - (a.y + t * dy);
  return ex * ex + ey * ey;
}

constexpr uint64_t kParamsPerSample = 16;  // Philox counters reserved for one sample's geometry

}  // namespace

SyntheticDigits::SyntheticDigits(int64_t size, Split split, uint64_t seed, float noise_std)
    : size_(size),
      shape_key_(splitmix64(seed * 4 + (split == Split::Train ? 0 : 1))),
      noise_key_(splitmix64(seed * 4 + (split == Split::Train ? 2 : 3))),
      noise_std_(noise_std) {
  GTL_CHECK(size > 0, "SyntheticDigits: size must be positive, got " << size);
  GTL_CHECK(noise_std >= 0.f, "SyntheticDigits: noise_std must be >= 0, got " << noise_std);
}

int64_t SyntheticDigits::get_into(int64_t index, float* image) const {
  check_index("SyntheticDigits::get_into", index);
  const int64_t label = index % 10;
  const auto i = static_cast<uint64_t>(index);
  // u(k): the k-th uniform in [0, 1) of this sample; r(k, lo, hi): scaled to [lo, hi).
  auto u = [&](uint64_t k) { return philox::uniform(shape_key_, i * kParamsPerSample + k); };
  auto r = [&](uint64_t k, float lo, float hi) { return lo + (hi - lo) * u(k); };

  // 1. Per-sample geometry.
  const float warp_x = r(0, -0.07f, 0.07f), warp_y = r(1, -0.07f, 0.07f);
  const float phase_x = r(2, 0.f, 1.f), phase_y = r(3, 0.f, 1.f);
  const float angle = r(4, -15.f, 15.f) * kPi / 180.f;
  const float shear = r(5, -0.3f, 0.3f);
  const float height = r(6, 15.f, 21.f);          // pixels
  const float width = height * r(7, 0.5f, 0.8f);  // pixels
  const float shift_x = r(8, -3.f, 3.f), shift_y = r(9, -3.f, 3.f);
  const float half_width = r(10, 0.6f, 1.5f);  // stroke half-width in pixels

  // 2. Warp and transform the glyph's vertices into pixel coordinates (pixel centres at +0.5).
  const float c = std::cos(angle), s = std::sin(angle);
  std::vector<std::pair<Point, Point>> segments;
  for (const Stroke& stroke : glyphs()[static_cast<std::size_t>(label)]) {
    Point prev{};
    for (std::size_t k = 0; k < stroke.size(); ++k) {
      Point p = stroke[k];
      // A smooth bend: each coordinate shifts by a sine of the other.
      const float bx = p.x + warp_x * std::sin(2.f * kPi * (p.y + phase_x));
      const float by = p.y + warp_y * std::sin(2.f * kPi * (p.x + phase_y));
      const float x = (bx - 0.5f + shear * (by - 0.5f)) * width, y = (by - 0.5f) * height;
      const Point q{kSide / 2.f + shift_x + c * x - s * y, kSide / 2.f + shift_y + s * x + c * y};
      if (k > 0) segments.push_back({prev, q});
      prev = q;
    }
  }

  // 3. Distance to the nearest stroke, visiting only the pixels each segment can reach.
  const float reach = half_width + 0.5f;
  std::array<float, kSide * kSide> d2;
  d2.fill(reach * reach);
  for (const auto& [a, b] : segments) {
    const int x0 = std::max(0, static_cast<int>(std::floor(std::min(a.x, b.x) - reach)));
    const int x1 = std::min(kSide - 1, static_cast<int>(std::ceil(std::max(a.x, b.x) + reach)));
    const int y0 = std::max(0, static_cast<int>(std::floor(std::min(a.y, b.y) - reach)));
    const int y1 = std::min(kSide - 1, static_cast<int>(std::ceil(std::max(a.y, b.y) + reach)));
    for (int y = y0; y <= y1; ++y) {
      for (int x = x0; x <= x1; ++x) {
        const Point p{x + 0.5f, y + 0.5f};
        d2[y * kSide + x] = std::min(d2[y * kSide + x], dist2_to_segment(p, a, b));
      }
    }
  }

  // 4. Coverage 1 within half_width of a stroke, fading to 0 over one pixel; Gaussian noise;
  //    clamp to [0, 1].
  for (int y = 0; y < kSide; ++y) {
    for (int x = 0; x < kSide; ++x) {
      const float coverage = std::clamp(half_width + 0.5f - std::sqrt(d2[y * kSide + x]), 0.f, 1.f);
      const uint64_t pixel = i * kSide * kSide + static_cast<uint64_t>(y * kSide + x);
      const float noise = noise_std_ > 0.f ? noise_std_ * philox::normal(noise_key_, pixel) : 0.f;
      image[y * kSide + x] = std::clamp(coverage + noise, 0.f, 1.f);
    }
  }
  return label;
}

}  // namespace gtl::data
