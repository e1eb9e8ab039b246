// Lab 04, TODO 3: a memory timeline, every allocation and free with what its bytes are for.
#include <algorithm>
#include <sstream>

#include "memory_lab.h"

namespace lab04 {

// TODO(lab04) step 3: record, replay, export.
// on_alloc: remember ptr's bytes and category (live_), add the bytes to its category
// (live_by_category_, and its own peak in peak_by_category_), append an event whose `live` is
// the total AFTER it. Ignore nullptr / 0 bytes. on_free: look the pointer up (not live: throw
// gtl::Error, it is a double free or a stranger), take ITS bytes back from ITS category, append
// the event with -bytes. peak_event: the FIRST event with the highest `live`; bytes_at_peak(c):
// what c held just after it. to_json / from_json: the format in memory_lab.h (from_json has no
// pointers: rebuild the events and the per-category totals from the bytes). summary: the peak
// and, per category (category_name), its bytes at the peak and its own peak. About 45 lines.
void MemoryTimeline::on_alloc(const void* ptr, int64_t bytes, Category category) {
  (void)ptr;
  (void)bytes;
  (void)category;
  throw gtl::Error("TODO(lab04) step 3: MemoryTimeline::on_alloc is not implemented");
}
void MemoryTimeline::on_free(const void* ptr) {
  (void)ptr;
  throw gtl::Error("TODO(lab04) step 3: MemoryTimeline::on_free is not implemented");
}
int64_t MemoryTimeline::live_bytes() const {
  return -1;
}
int64_t MemoryTimeline::live_bytes(Category c) const {
  return -1 - static_cast<int>(c);
}
int64_t MemoryTimeline::peak_event() const {
  return -1;
}
int64_t MemoryTimeline::peak_bytes() const {
  return -1;
}
int64_t MemoryTimeline::bytes_at_peak(Category c) const {
  return -1 - static_cast<int>(c);
}
int64_t MemoryTimeline::peak_bytes(Category c) const {
  return -1 - static_cast<int>(c);
}
nlohmann::json MemoryTimeline::to_json() const {
  return nlohmann::json::object();
}
MemoryTimeline MemoryTimeline::from_json(const nlohmann::json& j) {
  (void)j;
  return MemoryTimeline();
}
std::string MemoryTimeline::summary() const {
  return "TODO(lab04) step 3";
}
// END TODO(lab04)

}  // namespace lab04
