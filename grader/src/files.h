// Reading a whole file, and cutting a text into lines: the helpers every part of the grader uses.
// And the no-follow helpers for paths a student can influence (a submission, a scratch folder):
// the grader reads and writes them with its own rights, outside the sandbox, so it must never
// follow a symbolic link planted there (docs/grader.md, "Trust model").
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gtl::grader {

// The bytes of `path`, or "" when it does not exist or cannot be read (callers that must tell
// the two apart check std::filesystem::exists first).
std::string read_file(const std::filesystem::path& path);

// The lines of `text`, without their '\n' (a last line without one included).
std::vector<std::string> split_lines(const std::string& text);

// The first symbolic link at `root` or anywhere below it, never followed, as
// "01-sum/sum.cpp -> /elsewhere/sum.cpp" (relative to `root`; the root itself as its own name);
// "" when there is none.
std::string first_symlink(const std::filesystem::path& root);

// The bytes of `root`/`rel`, opened one component at a time below `root` with O_NOFOLLOW: a
// symbolic link in any component of `rel` (or a missing file) gives nullopt, never its target.
std::optional<std::string> read_file_beneath(const std::filesystem::path& root,
                                             const std::filesystem::path& rel);

// The bytes of `path` when its last component is a regular file and not a symbolic link
// (O_NOFOLLOW); nullopt otherwise. For files a child process wrote into its scratch folder,
// whose parent folders the grader created and the child cannot replace.
std::optional<std::string> read_file_nofollow(const std::filesystem::path& path);

// Writes `content` to `path` through a new temporary file beside it (created with O_EXCL and
// O_NOFOLLOW: a link planted at that name is removed first, never written through) renamed over
// `path` (rename replaces a link there, never its target). Throws on failure.
void write_file_nofollow(const std::filesystem::path& path, const std::string& content);

// Removes `dir` and whatever is in it (a link in its place is removed, not followed) and
// creates it again, empty.
void fresh_directory(const std::filesystem::path& dir);

}  // namespace gtl::grader
