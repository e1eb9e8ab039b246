// Which prebuilt core the grader's build of a submission links (build.h, prebuilt_core_dir):
// the one a --cmake-arg names, none when it names an empty one, else the grader's own build's.
#include <gtest/gtest.h>

#include <filesystem>

#include "build.h"

namespace gtl::grader {
namespace {

namespace fs = std::filesystem;

TEST(PrebuiltCoreDir, TheLastArgumentNamingItWins) {
  EXPECT_EQ(prebuilt_core_dir(
                {"-DGTL_PREBUILT_CORE=/a", "-DGTL_CUDA=OFF", "-DGTL_PREBUILT_CORE:PATH=/b/build"}),
            fs::path("/b/build"))
      << "like CMake, the last -D of a variable wins, with or without a type";
  EXPECT_EQ(prebuilt_core_dir({"-DGTL_PREBUILT_CORE=relative/build"}),
            fs::absolute("relative/build"))
      << "a relative folder is the caller's, made absolute before the sandbox sees it";
}

TEST(PrebuiltCoreDir, AnEmptyValueMeansCompileTheCore) {
  EXPECT_EQ(prebuilt_core_dir({"-DGTL_PREBUILT_CORE=/a", "-DGTL_PREBUILT_CORE="}), fs::path())
      << "-DGTL_PREBUILT_CORE= turns the prebuilt core off, whatever came before or the default";
}

TEST(PrebuiltCoreDir, OtherVariablesAreNotIt) {
  const fs::path by_default = prebuilt_core_dir({});
  EXPECT_EQ(prebuilt_core_dir({"-DGTL_PREBUILT_CORE_X=/a", "-DGTL_PREBUILT_COREX=/b"}), by_default)
      << "only GTL_PREBUILT_CORE itself names the core's build";
  EXPECT_TRUE(by_default.empty() || fs::exists(by_default / "gtl-prebuilt-core" / "settings.cmake"))
      << "the default is the grader's own build only when it exported a core, not " << by_default;
}

}  // namespace
}  // namespace gtl::grader
