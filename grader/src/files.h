// Reading a whole file, and cutting a text into lines: the helpers every part of the grader uses.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace gtl::grader {

// The bytes of `path`, or "" when it does not exist or cannot be read (callers that must tell
// the two apart check std::filesystem::exists first).
std::string read_file(const std::filesystem::path& path);

// The lines of `text`, without their '\n' (a last line without one included).
std::vector<std::string> split_lines(const std::string& text);

}  // namespace gtl::grader
