// The grading pipeline of one submission.
#include "grade.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <functional>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "bench_runner.h"
#include "calibration.h"
#include "files.h"
#include "forbidden_symbols.h"
#include "gtest_runner.h"
#include "include_check.h"
#include "judge.h"
#include "process.h"
#include "sandbox.h"
#include "twin_check.h"

namespace gtl::grader {
namespace {

namespace fs = std::filesystem;

using Clock = std::chrono::steady_clock;

RunLimits limits_for(const Limits& l, double timeout_s,
                     Clock::time_point deadline = Clock::time_point::max()) {
  RunLimits r;
  r.timeout_s = timeout_s;
  r.deadline = deadline;
  r.memory_mb = l.memory_mb;
  r.output_bytes = l.output_kb * 1024;
  return r;
}

// What this machine and build can run.
struct Machine {
  bool gpu = false;              // a GPU is visible (and no --cpu-only)
  bool cuda = false;             // the course build has the CUDA backend
  std::string gpu_name = "cpu";  // calibration.h: whose figures calibrated speed checks use
};

// Why `check` cannot run here ("" when it can); such a check is skipped, its points set apart.
std::string why_not_here(const Check& check, const GradeOptions& o, const Machine& m) {
  if (check.requires_gpu && !m.gpu)
    return o.cpu_only ? "requires a GPU and --cpu-only was given"
                      : "requires a GPU and this machine has none";
  if (check.requires_cuda && !m.cuda)
    return o.cpu_only ? "requires the CUDA backend and --cpu-only was given"
                      : "requires the CUDA backend and this build has none (no nvcc found)";
  return "";
}

// Where ccache keeps its cache, when the course is built through it: builds must write there.
fs::path ccache_dir() {
  if (const char* d = std::getenv("CCACHE_DIR")) return d;
  if (!program_available("ccache")) return {};
  RunLimits limits;
  limits.timeout_s = 10;
  const RunResult r = run_process({"ccache", "-k", "cache_dir"}, limits);
  std::string dir = r.ok() ? r.output : "";
  while (!dir.empty() && (dir.back() == '\n' || dir.back() == ' ')) dir.pop_back();
  return dir;
}

// The sandboxes of one grading (sandbox.h): builds write only their build folder (and ccache's);
// programs write only the scratch folder of their own check (given per check: run_sandbox); none
// sees the solution, the reports or the submission's own folder (its listed files were copied
// into <work>/impl).
struct Sandboxes {
  std::vector<std::string> build;
  SandboxPolicy run;  // without its writable folder
};
Sandboxes sandboxes_for(const GradeOptions& o) {
  // The grader's own folders exist before the sandbox is drawn: a folder that does not exist yet
  // is left out of it, and under /tmp (a fresh tmpfs in the sandbox) it would then be missing.
  for (const char* d : {"impl", "build", "scratch"}) {
    std::error_code ec;
    fs::create_directories(o.work / d, ec);
  }
  SandboxPolicy base;
  // The channel folder: a course without a grader/ of its own (the fixture course) compiles the
  // verdict listener from the grader's sources.
  base.readable = {o.course, o.work / "impl", o.work / "build", GTL_GRADER_CHANNEL_DIR};
  // A prebuilt core (build.h) is linked from its own build folder, which may lie under /tmp.
  if (const fs::path core = prebuilt_core_dir(o.cmake_args); !core.empty())
    base.readable.push_back(core);
  base.hidden = {o.course / "solution", o.out, o.submission};
  base.hidden.insert(base.hidden.end(), o.hidden.begin(), o.hidden.end());
  SandboxPolicy build = base;
  build.writable = {o.work / "build"};
  if (const fs::path cache = ccache_dir(); !cache.empty()) build.writable.push_back(cache);
  return {sandbox_wrapper(build), base};
}

// The scratch folder of one check, <work>/scratch/<lab>/<check>: emptied before the check runs
// (a link a program planted there is removed, never followed) and the only folder its programs
// may write.
fs::path check_scratch(const fs::path& work, const Rubric& rubric, const Check& check) {
  std::string name = check.name;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return work / "scratch" / rubric.dir / name;
}

LabResult empty_lab(const Rubric& rubric) {
  LabResult lab;
  lab.lab = rubric.lab;
  lab.title = rubric.title;
  lab.dir = rubric.dir;
  return lab;
}

// A TODO whose student file calls the core's own implementation of what it teaches earns none of
// its checks, whatever they measured (forbidden_symbols.h).
template <typename Say>
void apply_forbidden_uses(const Rubric& rubric, const BuildSettings& build, LabResult& lab,
                          const Say& say) {
  // A folder no test program may write, emptied here: the compiler (run by the grader) never
  // writes its object through a link planted in advance.
  const fs::path scratch = build.work / "scratch" / ("forbidden-" + rubric.dir);
  fresh_directory(scratch);
  const std::vector<ForbiddenUse> uses =
      find_forbidden_uses(rubric, build.work / "build", build.work / "impl", scratch);
  std::set<std::string> marked;  // checks already scored 0 for a use (the first one is named)
  for (const ForbiddenUse& use : uses) {
    say("forbidden: " + describe(use));
    const auto todo = std::find_if(rubric.todos.begin(), rubric.todos.end(),
                                   [&](const Todo& t) { return t.id == use.todo; });
    for (CheckResult& r : lab.checks) {
      if (std::find(todo->checks.begin(), todo->checks.end(), r.name) == todo->checks.end())
        continue;
      if (r.status == Status::kSkipped) continue;  // not run here: its points are set apart
      if (!marked.insert(r.name).second) continue;
      r.status = Status::kFailed;
      r.score = 0;
      r.reason = describe(use);
    }
  }
}

// Everything the jobs of grading one lab share.
struct LabJob {
  const GradeOptions& o;
  const Rubric& rubric;
  const Machine& machine;
  const BuildSettings& build;
  const SandboxPolicy& run_sandbox;  // the programs' sandbox, less its writable folder
  RunExtras extras;                  // the seed of every program run
  std::function<void(const std::string&)> say;
  Clock::time_point deadline = Clock::time_point::max();  // the running check's time cap

  // The scratch folder of `c`, emptied, and the extras of its programs: the sandbox in which
  // that folder is the only one they may write.
  RunExtras extras_for(const Check& c, fs::path* scratch) const {
    *scratch = check_scratch(build.work, rubric, c);
    fresh_directory(*scratch);
    SandboxPolicy policy = run_sandbox;
    policy.writable = {*scratch};
    policy.tmpfs_mb = rubric.limits.memory_mb;
    RunExtras e = extras;
    e.wrapper = sandbox_wrapper(policy);
    return e;
  }

  bool runnable(const Check& c) const { return why_not_here(c, o, machine).empty(); }
  fs::path program(const std::string& target) const {
    return find_executable(build.work / "build", target);
  }
};

// The checks this run grades: all, less hidden ones unless asked, less those --check leaves out.
std::vector<const Check*> select_checks(const GradeOptions& o, const Rubric& rubric) {
  std::vector<const Check*> selected;
  for (const auto& c : rubric.checks) {
    if (c.hidden && !o.include_hidden) continue;
    if (!o.checks.empty() && std::find(o.checks.begin(), o.checks.end(), c.name) == o.checks.end())
      continue;
    selected.push_back(&c);
  }
  return selected;
}

// Builds the programs (and judges) of the runnable checks, one target at a time after a failed
// joint build, and records in `lab` what did not compile, with the student's own file names.
void build_programs(const LabJob& job, const std::vector<const Check*>& selected, LabResult& lab) {
  std::vector<std::string> targets;
  for (const Check* c : selected)
    for (const std::string& t : {c->binary, c->judge})
      if (job.runnable(*c) && !t.empty() &&
          std::find(targets.begin(), targets.end(), t) == targets.end())
        targets.push_back(t);
  if (targets.empty()) return;
  std::string names;
  for (const auto& t : targets) names += " " + t;
  job.say("building" + names);
  const BuildOutcome b =
      build_each_target(job.build, targets, job.rubric.limits.build_timeout_s, job.say);
  lab.failed_targets = b.failed;
  // Built: at least one program of a check (a judge, built from the course alone, is not one).
  lab.built = std::any_of(selected.begin(), selected.end(), [&](const Check* c) {
    return job.runnable(*c) &&
           std::find(b.failed.begin(), b.failed.end(), c->binary) == b.failed.end();
  });
  // Name the student's files as they know them ("01-sum/sum.cpp"), not by the private copy.
  lab.build_errors = b.errors;
  const std::string impl = fs::absolute(job.build.work / "impl").string() + "/";
  for (std::size_t at; (at = lab.build_errors.find(impl)) != std::string::npos;)
    lab.build_errors.erase(at, impl.size());
  if (!lab.built) {
    job.say("does not compile: every check of this lab gets 0 points");
  } else if (!b.failed.empty()) {
    // Judges are built from the course alone: name them apart from the student's programs.
    std::vector<std::string> judges, programs;
    for (const auto& t : b.failed)
      (std::any_of(selected.begin(), selected.end(), [&](const Check* c) { return c->judge == t; })
           ? judges
           : programs)
          .push_back(t);
    const auto listed = [](const std::vector<std::string>& ts) {
      std::string all;
      for (const auto& t : ts) all += " " + t;
      return all;
    };
    if (!programs.empty())
      job.say("does not compile:" + listed(programs) + ": the checks that run " +
              (programs.size() == 1 ? "it" : "them") + " get 0 points, the others run");
    if (!judges.empty())
      job.say("the course's judge" + std::string(judges.size() == 1 ? "" : "s") + listed(judges) +
              " did not build (a course problem, not the submission's): the checks " +
              (judges.size() == 1 ? "it decides" : "they decide") + " get 0 points");
  }
}

// A student file that includes what it must not (the solution, a test, a hidden file, a file
// outside the course) costs every check of the lab; returns the reason ("" when none does).
std::string forbidden_include_reason(const LabJob& job) {
  const auto found = forbidden_includes(
      job.build.work / "build", job.build.work / "impl", job.build.course, job.rubric,
      dependency_roots(job.build.cmake_args, job.build.course, job.build.work));
  if (found.empty()) return "";
  return "student code includes files outside the student's folder and the lab's public "
         "headers: " +
         describe_forbidden(found);
}

// A test check: the GoogleTest program on the check's tests, its verdicts from the grader's
// channel, then the judge (when the rubric names one) on the outputs the tests recorded.
CheckResult run_test_check(const LabJob& job, const Check& c) {
  job.say("running check '" + c.name + "' (" + c.binary + ")");
  // The tests record their outputs for the judge in the check's own (emptied) scratch folder.
  fs::path scratch;
  RunExtras test_extras = job.extras_for(c, &scratch);
  const fs::path judged = scratch / "judged";
  fs::create_directories(judged);
  test_extras.env.push_back("GTL_JUDGE_OUTPUTS=" + judged.string());
  const Limits& l = job.rubric.limits;
  const GtestRun run =
      run_gtest(job.program(c.binary), c.tests, limits_for(l, l.test_timeout_s, job.deadline),
                scratch, job.say, test_extras);
  CheckResult r = score_test_check(c, run);
  if (!c.judge.empty()) {
    job.say("judging check '" + c.name + "' (" + c.judge + ")");
    apply_judge(r, job.program(c.judge), limits_for(l, l.test_timeout_s, job.deadline),
                test_extras);
  }
  return r;
}

// A speed or memory check: one process holding both benchmarks it compares (a ratio compares
// medians of the same run, and a crashing benchmark costs only the checks that run it).
CheckResult run_benchmark_check(const LabJob& job, const Check& c, const Calibration& calibration) {
  std::vector<std::string> names = {c.benchmark};
  if (!c.baseline.empty()) names.push_back(c.baseline);
  const Limits& l = job.rubric.limits;
  job.say("running check '" + c.name + "' (" + c.binary + ", " + std::to_string(l.repetitions) +
          " repetitions)");
  fs::path scratch;
  const RunExtras extras = job.extras_for(c, &scratch);
  const BenchRun run =
      run_benchmarks(job.program(c.binary), names, {l.repetitions, l.min_time_s},
                     limits_for(l, l.bench_timeout_s, job.deadline), scratch, extras);
  if (c.kind != CheckKind::kSpeed) return score_memory_check(c, run);
  std::optional<double> solution;
  const Check speed = calibrated(c, calibration, job.machine.gpu_name, &solution);
  CheckResult r = score_speed_check(speed, run);
  if (solution) {
    r.solution_figure = solution;
    r.calibrated_on = job.machine.gpu_name;
    std::ostringstream figure;
    figure << std::setprecision(3) << *solution;
    r.reason +=
        " (calibrated: the solution reaches " + figure.str() + "x on " + job.machine.gpu_name + ")";
  }
  return r;
}

// One lab: build, look at the student's includes, run every selected check, then the
// cross-checks that need all results (wrong benchmark results, forbidden core symbols).
LabResult grade_lab(const GradeOptions& o, const Rubric& rubric, const fs::path& submission,
                    const Machine& machine, const BuildSettings& build,
                    const SandboxPolicy& run_sandbox) {
  LabJob job{o, rubric, machine, build, run_sandbox, {}, {}};
  job.extras.env = {"GTL_TEST_SEED=" + std::to_string(o.seed)};
  job.say = [&](const std::string& s) {
    if (o.progress) o.progress("[lab " + rubric.lab + "] " + s);
  };
  LabResult lab = empty_lab(rubric);
  lab.open_todos = open_todo_regions(o.course, submission, rubric);
  const std::vector<const Check*> selected = select_checks(o, rubric);
  build_programs(job, selected, lab);
  const std::string forbidden = lab.built ? forbidden_include_reason(job) : "";
  if (!forbidden.empty()) {
    lab.error = forbidden;
    job.say(forbidden + ": every check of this lab gets 0 points");
  }
  const Calibration calibration = load_calibration(o.course, rubric);
  // The lab's time cap runs from its first check (its build has build_timeout_s).
  const Limits& l = rubric.limits;
  const auto seconds = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  const Clock::time_point lab_deadline = Clock::now() + seconds(l.lab_timeout_s);
  const std::string lab_cap =
      "the lab's time cap of " + pts(l.lab_timeout_s) + " s (limits.lab_timeout_s) was reached";
  for (const Check* c : selected) {
    if (!job.runnable(*c)) {
      lab.checks.push_back(skipped_check(*c, why_not_here(*c, o, machine)));
      continue;
    }
    const auto failed = [&](const std::string& t) {
      return !t.empty() && std::find(lab.failed_targets.begin(), lab.failed_targets.end(), t) !=
                               lab.failed_targets.end();
    };
    if (!forbidden.empty()) {
      lab.checks.push_back(failed_check(*c, forbidden));
      continue;
    }
    if (failed(c->binary)) {
      // The errors are shown once, with the lab, not repeated under every check.
      lab.checks.push_back(failed_check(
          *c, lab.built ? c->binary + " does not compile (see the compiler errors)"
                        : std::string("the lab does not compile (see the compiler errors)")));
      continue;
    }
    if (failed(c->judge)) {
      // A judge is built from the course alone: its failure is the course's, not the student's.
      lab.checks.push_back(failed_check(
          *c, "its judge " + c->judge +
                  " did not build from the course (not from your files): this copy of the course "
                  "is incomplete or broken (a rubric that names a judge whose judge/ folder is "
                  "missing?); the check cannot be decided, ask the course's staff"));
      continue;
    }
    const Clock::time_point start = Clock::now();
    if (start >= lab_deadline) {
      lab.checks.push_back(failed_check(*c, lab_cap + ": the remaining checks were not run"));
      job.say("not run '" + c->name + "': " + lab_cap);
      continue;
    }
    const bool lab_binds = lab_deadline <= start + seconds(l.check_timeout_s);
    job.deadline = lab_binds ? lab_deadline : start + seconds(l.check_timeout_s);
    lab.checks.push_back(c->kind == CheckKind::kTest ? run_test_check(job, *c)
                                                     : run_benchmark_check(job, *c, calibration));
    CheckResult& r = lab.checks.back();
    if (Clock::now() >= job.deadline && r.score < r.max_score) {
      // Stopped by a cap, not by its own program's timeout: say which cap.
      r.reason = (lab_binds ? lab_cap + " during this check: the remaining checks were not run"
                            : "the check's time cap of " + pts(l.check_timeout_s) +
                                  " s (limits.check_timeout_s) was reached") +
                 "; " + r.reason;
    }
    job.say(std::string(to_string(r.status)) + " '" + r.name + "': " + r.reason.substr(0, 120));
  }
  fail_todos_with_wrong_benchmarks(rubric, lab.checks);
  if (lab.built) apply_forbidden_uses(rubric, build, lab, job.say);
  lab.next_step =
      next_step(rubric, lab.checks, read_file(o.course / "labs" / rubric.dir / "README.md"));
  return lab;
}

// Whether `inner` is `outer` or lies inside it (both resolved: links, "." and "..").
bool holds(const fs::path& outer, const fs::path& inner) {
  std::error_code ec;
  const auto folder = [&ec](const fs::path& p) {
    std::string s = fs::weakly_canonical(fs::absolute(p), ec).string();
    return s.ends_with('/') ? s : s + '/';
  };
  return folder(inner).starts_with(folder(outer));
}

}  // namespace

std::vector<Rubric> select_labs(const std::vector<Rubric>& all,
                                const std::vector<std::string>& ids) {
  if (ids.empty()) return all;
  std::vector<Rubric> out;
  for (const auto& id : ids) {
    auto it = std::find_if(all.begin(), all.end(),
                           [&](const Rubric& r) { return r.lab == id || r.dir == id; });
    if (it == all.end()) {
      std::string known;
      for (const auto& r : all) known += " " + r.lab + " (" + r.dir + ")";
      throw GradeError(exit_codes::kUsage, "unknown lab '" + id + "'; the course has:" +
                                               (known.empty() ? " none" : known));
    }
    out.push_back(*it);
  }
  return out;
}

GradeResult grade_submission(const GradeOptions& o, const std::vector<Rubric>& labs) {
  // A --checks name no lab has would grade nothing, and an empty verify passes: refuse it.
  for (const std::string& name : o.checks) {
    std::string known;
    bool found = false;
    for (const auto& r : labs)
      for (const auto& c : r.checks) {
        found = found || c.name == name;
        known += " " + c.name;
      }
    if (!found)
      throw GradeError(exit_codes::kUsage, "unknown check '" + name + "'; the lab(s) graded have:" +
                                               (known.empty() ? " none" : known));
  }
  GradeResult result;
  const fs::path submission = resolve_submission(o.submission);
  result.submission = submission.string();
  result.seed = std::to_string(o.seed);
  for (const auto& r : labs) result.labs.push_back(empty_lab(r));
  auto fail_all = [&](int code, const std::string& why) {
    result.exit_code = code;
    result.error = why;
    for (std::size_t i = 0; i < labs.size(); ++i) {
      result.labs[i].error = why;
      result.labs[i].checks.clear();
      for (const auto& c : labs[i].checks)
        if (!c.hidden || o.include_hidden) result.labs[i].checks.push_back(failed_check(c, why));
    }
    return result;
  };
  try {
    if (!fs::is_directory(submission))
      return fail_all(exit_codes::kSubmission,
                      "the submission folder " + submission.string() + " does not exist");
    // The grader reads the submission with its own rights, outside the sandbox: a link would
    // have it read (and compile, and show in compiler errors) whatever the link names, the
    // solution or /proc/self/environ. No link is followed; a submission holding one is refused.
    if (const std::string link = first_symlink(o.submission); !link.empty())
      return fail_all(exit_codes::kSubmission,
                      "the submission holds a symbolic link, which the grader refuses (it reads "
                      "submissions with its own rights): " +
                          link + "; submit regular files only");
    // Every program the grader runs sees the submission's folder empty (sandboxes_for): a clone
    // of the course is accepted, but not the course itself, which would vanish with it.
    if (holds(o.submission, o.course))
      return fail_all(exit_codes::kUsage,
                      "the submission " + o.submission.string() + " is (or holds) the course " +
                          o.course.string() +
                          " being graded: pass its starter/ (the default) or a copy of the course");
    const bool have_gpu = !o.cpu_only && gpu_available();
    std::vector<const Rubric*> complete;
    std::map<std::string, std::vector<std::string>> missing;
    for (const auto& r : labs) {
      missing[r.dir] = missing_files(submission, r);
      if (missing[r.dir].empty()) complete.push_back(&r);
    }
    const Sandboxes sandbox = sandboxes_for(o);
    result.sandbox =
        sandbox_support().available ? "bubblewrap" : "none: " + sandbox_support().why_not;
    if (!sandbox_support().available && o.progress)
      o.progress("WARNING: no sandbox (" + sandbox_support().why_not +
                 "): student code runs with the grader's rights");
    BuildSettings build{o.course, o.work, o.cmake_args, o.progress, sandbox.build};
    // GTL_CUDA is a cache variable: always pass it, or an earlier configure's choice would stick.
    // --cpu-only compiles no CUDA; otherwise AUTO builds the backend wherever nvcc is found, so
    // `requires: cuda` checks run even on a machine without a GPU.
    const bool cuda_chosen =
        std::any_of(o.cmake_args.begin(), o.cmake_args.end(),
                    [](const std::string& a) { return a.rfind("-DGTL_CUDA=", 0) == 0; });
    if (!cuda_chosen)
      build.cmake_args.insert(build.cmake_args.begin(),
                              o.cpu_only ? "-DGTL_CUDA=OFF" : "-DGTL_CUDA=AUTO");
    prepare_impl(o.course, submission, complete, o.work / "impl");
    if (!complete.empty()) configure_course(build);
    const Machine machine{have_gpu, build_has_cuda(o.work / "build"), this_gpu_name(!have_gpu)};
    for (std::size_t i = 0; i < labs.size(); ++i) {
      const Rubric& r = labs[i];
      if (!missing[r.dir].empty()) {
        std::string list;
        for (const auto& f : missing[r.dir]) list += " " + f;
        LabResult& lab = result.labs[i];
        lab.error = "the submission lacks the student files:" + list;
        for (const auto& c : r.checks) {
          if (c.hidden && !o.include_hidden) continue;
          const std::string skip = why_not_here(c, o, machine);
          lab.checks.push_back(skip.empty() ? failed_check(c, lab.error) : skipped_check(c, skip));
        }
        result.exit_code = exit_codes::kSubmission;
        if (result.error.empty()) result.error = lab.error;
        continue;
      }
      result.labs[i] = grade_lab(o, r, submission, machine, build, sandbox.run);
    }
  } catch (const GradeError& e) {
    return fail_all(e.exit_code(), e.what());
  } catch (const std::exception& e) {
    return fail_all(exit_codes::kInternal, std::string("internal grader error: ") + e.what());
  }
  return result;
}

}  // namespace gtl::grader
