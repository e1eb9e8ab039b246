// The runtime guard of the core's reference implementations (see gtl_reference_guard.h).
#include "gtl_reference_guard.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace gtl::grading {
namespace {

std::mutex& scopes_mutex() {
  static std::mutex m;
  return m;
}
StudentCall*& scopes() {
  static StudentCall* head = nullptr;
  return head;
}
// How many scopes are alive: the references the core calls all the time (the caching
// allocator's allocate) check this first and take no lock while no student call is running.
std::atomic<int>& live_scopes() {
  static std::atomic<int> n{0};
  return n;
}

}  // namespace

StudentCall::StudentCall(const char* todo, std::initializer_list<const char*> forbidden)
    : todo_(todo) {
  for (const char* f : forbidden) {
    if (count_ == kMaxForbidden) {
      std::fprintf(stderr, "gtl::grading::StudentCall: more than %d forbidden references\n",
                   kMaxForbidden);
      std::abort();
    }
    forbidden_[count_++] = f;
  }
  const std::lock_guard<std::mutex> lock(scopes_mutex());
  next_ = scopes();
  scopes() = this;
  live_scopes().fetch_add(1, std::memory_order_release);
}

StudentCall::~StudentCall() {
  // Removes this scope, by identity: scopes of other threads may end in any order.
  const std::lock_guard<std::mutex> lock(scopes_mutex());
  for (StudentCall** at = &scopes(); *at != nullptr; at = &(*at)->next_) {
    if (*at == this) {
      *at = next_;
      live_scopes().fetch_sub(1, std::memory_order_release);
      return;
    }
  }
}

void reference_guard(const char* reference) {
  if (live_scopes().load(std::memory_order_acquire) == 0) return;
  const std::lock_guard<std::mutex> lock(scopes_mutex());
  for (const StudentCall* s = scopes(); s != nullptr; s = s->next_) {
    for (int i = 0; i < s->count_; ++i) {
      if (std::strncmp(reference, s->forbidden_[i], std::strlen(s->forbidden_[i])) != 0) continue;
      std::fprintf(stderr,
                   "reference guard: the core's %s ran while the program was calling the "
                   "student's %s, which must not use it (forbidden: %s...), by any path: a "
                   "direct call, a function pointer or another function that calls it. Write "
                   "it yourself. The program stops here.\n",
                   reference, s->todo_, s->forbidden_[i]);
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(86);
    }
  }
}

}  // namespace gtl::grading
