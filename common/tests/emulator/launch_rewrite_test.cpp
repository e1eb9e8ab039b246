// The emulator's source rewrite (common/tools/launch_rewrite.h): which `<<<...>>>` are launches,
// what the kernel name is, what stays untouched, and the extern __shared__ and #line parts of an
// emulated copy. Every emulated lab test compiles copies made by this rewrite.
#include "launch_rewrite.h"

#include <gtest/gtest.h>

#include <string>

namespace gtl::emulator {
namespace {

void expect_launches(const std::string& source, const std::string& expected,
                     const std::string& concept_name) {
  const std::string got = rewrite_launches(source);
  EXPECT_EQ(got, expected) << concept_name << "\n  source:   " << source
                           << "\n  expected: " << expected << "\n  got:      " << got;
}

TEST(LaunchRewrite, PlainLaunchBecomesALauncherCall) {
  expect_launches("k<<<blocks, 256>>>(x, n);", "emu::Launcher(k, blocks, 256)(x, n);",
                  "a launch is the kernel name, the configuration and the arguments");
}

TEST(LaunchRewrite, ConfigurationMayContainGreaterThan) {
  expect_launches("k<<<static_cast<int>(n / 2), 256>>>(x);",
                  "emu::Launcher(k, static_cast<int>(n / 2), 256)(x);",
                  "the configuration runs to the first '>>>', not the first '>'");
  expect_launches("k<<<n > 0 ? n : 1, 32, 0, s>>>(x);",
                  "emu::Launcher(k, n > 0 ? n : 1, 32, 0, s)(x);",
                  "a comparison inside the configuration is copied as it is");
}

TEST(LaunchRewrite, TemplateKernelKeepsItsArguments) {
  expect_launches("scale<float, 3><<<1, 32>>>(x);", "emu::Launcher(scale<float, 3>, 1, 32)(x);",
                  "a template kernel's argument list is part of its name");
}

TEST(LaunchRewrite, NamespacedKernelWithSpaces) {
  expect_launches("  emutest::detail::axpy<double> <<<g, b>>> (y, x);",
                  "  emu::Launcher(emutest::detail::axpy<double>, g, b)(y, x);",
                  "a qualified name is the whole a::b::c chain; spaces around <<< and ( go");
}

TEST(LaunchRewrite, LaunchOverSeveralLines) {
  expect_launches("k <<< dim3(2, 2),\n    dim3(16, 16) >>>\n    (x);",
                  "emu::Launcher(k,  dim3(2, 2),\n    dim3(16, 16) )(x);",
                  "a configuration and arguments may span lines");
  expect_launches("k<<<1, 1>>>(\n  x);", "emu::Launcher(k, 1, 1)(\n  x);",
                  "arguments on the next line stay there");
}

TEST(LaunchRewrite, ArgumentsThatStartWithAParenthesisKeepIt) {
  expect_launches("k<<<1, 1>>>((float*)p, n);", "emu::Launcher(k, 1, 1)((float*)p, n);",
                  "only the '(' that opens the arguments is consumed, not a cast's");
}

TEST(LaunchRewrite, AnyIdentifierIsAKernelName) {
  expect_launches("N<<<1, 1>>>(x);", "emu::Launcher(N, 1, 1)(x);",
                  "a kernel may be called N, OFF or NO (words CMake took for false)");
}

TEST(LaunchRewrite, WhatIsNotALaunchStaysAsItIs) {
  expect_launches("// blocks <<< and >>> in a comment", "// blocks <<< and >>> in a comment",
                  "no '(' after '>>>': not a launch");
  expect_launches("<<<1, 1>>>(x)", "<<<1, 1>>>(x)", "no kernel name before '<<<': not a launch");
  expect_launches("x = a <<< 1;", "x = a <<< 1;", "a '<<<' without '>>>' is left alone");
  expect_launches("v<T, U<V>><<<1, 1>>>(x);", "v<T, U<V>><<<1, 1>>>(x);",
                  "nested template arguments are not taken for a kernel name");
}

TEST(LaunchRewrite, EveryLaunchOfAFileIsRewritten) {
  expect_launches("a<<<1, 2>>>(x);\n// a<<<b>>>\nb<<<3, 4>>>(y);",
                  "emu::Launcher(a, 1, 2)(x);\n// a<<<b>>>\nemu::Launcher(b, 3, 4)(y);",
                  "the scan goes on after each launch and each non-launch");
}

TEST(ExternSharedRewrite, ArraysBecomePointersToDynamicSharedMemory) {
  const std::string source =
      "extern __shared__ float smem[];\n"
      "  extern   __shared__   unsigned char raw [ ] ;\n"
      "extern __shared__ T buf[];\n"
      "extern __shared__ gtl::half h[];\n"
      "extern __shared__ __align__(32) __half tiles[];\n"
      "__shared__ float tile[32][33];\n";
  const std::string expected =
      "float* const smem = static_cast<float*>(emu::dynamic_shared());\n"
      "  unsigned char* const raw = static_cast<unsigned char*>(emu::dynamic_shared());\n"
      "T* const buf = static_cast<T*>(emu::dynamic_shared());\n"
      "gtl::half* const h = static_cast<gtl::half*>(emu::dynamic_shared());\n"
      "__half* const tiles = static_cast<__half*>(emu::dynamic_shared());\n"
      "__shared__ float tile[32][33];\n";
  const std::string got = rewrite_extern_shared(source);
  EXPECT_EQ(got, expected)
      << "each extern __shared__ array (any element type, one-letter "
         "template types included, an __align__ dropped) points into the launch's dynamic shared "
         "memory; a sized __shared__ array is left alone\n  got:\n"
      << got;
}

TEST(EmulatedCopy, StartsWithALineDirectiveAndKeepsTheFilesOwn) {
  const std::string source = "#line 42 \"other.cu\"\nk<<<1, 1>>>(x);\n";
  const std::string expected =
      "#line 1 \"/labs/02/reduce.cu\"\n#line 42 \"other.cu\"\nemu::Launcher(k, 1, 1)(x);\n";
  const std::string got = emulated_copy(source, "/labs/02/reduce.cu");
  EXPECT_EQ(got, expected) << "an emulated copy names the original file from line 1 (so errors "
                              "point at the student's file), keeps #line directives and "
                              "rewrites launches after them\n  got:\n"
                           << got;
}

}  // namespace
}  // namespace gtl::emulator
