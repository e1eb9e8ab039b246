// Forbidden core symbols: a TODO that asks the student to write what the core already holds (a
// loss scaler, a caching allocator, a ring all-reduce) must not be passed by calling the core's
// own implementation. The rubric lists, per TODO, demangled-name prefixes the TODO's student file
// must not reference (`forbidden: ["gtl::optim::LossScaler::"]`); a file that does scores that
// TODO's checks 0, with a message naming the symbol.
//
// How it looks: each such student file is compiled once more with the build's own command
// (compile_commands.json) but without optimisation or inlining (-O0 -fno-inline), so that every
// core function the file calls appears in its object, inline ones included (as weak definitions:
// at -O2 an inline helper such as a half-precision conversion would leave no trace). `nm -C` then
// lists the object's symbols, and any that starts with a forbidden prefix is a use. CUDA files are
// checked through their normal object's undefined symbols (nvcc's host pass is not re-run).
//
// What it cannot see: code copied from the core (that is writing it, and the instructor view of a
// batch lists look-alikes for a person), or a call made through a pointer the student obtained at
// run time by name (dlsym), which the suspicious-code report flags.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "rubric.h"

namespace gtl::grader {

struct ForbiddenUse {
  std::string todo;    // "3"
  std::string file;    // the student file, as the rubric names it
  std::string symbol;  // the demangled symbol it references
  std::string prefix;  // the rubric entry it matched
};

// The forbidden uses of every TODO of `rubric` that lists `forbidden:` symbols. `build_dir` is the
// configured course build (with compile_commands.json), `impl_dir` the folder the student files
// were compiled from (impl_dir / rubric.dir / file), `scratch` a folder for the extra objects.
// A file that does not compile here yields no use (its checks already fail on the build).
std::vector<ForbiddenUse> find_forbidden_uses(const Rubric& rubric,
                                              const std::filesystem::path& build_dir,
                                              const std::filesystem::path& impl_dir,
                                              const std::filesystem::path& scratch);

// "TODO 3 (loss_scaler.cpp) uses the core's gtl::optim::LossScaler::unscale_(...): this TODO
// asks you to write it yourself, without the core's implementation"
std::string describe(const ForbiddenUse& use);

}  // namespace gtl::grader
