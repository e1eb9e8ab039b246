// The runtime guard of the core's references (grader/channel/gtl_reference_guard.h): inside a
// scope that forbids it, a reference ends the process naming itself and the student call; outside
// every scope, or under a prefix the scope does not name, it runs.
#include <gtest/gtest.h>

#include <thread>

#include "gtl_reference_guard.h"

namespace {

int guarded_reference() {
  gtl::grading::reference_guard("core::reference_sum");
  return 42;
}

TEST(ReferenceGuard, OutsideEveryScopeTheReferenceRuns) {
  EXPECT_EQ(guarded_reference(), 42) << "no student call is running: the core may use it";
  {
    const gtl::grading::StudentCall call("sum() (TODO sum)", {"core::other"});
    EXPECT_EQ(guarded_reference(), 42) << "the scope forbids another reference only";
  }
  { const gtl::grading::StudentCall call("sum() (TODO sum)", {"core::reference_sum"}); }
  EXPECT_EQ(guarded_reference(), 42) << "the scope has ended";
}

TEST(ReferenceGuardDeathTest, InsideAScopeThatForbidsItTheReferenceEndsTheProcess) {
  EXPECT_EXIT(
      {
        const gtl::grading::StudentCall call("sum() (TODO sum)", {"core::"});
        guarded_reference();
      },
      testing::ExitedWithCode(86),
      "reference guard: the core's core::reference_sum ran while the program was calling the "
      "student's sum\\(\\) \\(TODO sum\\), which must not use it \\(forbidden: core::\\.\\.\\.\\)");
}

TEST(ReferenceGuardDeathTest, AThreadTheStudentStartedIsStoppedToo) {
  EXPECT_EXIT(
      {
        const gtl::grading::StudentCall call("sum() (TODO sum)", {"core::reference_sum"});
        std::thread t([] { guarded_reference(); });
        t.join();
      },
      testing::ExitedWithCode(86), "the core's core::reference_sum ran");
}

TEST(ReferenceGuardDeathTest, ScopesEndInAnyOrderAndEachRemovesOnlyItself) {
  // Two scopes (two ranks' calls); the outer one ends first: the inner one still forbids.
  EXPECT_EXIT(
      {
        auto* outer = new gtl::grading::StudentCall("a() (TODO a)", {"core::unrelated"});
        const gtl::grading::StudentCall inner("sum() (TODO sum)", {"core::reference_sum"});
        delete outer;
        guarded_reference();
      },
      testing::ExitedWithCode(86), "the student's sum\\(\\) \\(TODO sum\\)");
}

}  // namespace
