// Reading a whole file: the one helper every part of the grader uses for it.
#pragma once

#include <filesystem>
#include <string>

namespace gtl::grader {

// The bytes of `path`, or "" when it does not exist or cannot be read (callers that must tell
// the two apart check std::filesystem::exists first).
std::string read_file(const std::filesystem::path& path);

}  // namespace gtl::grader
