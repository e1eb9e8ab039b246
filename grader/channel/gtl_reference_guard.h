// The runtime guard of the core's reference implementations (docs/grader.md, "Trust model").
//
// The forbidden-symbol scan reads names in a student's object; code can still reach a reference
// the rubric forbids by address or through another function. So, while a graded program calls a
// student TODO inside a `StudentCall` scope, every reference implementation that scope forbids
// refuses to run, whatever path reached it: `reference_guard("fixture::reference_sum")`, the first
// line of that reference in the course's own code, prints which reference ran in which student
// call and ends the process (`_exit`: no handler, `atexit` or `catch` of the student's runs
// after it). Outside every scope (the test computing its expected values, the core using its own
// functions) the guard does nothing.
//
// The scopes are process-wide, not per thread: a reference run by a thread the student's code
// started is stopped too. Nothing here allocates (a benchmark counts the bytes its loop allocates).
#pragma once

#include <initializer_list>

namespace gtl::grading {

// Entered around one call into student code: `todo` names the TODO and the student's function
// ("sum() (TODO sum)"), `forbidden` the rubric's forbidden prefixes for it (string literals,
// at most kMaxForbidden). A reference whose name starts with one of them may not run until the
// scope ends.
class StudentCall {
 public:
  static constexpr int kMaxForbidden = 16;
  StudentCall(const char* todo, std::initializer_list<const char*> forbidden);
  ~StudentCall();
  StudentCall(const StudentCall&) = delete;
  StudentCall& operator=(const StudentCall&) = delete;

 private:
  friend void reference_guard(const char* reference);
  const char* todo_;
  const char* forbidden_[kMaxForbidden];
  int count_ = 0;
  StudentCall* next_ = nullptr;  // the scopes alive in the process, a list under one mutex
};

// The first line of a reference implementation the rubrics forbid: ends the process with a
// message naming `reference` and the student call when a live scope forbids it.
void reference_guard(const char* reference);

}  // namespace gtl::grading
