// emulate_launches <kernel file> <copy>: writes the CPU emulator's copy of one CUDA kernel file
// (launches and extern __shared__ arrays rewritten, see launch_rewrite.h). gtl_add_emulated_test
// (cmake/GtlEmulator.cmake) runs it at build time for each kernel file of an emulated test.
//
// The copy is written only when its text changes, so an unchanged copy keeps its timestamp and
// the build does not recompile it.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "launch_rewrite.h"

namespace {

bool read_file(const std::string& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  text = buffer.str();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: emulate_launches <kernel file> <copy>\n";
    return 2;
  }
  const std::string source = argv[1], copy = argv[2];
  std::string text;
  if (!read_file(source, text)) {
    std::cerr << "emulate_launches: cannot read " << source << "\n";
    return 1;
  }
  const std::string emulated = gtl::emulator::emulated_copy(text, source);
  std::string old;
  if (read_file(copy, old) && old == emulated) return 0;
  std::ofstream out(copy, std::ios::binary | std::ios::trunc);
  out << emulated;
  out.close();
  if (!out) {
    std::cerr << "emulate_launches: cannot write " << copy << "\n";
    return 1;
  }
  return 0;
}
