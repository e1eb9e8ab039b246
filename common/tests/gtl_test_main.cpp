// main() for every GoogleTest binary of the course.
//
// Beyond GoogleTest's own main it prints one line CTest understands: when every test that ran
// was skipped (a GPU test binary on a machine without a GPU), it prints GTL_ALL_SKIPPED with the
// first skip reason, and CTest (SKIP_REGULAR_EXPRESSION) reports the binary as skipped instead of
// passed. A binary whose GPU tests were skipped must never look like a passing one.
#include <gtest/gtest.h>

#include <iostream>
#include <string>

namespace {

class SkipCounter : public testing::EmptyTestEventListener {
 public:
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (r.skipped() && first_reason_.empty()) first_reason_ = r.message();
  }
  void OnTestProgramEnd(const testing::UnitTest& unit) override {
    const int ran = unit.test_to_run_count();
    if (ran > 0 && unit.skipped_test_count() == ran) {
      std::cout << "GTL_ALL_SKIPPED: all " << ran << " tests skipped: " << first_reason_ << "\n";
    }
  }

 private:
  std::string first_reason_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  testing::UnitTest::GetInstance()->listeners().Append(new SkipCounter);
  return RUN_ALL_TESTS();
}
