// The twin check: starter and solution agree outside their TODO regions, with the same regions;
// a submission's open TODOs are the regions still holding the starter's text.
#include "twin_check.h"

#include <gtest/gtest.h>

#include <fstream>

#include "errors.h"
#include "files.h"
#include "rubric_table.h"
#include "todo_fingerprints.h"

namespace gtl::grader {
namespace {

namespace fs = std::filesystem;

const std::string kStarter =
    "// Lab 01: sums.\n"
    "#include \"sum.h\"\n"
    "\n"
    "int sum(const int* x, int n) {\n"
    "  // TODO(lab01) step 1a: add up the n elements. About 3 lines.\n"
    "  throw Error(\"TODO(lab01) step 1a: sum is not implemented\");\n"
    "  // END TODO(lab01)\n"
    "}\n"
    "\n"
    "int twice(int v) {\n"
    "  // TODO(lab01) step 1b: 2 v. About 1 line.\n"
    "  return 0;\n"
    "  // END TODO(lab01)\n"
    "}\n";

// The solution marks the same regions SOLUTION(lab01): it holds no TODO markers.
const std::string kSolution =
    "// Lab 01: sums.\n"
    "#include \"sum.h\"\n"
    "\n"
    "int sum(const int* x, int n) {\n"
    "  // SOLUTION(lab01) step 1a\n"
    "  int total = 0;\n"
    "  for (int i = 0; i < n; ++i) total += x[i];\n"
    "  return total;\n"
    "  // END SOLUTION(lab01)\n"
    "}\n"
    "\n"
    "int twice(int v) {\n"
    "  // SOLUTION(lab01) step 1b\n"
    "  return 2 * v;\n"
    "  // END SOLUTION(lab01)\n"
    "}\n";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "the test's own text lacks '" << from << "'";
  return text.replace(at, from.size(), to);
}

std::string compare(const std::string& starter, const std::string& solution) {
  return compare_twins(starter, solution, "01", "starter/01-sum/sum.cpp",
                       "solution/01-sum/sum.cpp");
}

TEST(TwinCheck, RegionsAreFoundBetweenTheirMarkerLinesWithTheirIds) {
  const RegionScan scan = scan_todo_regions(kStarter, "01");
  EXPECT_EQ(scan.error, "");
  ASSERT_EQ(scan.regions.size(), 2u) << "two TODO(lab01) step ... END TODO(lab01) regions";
  EXPECT_EQ(scan.regions[0].id, "1a");
  EXPECT_EQ(scan.regions[0].begin_line, 5);
  EXPECT_EQ(scan.regions[0].end_line, 7)
      << "the throw line quoting 'TODO(lab01) step 1a' is code, not a marker: only `//` comment "
         "lines are markers";
  EXPECT_EQ(scan.regions[1].id, "1b");
  EXPECT_EQ(scan.regions[1].begin_line, 11);
  EXPECT_EQ(scan.regions[1].end_line, 13);
}

TEST(TwinCheck, IdenticalTwinsOutsideTheRegionsAgree) {
  EXPECT_EQ(compare(kStarter, kSolution), "")
      << "the bodies of the regions may differ freely, even in length";
  EXPECT_EQ(compare(kStarter, kStarter), "");
}

TEST(TwinCheck, ADifferenceOutsideARegionNamesTheFirstDifferingLineOfEachSide) {
  const std::string solution =
      replaced(kSolution, "#include \"sum.h\"\n", "#include \"sum.h\"\n#include <cstdio>\n");
  EXPECT_EQ(compare(kStarter, solution),
            "the twins differ outside the TODO regions: starter/01-sum/sum.cpp:3: `` vs "
            "solution/01-sum/sum.cpp:3: `#include <cstdio>`");
  // After the last region: the solution's line 16 has no twin, the starter ends at line 14.
  EXPECT_EQ(compare(kStarter, kSolution + "// extra\n"),
            "the twins differ outside the TODO regions: starter/01-sum/sum.cpp:15: (end of file) "
            "vs solution/01-sum/sum.cpp:17: `// extra`");
  // A comment edited between the regions.
  EXPECT_EQ(compare(replaced(kStarter, "int twice", "long twice"), kSolution),
            "the twins differ outside the TODO regions: starter/01-sum/sum.cpp:10: "
            "`long twice(int v) {` vs solution/01-sum/sum.cpp:12: `int twice(int v) {`");
}

TEST(TwinCheck, AMissingEndMarkerIsReportedWithItsStep) {
  const std::string starter =
      replaced(kStarter, "  // END TODO(lab01)\n}\n\nint twice", "}\n\nint twice");
  EXPECT_EQ(scan_todo_regions(starter, "01").error,
            "line 5: step 1a has no END TODO(lab01) before the next step at line 10");
  EXPECT_EQ(compare(starter, kSolution),
            "starter/01-sum/sum.cpp: line 5: step 1a has no END TODO(lab01) before the next step "
            "at line 10");
  const std::string last =
      replaced(kSolution, "  return 2 * v;\n  // END SOLUTION(lab01)\n", "  return 2 * v;\n");
  EXPECT_EQ(compare(kStarter, last),
            "solution/01-sum/sum.cpp: line 13: step 1b has no END TODO(lab01) before the end of "
            "the file");
  EXPECT_EQ(scan_todo_regions("// END TODO(lab01)\n", "01").error,
            "line 1: END TODO(lab01) without a TODO(lab01) step <id> line before it");
}

TEST(TwinCheck, RegionIdsThatDifferAreReportedByPosition) {
  const std::string solution =
      replaced(kSolution, "  // SOLUTION(lab01) step 1b\n", "  // SOLUTION(lab01) step 1c\n");
  EXPECT_EQ(compare(kStarter, solution),
            "the twins' TODO regions differ: region 2 is step 1b at starter/01-sum/sum.cpp:11 but "
            "step 1c at solution/01-sum/sum.cpp:13");
  const std::string fewer = replaced(
      kSolution, "  // SOLUTION(lab01) step 1b\n  return 2 * v;\n  // END SOLUTION(lab01)\n",
      "  return 2 * v;\n");
  EXPECT_EQ(compare(kStarter, fewer),
            "the twins' TODO regions differ: starter/01-sum/sum.cpp has 2, "
            "solution/01-sum/sum.cpp 1; step 1b at starter/01-sum/sum.cpp:11 has no twin");
}

// A course folder with one lab whose twins are written from the texts above.
class TwinCourse : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("gtl_twin_check_" +
             std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    lab_.lab = "01";
    lab_.dir = "01-sum";
    lab_.student_files = {"sum.cpp"};
    Todo todo;
    todo.id = "1";
    todo.file = "sum.cpp";
    lab_.todos = {todo};
    write("starter/01-sum/sum.cpp", kStarter);
    write("solution/01-sum/sum.cpp", kSolution);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }

  fs::path root_;
  Rubric lab_;
};

TEST_F(TwinCourse, TwinsThatAgreeHaveNoProblem) {
  EXPECT_EQ(twin_problems(root_, lab_), std::vector<std::string>{});
}

TEST_F(TwinCourse, AnExtraFileInOneTwinIsAProblem) {
  write("solution/01-sum/helper.h", "// only in the solution\n");
  EXPECT_EQ(twin_problems(root_, lab_),
            std::vector<std::string>{
                "solution/01-sum/helper.h is not a student file of the rubric (student_files): a "
                "twin holds only the files a submission may change"});
}

TEST_F(TwinCourse, AMissingTwinAndATodoWithoutItsRegionAreProblems) {
  fs::remove(root_ / "solution/01-sum/sum.cpp");
  lab_.todos[0].id = "2";
  EXPECT_EQ(twin_problems(root_, lab_),
            (std::vector<std::string>{
                "solution/01-sum/sum.cpp is listed in the rubric but missing",
                "lab 01 TODO '2': starter/01-sum/sum.cpp has no TODO region TODO(lab01) step 2 "
                "... END TODO(lab01)"}))
      << "rubric TODO '1' names regions 1a and 1b; '2' names none";
}

// Without recorded fingerprints (no labs/01-sum/todo_fingerprints.txt), the open TODOs are the
// regions still holding the text of the course's starter/.
TEST_F(TwinCourse, OpenTodosAreTheRegionsStillHoldingTheStartersText) {
  EXPECT_EQ(open_todo_regions(root_, root_ / "starter", lab_),
            (std::vector<std::string>{
                "01-sum/sum.cpp:5: // TODO(lab01) step 1a: add up the n elements. About 3 lines.",
                "01-sum/sum.cpp:11: // TODO(lab01) step 1b: 2 v. About 1 line."}));
  EXPECT_EQ(open_todo_regions(root_, root_ / "solution", lab_), std::vector<std::string>{})
      << "a finished submission keeps its marker lines and has no open TODO";
  write("half/01-sum/sum.cpp", replaced(kStarter, "  return 0;\n", "  return v + v;\n"));
  EXPECT_EQ(open_todo_regions(root_, root_ / "half", lab_),
            std::vector<std::string>{
                "01-sum/sum.cpp:5: // TODO(lab01) step 1a: add up the n elements. About 3 lines."});
}

// The course guide grades the student's own starter/ in place: the submission IS the course's
// starter/, so only the recorded fingerprints of the pristine regions can tell what is open.
TEST_F(TwinCourse, ASubmissionThatIsTheStarterFolderListsOnlyItsUntouchedRegions) {
  write("labs/01-sum/todo_fingerprints.txt", todo_fingerprints_text(root_, lab_));
  write("starter/01-sum/sum.cpp", replaced(kStarter, "  return 0;\n", "  return v + v;\n"));
  EXPECT_EQ(open_todo_regions(root_, root_ / "starter", lab_),
            std::vector<std::string>{
                "01-sum/sum.cpp:5: // TODO(lab01) step 1a: add up the n elements. About 3 lines."})
      << "step 1b is solved in the starter folder itself: it must not be listed as open "
         "(the open-TODO list compared the submission with itself, not with the fingerprints)";
  write("starter/01-sum/sum.cpp", kSolution);
  EXPECT_EQ(open_todo_regions(root_, root_ / "starter", lab_), std::vector<std::string>{})
      << "a fully solved starter folder has no open TODO";
}

TEST_F(TwinCourse, ARegionWithOnlyItsMarkerLineEditedIsNoLongerOpen) {
  write("labs/01-sum/todo_fingerprints.txt", todo_fingerprints_text(root_, lab_));
  write("starter/01-sum/sum.cpp",
        replaced(kStarter, "About 1 line.\n", "About 1 line. Done: see below.\n"));
  EXPECT_EQ(open_todo_regions(root_, root_ / "starter", lab_),
            std::vector<std::string>{
                "01-sum/sum.cpp:5: // TODO(lab01) step 1a: add up the n elements. About 3 lines."})
      << "the fingerprint covers the marker lines too: any edit starts a region";
}

TEST_F(TwinCourse, RemovedMarkersFallBackToEveryTodoLineEvenWithFingerprints) {
  write("labs/01-sum/todo_fingerprints.txt", todo_fingerprints_text(root_, lab_));
  write("starter/01-sum/sum.cpp",
        replaced(kStarter, "  // END TODO(lab01)\n}\n\nint twice", "}\n\nint twice"));
  EXPECT_EQ(open_todo_regions(root_, root_ / "starter", lab_),
            (std::vector<std::string>{
                "01-sum/sum.cpp:5: // TODO(lab01) step 1a: add up the n elements. About 3 lines.",
                "01-sum/sum.cpp:6: throw Error(\"TODO(lab01) step 1a: sum is not implemented\");",
                "01-sum/sum.cpp:10: // TODO(lab01) step 1b: 2 v. About 1 line.",
                "01-sum/sum.cpp:12: // END TODO(lab01)"}))
      << "a file whose markers no longer balance lists every TODO-marked line";
}

TEST_F(TwinCourse, FingerprintsAreOneLinePerRegionWithTheFnv1aOfItsLines) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull) << "FNV-1a's 64-bit offset basis";
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull) << "FNV-1a's published 64-bit value of \"a\"";
  const std::string region_1b =
      "  // TODO(lab01) step 1b: 2 v. About 1 line.\n  return 0;\n  // END TODO(lab01)\n";
  const auto prints = region_fingerprints(kStarter, "01", "sum.cpp");
  ASSERT_EQ(prints.size(), 2u);
  EXPECT_EQ(prints[1].id, "1b");
  EXPECT_EQ(prints[1].hash, fnv1a64(region_1b))
      << "a region's fingerprint is the FNV-1a of its lines, markers included";
  write("labs/01-sum/todo_fingerprints.txt", todo_fingerprints_text(root_, lab_));
  const auto recorded = recorded_fingerprints(root_, lab_);
  ASSERT_TRUE(recorded.has_value());
  ASSERT_EQ(recorded->size(), 2u);
  EXPECT_EQ((*recorded)[0].file + " " + (*recorded)[0].id, "sum.cpp 1a");
  EXPECT_EQ((*recorded)[1].hash, prints[1].hash) << "the file reads back what was written";
}

TEST_F(TwinCourse, MissingOrStaleFingerprintsAreAProblemNamingTheLabAndTheCommand) {
  const std::string command = "gtl-grade rubric-table --lab 01 --write --course " + root_.string();
  EXPECT_EQ(todo_fingerprints_problem(root_, lab_),
            "lab 01: labs/01-sum/todo_fingerprints.txt is missing: the grader cannot tell a "
            "submission's open TODOs; generate it with: " +
                command);
  write("labs/01-sum/todo_fingerprints.txt", todo_fingerprints_text(root_, lab_));
  EXPECT_EQ(todo_fingerprints_problem(root_, lab_), "") << "freshly written fingerprints";
  write("starter/01-sum/sum.cpp", replaced(kStarter, "About 3 lines.", "About 4 lines."));
  EXPECT_EQ(todo_fingerprints_problem(root_, lab_),
            "lab 01: labs/01-sum/todo_fingerprints.txt is stale: it is not the fingerprints of "
            "starter/01-sum's TODO regions; regenerate it with: " +
                command);
}

// `gtl-grade rubric-table --check` on a copy of the fixture course whose starter changed.
TEST(TodoFingerprints, StaleFingerprintsFailTheCheckCommandUntilRewritten) {
  const fs::path course = fs::temp_directory_path() / "gtl_twin_check_stale_course";
  fs::remove_all(course);
  fs::copy(fs::path(GTL_GRADER_FIXTURES) / "course", course, fs::copy_options::recursive);
  ModeOptions o;
  o.course = course;
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(run_rubric_table(o, false, true), exit_codes::kOk)
      << "the fixture course's recorded fingerprints are its starter's";
  ::testing::internal::GetCapturedStdout();
  const fs::path sum = course / "starter/01-sum/sum.cpp";
  std::string text = read_file(sum);
  text.insert(text.find("  // END TODO(lab01)"), "  // a hint added to the pristine region\n");
  std::ofstream(sum) << text;
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(run_rubric_table(o, false, true), exit_codes::kVerifyFailed);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("PROBLEM: lab 01: labs/01-sum/todo_fingerprints.txt is stale"),
            std::string::npos)
      << "the check names the lab and its stale file\n"
      << out;
  EXPECT_NE(out.find("regenerate it with: gtl-grade rubric-table --lab 01 --write --course " +
                     course.string()),
            std::string::npos)
      << "the check names the command that regenerates the file\n"
      << out;
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(run_rubric_table(o, true, false), exit_codes::kOk);
  EXPECT_EQ(run_rubric_table(o, false, true), exit_codes::kOk)
      << "after --write the fingerprints are the starter's again";
  ::testing::internal::GetCapturedStdout();
  fs::remove_all(course);
}

}  // namespace
}  // namespace gtl::grader
