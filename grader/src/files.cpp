// Reading a whole file (see files.h).
#include "files.h"

#include <fstream>
#include <sstream>

namespace gtl::grader {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace gtl::grader
