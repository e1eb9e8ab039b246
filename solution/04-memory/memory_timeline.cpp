// Lab 04, TODO 3: a memory timeline, every allocation and free with what its bytes are for.
#include <algorithm>
#include <sstream>

#include "memory_lab.h"

namespace lab04 {

// SOLUTION(lab04) step 3: what the timeline keeps besides its events.
struct MemoryTimeline::State {
  std::unordered_map<const void*, std::pair<int64_t, Category>> live;  // bytes, category
  std::array<int64_t, kNumCategories> live_by_category{};
  std::array<int64_t, kNumCategories> peak_by_category{};
};
// END SOLUTION(lab04)

MemoryTimeline::MemoryTimeline() : state_(std::make_unique<State>()) {}
MemoryTimeline::~MemoryTimeline() = default;
MemoryTimeline::MemoryTimeline(MemoryTimeline&&) noexcept = default;
MemoryTimeline& MemoryTimeline::operator=(MemoryTimeline&&) noexcept = default;

// SOLUTION(lab04) step 3: record, replay, export.
void MemoryTimeline::on_alloc(const void* ptr, int64_t bytes, Category category) {
  if (ptr == nullptr || bytes <= 0) return;
  const auto c = static_cast<std::size_t>(category);
  state_->live[ptr] = {bytes, category};
  state_->live_by_category[c] += bytes;
  state_->peak_by_category[c] = std::max(state_->peak_by_category[c], state_->live_by_category[c]);
  events_.push_back({category, bytes, live_bytes()});
}
void MemoryTimeline::on_free(const void* ptr) {
  const auto it = state_->live.find(ptr);
  if (it == state_->live.end())
    throw gtl::Error("memory timeline: free of a pointer that is not live (double free?)");
  const auto [bytes, category] = it->second;
  state_->live.erase(it);
  state_->live_by_category[static_cast<std::size_t>(category)] -= bytes;
  events_.push_back({category, -bytes, live_bytes()});
}
int64_t MemoryTimeline::live_bytes() const {
  int64_t total = 0;
  for (int64_t b : state_->live_by_category) total += b;
  return total;
}
int64_t MemoryTimeline::live_bytes(Category c) const {
  return state_->live_by_category[static_cast<std::size_t>(c)];
}
int64_t MemoryTimeline::peak_event() const {
  int64_t best = -1;
  for (std::size_t i = 0; i < events_.size(); ++i)
    if (best < 0 || events_[i].live > events_[static_cast<std::size_t>(best)].live)
      best = static_cast<int64_t>(i);
  return best;
}
int64_t MemoryTimeline::peak_bytes() const {
  const int64_t i = peak_event();
  return i < 0 ? 0 : events_[static_cast<std::size_t>(i)].live;
}
int64_t MemoryTimeline::bytes_at_peak(Category c) const {
  int64_t live = 0;
  for (int64_t i = 0; i <= peak_event(); ++i)
    if (events_[static_cast<std::size_t>(i)].category == c)
      live += events_[static_cast<std::size_t>(i)].bytes;
  return live;
}
int64_t MemoryTimeline::peak_bytes(Category c) const {
  return state_->peak_by_category[static_cast<std::size_t>(c)];
}
nlohmann::json MemoryTimeline::to_json() const {
  nlohmann::json j;
  j["events"] = nlohmann::json::array();
  for (const TimelineEvent& e : events_)
    j["events"].push_back(
        {{"category", category_name(e.category)}, {"bytes", e.bytes}, {"live", e.live}});
  j["peak"] = {{"bytes", peak_bytes()}, {"event", peak_event()}};
  for (int c = 0; c < kNumCategories; ++c)
    j["peak"]["by_category"][category_name(Category(c))] = bytes_at_peak(Category(c));
  return j;
}
MemoryTimeline MemoryTimeline::from_json(const nlohmann::json& j) {
  MemoryTimeline t;  // no pointers: a loaded timeline is for reading
  for (const nlohmann::json& e : j.at("events")) {
    int c = 0;
    while (c < kNumCategories && e.at("category").get<std::string>() != category_name(Category(c)))
      ++c;
    if (c == kNumCategories) throw gtl::Error("memory timeline: unknown category in the JSON");
    const auto k = static_cast<std::size_t>(c);
    t.events_.push_back({Category(c), e.at("bytes").get<int64_t>(), e.at("live").get<int64_t>()});
    t.state_->live_by_category[k] += t.events_.back().bytes;
    t.state_->peak_by_category[k] =
        std::max(t.state_->peak_by_category[k], t.state_->live_by_category[k]);
  }
  return t;
}
std::string MemoryTimeline::summary() const {
  std::ostringstream out;
  out << "peak " << peak_bytes() << " bytes (" << gtl::format_bytes(peak_bytes()) << ") at event "
      << peak_event() << " of " << events_.size() << "\n";
  for (int c = 0; c < kNumCategories; ++c)
    out << "  " << category_name(Category(c)) << ": " << bytes_at_peak(Category(c))
        << " bytes at the peak, its own peak " << peak_bytes(Category(c)) << "\n";
  return out.str();
}
// END SOLUTION(lab04)

}  // namespace lab04
