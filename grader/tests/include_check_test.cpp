// The include check's inputs: which configure arguments name dependency folders whose headers a
// student file may include, and how a long list of forbidden includes is reported.
#include "include_check.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace gtl::grader {
namespace {

namespace fs = std::filesystem;

bool has(const std::vector<fs::path>& roots, const fs::path& p) {
  return std::find(roots.begin(), roots.end(), p) != roots.end();
}

// A GPU machine without a package manager unpacks the course's Debian packages inside the
// course folder and points CMake at them: those headers are the system's, not the course's.
TEST(IncludeCheck, DependencyFoldersComeFromTheConfigureArguments) {
  const fs::path course = "/srv/course", work = "/srv/course/build/gtl-grade/verify-work";
  const auto roots = dependency_roots(
      {"-DCMAKE_PREFIX_PATH=/srv/course/build/gpu/kit/prefix/usr;build/kit/cmake",
       "-DCMAKE_INCLUDE_PATH:PATH=/srv/kit/include", "-DGTL_CUDNN_INCLUDE=/wheels/cudnn/include",
       "-DCMAKE_CUDA_ARCHITECTURES=90", "-DGTL_PREBUILT_CORE=/srv/course/build/ci", "-G", "Ninja"},
      course, work);
  EXPECT_TRUE(has(roots, "/srv/course/build/gpu/kit/prefix/usr"));
  EXPECT_TRUE(has(roots, "/srv/course/build/kit/cmake")) << "relative to the course";
  EXPECT_TRUE(has(roots, "/srv/kit/include")) << "a typed cache entry (-DNAME:PATH=...)";
  EXPECT_TRUE(has(roots, "/wheels/cudnn/include"));
  EXPECT_FALSE(has(roots, "/srv/course/build/ci")) << "GTL_PREBUILT_CORE names no headers";
  EXPECT_EQ(roots.size(), 4u);
}

// A folder that would let a student file reach the solution, the tests or another student's
// copy is never a dependency folder, whatever the arguments say.
TEST(IncludeCheck, FoldersHoldingTheCourseOrTheGradingWorkAreRefused) {
  const fs::path course = "/srv/course", work = "/srv/course/build/gtl-grade/verify-work";
  for (const char* dir :
       {"/", "/srv", "/srv/course", "/srv/course/labs/05-data-parallel", "/srv/course/solution",
        "/srv/course/starter/01-gpu-basics", "/srv/course/build/gtl-grade",
        "/srv/course/build/gtl-grade/verify-work/impl", "labs"}) {
    EXPECT_TRUE(dependency_roots({std::string("-DCMAKE_PREFIX_PATH=") + dir}, course, work).empty())
        << dir << " must not count as a dependency folder";
  }
}

TEST(IncludeCheck, ALongListIsCutWithACount) {
  std::vector<ForbiddenInclude> found;
  for (int i = 0; i < 40; ++i) found.push_back({"04-memory/a.cpp", "x/h" + std::to_string(i)});
  const std::string text = describe_forbidden(found);
  EXPECT_NE(text.find("04-memory/a.cpp includes x/h0; 04-memory/a.cpp includes x/h1"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("x/h6;"), std::string::npos) << "six entries, then the count: " << text;
  EXPECT_NE(text.find("; and 34 more"), std::string::npos) << text;
  EXPECT_EQ(describe_forbidden({{"a.cpp", "b.h"}}), "a.cpp includes b.h");
}

}  // namespace
}  // namespace gtl::grader
