// The launch and shared-memory rewrites of the CPU emulator (see launch_rewrite.h).
#include "launch_rewrite.h"

#include <cstddef>
#include <regex>

namespace gtl::emulator {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

bool is_word(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

bool is_word_start(char c) {
  return is_word(c) && !(c >= '0' && c <= '9');
}

// Where the identifier chain `a::b::c` that ends at `end` begins, or npos if none ends there.
// The chain starts as far left as it can (a leading run of digits is not part of a name).
std::size_t chain_start(std::string_view s, std::size_t end) {
  std::size_t start = std::string_view::npos;
  while (true) {
    std::size_t run = end;
    while (run > 0 && is_word(s[run - 1])) --run;
    std::size_t first = run;
    while (first < end && !is_word_start(s[first])) ++first;
    if (first == end) return start;  // no identifier ends here
    start = first;
    if (first != run || run < 2 || s[run - 1] != ':' || s[run - 2] != ':') return start;
    end = run - 2;  // `::` before a whole identifier: try to take the qualifier too
  }
}

// The kernel name that ends `before` (before trailing whitespace): the identifier chain and an
// optional template argument list. Returns where it starts (npos if there is none) and sets
// `name` to it without the whitespace.
std::size_t kernel_before(std::string_view before, std::string_view& name) {
  std::size_t end = before.size();
  while (end > 0 && is_space(before[end - 1])) --end;
  std::size_t chain_end = end;
  if (end > 0 && before[end - 1] == '>') {  // a template argument list <...>, nothing nested
    std::size_t open = end - 1;
    while (open > 0) {
      const char c = before[open - 1];
      if (c == '<' || c == '>' || c == ';') break;
      --open;
    }
    if (open == 0 || before[open - 1] != '<') return std::string_view::npos;
    chain_end = open - 1;
  }
  const std::size_t start = chain_start(before, chain_end);
  if (start != std::string_view::npos) name = before.substr(start, end - start);
  return start;
}

}  // namespace

std::string rewrite_launches(std::string_view text) {
  std::string out;
  std::string_view rest = text;
  while (true) {
    const std::size_t open = rest.find("<<<");
    if (open == std::string_view::npos) break;
    const std::string_view tail = rest.substr(open + 3);
    const std::size_t close = tail.find(">>>");
    if (close == std::string_view::npos) break;
    const std::string_view before = rest.substr(0, open);
    const std::string_view config = tail.substr(0, close);
    std::string_view after = tail.substr(close + 3);
    std::string_view kernel;
    const std::size_t start = kernel_before(before, kernel);
    std::size_t paren = 0;
    while (paren < after.size() && is_space(after[paren])) ++paren;
    if (start != std::string_view::npos && paren < after.size() && after[paren] == '(') {
      out.append(before.substr(0, start));
      out.append("emu::Launcher(").append(kernel).append(", ").append(config).append(")(");
      after.remove_prefix(paren + 1);
    } else {
      out.append(before).append("<<<").append(config).append(">>>");
    }
    rest = after;
  }
  out.append(rest);
  return out;
}

std::string rewrite_extern_shared(std::string_view text) {
  // The element type may be one letter: `extern __shared__ T buf[];` in a template kernel. An
  // __align__(n) is dropped: the emulator's dynamic shared memory is 256-byte aligned.
  static const std::regex kExternShared(
      "extern[ \t\r\n]+__shared__[ \t\r\n]+(?:__align__[ \t]*\\([ \t]*[0-9]+[ \t]*\\)[ \t\r\n]+)?"
      "([A-Za-z_][A-Za-z0-9_: ]*[A-Za-z0-9_]|[A-Za-z_])"
      "[ \t\r\n]+([A-Za-z_][A-Za-z0-9_]*)[ \t\r\n]*\\[[ \t\r\n]*\\][ \t\r\n]*;");
  return std::regex_replace(std::string(text), kExternShared,
                            "$1* const $2 = static_cast<$1*>(emu::dynamic_shared());");
}

std::string emulated_copy(std::string_view text, std::string_view source_path) {
  std::string out = "#line 1 \"";
  out.append(source_path).append("\"\n");
  out.append(rewrite_extern_shared(rewrite_launches(text)));
  return out;
}

}  // namespace gtl::emulator
