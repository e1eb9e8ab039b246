// The one-line reason a student reads first: the test's lesson before GoogleTest's comparison,
// an exception's what(), and a crash summarised at the student's own file and line.
#include <gtest/gtest.h>

#include "gtest_runner.h"

namespace gtl::grader {
namespace {

TEST(FailureGist, TeachingMessageComesBeforeGtestComparison) {
  const std::string message =
      "/work/labs/02-cuda-kernels/tests/reduce_test.cpp:88\n"
      "Expected equality of these values:\n"
      "  got\n"
      "    Which is: 12\n"
      "  want\n"
      "    Which is: 16\n"
      "TODO 1a: each block must add all of its elements; the last 4 were left out\n";
  EXPECT_EQ(failure_gist(message),
            "TODO 1a: each block must add all of its elements; the last 4 were left out "
            "(Expected equality of these values: got Which is: 12 want Which is: 16)")
      << "the lesson (the test's << message) must lead, GoogleTest's comparison follow";
}

TEST(FailureGist, ComparisonAloneWhenTheTestGaveNoMessage) {
  EXPECT_EQ(failure_gist("t.cpp:3\nExpected: (err) < (1e-3), actual: 0.5 vs 0.001\n"),
            "Expected: (err) < (1e-3), actual: 0.5 vs 0.001")
      << "without a message of the test's own, the comparison is all there is to show";
  EXPECT_EQ(failure_gist("t.cpp:3\nValue of: ok\n  Actual: false\nExpected: true\n"),
            "Value of: ok Actual: false Expected: true");
}

TEST(FailureGist, OnlyTheFirstFailureCounts) {
  const std::string message =
      "a.cpp:10\nThe difference between x and y is 2, which exceeds 0.1, where\n"
      "x evaluates to 3,\ny evaluates to 1, and\n0.1 evaluates to 0.1.\nscale the gradient\n\n"
      "a.cpp:11\nFailed\nsecond failure\n";
  EXPECT_EQ(failure_gist(message).rfind("scale the gradient (The difference between", 0), 0u)
      << "the first failure's lesson, not the second's: " << failure_gist(message);
}

TEST(FailureGist, ConsoleStreamMessageSkipsWhatTheTestPrintedBefore) {
  EXPECT_EQ(failure_gist("n = 1024\nr.cu:9: Failure\nExpected: (err) < (tol), actual: 1 vs 0.1\n"
                         "scale by 1/n\n"),
            "scale by 1/n (Expected: (err) < (tol), actual: 1 vs 0.1)")
      << "the console's 'file:line: Failure' header starts the failure; earlier output is not it";
}

TEST(FailureGist, RunnersOwnWordsAndPlainTextStayWhole) {
  EXPECT_EQ(failure_gist("the test program ended (exit code 0) in the middle of this test; its "
                         "last output:\n  a.cpp:3\nsomething"),
            "the test program ended (exit code 0) in the middle of this test; its last output: "
            "a.cpp:3 something")
      << "how a test died is the lesson as the runner wrote it";
  EXPECT_EQ(failure_gist("Expected 1, got 2"), "Expected 1, got 2")
      << "a message with no GoogleTest header is shown as it is";
}

TEST(FailureGist, FailMacroShowsItsMessageOnly) {
  EXPECT_EQ(failure_gist("t.cpp:7\nFailed\nthe loss never decreased\n"), "the loss never decreased")
      << "FAIL()'s own 'Failed' line teaches nothing";
}

TEST(FailureGist, ExceptionShowsItsWhatText) {
  EXPECT_EQ(
      failure_gist("unknown file\nC++ exception with description \"Tensor::view: shape "
                   "[3, 5] needs 15 elements, the tensor has 12\" thrown in the test body.\n"),
      "Tensor::view: shape [3, 5] needs 15 elements, the tensor has 12")
      << "an exception's what() is the lesson, not 'unknown file C++ exception'";
}

const char* kAsanReport =
    "the test program ended (killed by SIGABRT) in the middle of this test; its last output:\n"
    "=================================================================\n"
    "==4242==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000050 at pc "
    "0x55d5 bp 0x7ffc sp 0x7ffc\n"
    "READ of size 4 at 0x602000000050 thread T0\n"
    "    #0 0x55d5a1 in emu::Block::run() /usr/include/gtl/emulator/cuda_emulator.h:530:7\n"
    "    #1 0x55d5a2 in reduce_kernel(float const*, float*, int) "
    "/home/s/course/build/gtl-grade/work/impl/02-cuda-kernels/reduce.cu:47:12\n"
    "    #2 0x55d5a3 in main /home/s/course/labs/02-cuda-kernels/tests/reduce_test.cpp:30:3\n";

TEST(CrashSummary, AsanNamesTheStudentsFileAndLineInWords) {
  EXPECT_EQ(crash_summary(kAsanReport),
            "02-cuda-kernels/reduce.cu:47: heap-buffer-overflow (read past the end of an array)")
      << "the student's file and line (not the grader's impl/ copy, not an emulator frame), the "
         "kind and what it means";
  EXPECT_EQ(failure_gist(kAsanReport), crash_summary(kAsanReport))
      << "a crash's one-line reason is its summary";
}

TEST(CrashSummary, EmulatedCopyMapsBackToTheKernelFile) {
  const std::string report =
      "==7==ERROR: AddressSanitizer: stack-buffer-overflow on address 0x1\n"
      "WRITE of size 8 at 0x1 thread T0\n"
      "    #0 0x1 in k /b/labs/lab02_emulated_test_kernels/softmax.cu.cpp:12:3\n";
  EXPECT_EQ(crash_summary(report),
            "softmax.cu:12: stack-buffer-overflow (wrote past the end of a local array)")
      << "the emulated copy's path is the build's, never the student's";
}

TEST(CrashSummary, EmulatorFailureWithoutItsInternals) {
  const std::string report =
      "CUDA emulator: __syncthreads() reached by only some threads of a block\n"
      "  at block (2, 0, 0), thread (31, 0, 0); on a GPU this hangs, fails the launch or gives "
      "undefined results\n";
  EXPECT_EQ(crash_summary(report),
            "__syncthreads() reached by only some threads of a block at block (2, 0, 0), thread "
            "(31, 0, 0)");
}

TEST(CrashSummary, UndefinedBehaviourAtTheStudentsLine) {
  EXPECT_EQ(crash_summary("/w/impl/01-gpu-basics/saxpy.cpp:9:14: runtime error: signed integer "
                          "overflow: 2147483647 + 1 cannot be represented in type 'int'\n"),
            "01-gpu-basics/saxpy.cpp:9: signed integer overflow: 2147483647 + 1 cannot be "
            "represented in type 'int'");
}

TEST(CrashSummary, NothingForAnOrdinaryFailure) {
  EXPECT_EQ(crash_summary("t.cpp:3\nExpected equality of these values:\n  1\n  2\n"), "")
      << "only sanitizer, emulator and UBSan reports are crashes";
}

TEST(StudentPath, PrivateCopiesMapBackAndOthersAreNotStudentFiles) {
  EXPECT_EQ(student_path("/x/work/impl/03-mixed-precision/loss_scaler.cpp"),
            "03-mixed-precision/loss_scaler.cpp");
  EXPECT_EQ(student_path("/x/starter/02-cuda-kernels/reduce.cu"), "02-cuda-kernels/reduce.cu");
  EXPECT_EQ(student_path("/b/t_kernels/reduce.cuh.cpp"), "reduce.cuh");
  EXPECT_EQ(student_path("/usr/include/c++/12/bits/stl_vector.h"), "");
}

}  // namespace
}  // namespace gtl::grader
