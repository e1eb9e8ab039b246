// Reading a whole file, and the no-follow helpers (see files.h).
#include "files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gtl::grader {

namespace fs = std::filesystem;

namespace {

// Everything left to read from `fd` (which it closes).
std::optional<std::string> read_all(int fd) {
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return std::nullopt;
  }
  std::string out;
  char buf[1 << 16];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      close(fd);
      return std::nullopt;
    }
    out.append(buf, std::size_t(n));
  }
  close(fd);
  return out;
}

}  // namespace

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string first_symlink(const fs::path& root) {
  std::error_code ec;
  auto shown = [](const fs::path& link, const fs::path& name) {
    std::error_code e;
    const fs::path target = fs::read_symlink(link, e);
    return name.string() + " -> " + (e ? std::string("?") : target.string());
  };
  if (fs::is_symlink(root, ec)) return shown(root, root.filename());
  if (!fs::is_directory(root, ec)) return "";
  // The iterator never follows a link to a folder; each entry's type is its lstat.
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_symlink(ec)) return shown(it->path(), it->path().lexically_relative(root));
  }
  return "";
}

std::optional<std::string> read_file_beneath(const fs::path& root, const fs::path& rel) {
  int dir = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return std::nullopt;
  std::vector<std::string> parts;
  for (const auto& p : rel.relative_path()) {
    const std::string s = p.string();
    if (s.empty() || s == ".") continue;
    if (s == "..") {
      close(dir);
      return std::nullopt;
    }
    parts.push_back(s);
  }
  if (parts.empty()) {
    close(dir);
    return std::nullopt;
  }
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    const int next = openat(dir, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(dir);
    if (next < 0) return std::nullopt;
    dir = next;
  }
  const int fd = openat(dir, parts.back().c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  close(dir);
  return read_all(fd);
}

std::optional<std::string> read_file_nofollow(const fs::path& path) {
  return read_all(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
}

void write_file_nofollow(const fs::path& path, const std::string& content) {
  const fs::path tmp = path.string() + ".tmp." + std::to_string(getpid());
  unlink(tmp.c_str());  // a link (or anything) planted at the temporary name goes, unfollowed
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + tmp.string() + ": " + strerror(errno));
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      close(fd);
      unlink(tmp.c_str());
      throw std::runtime_error("cannot write " + tmp.string() + ": " + strerror(e));
    }
    done += std::size_t(n);
  }
  close(fd);
  fs::rename(tmp, path);  // replaces a link at `path` itself, never what it points to
}

namespace {

// Gives the owner every right on the folders below `dir` (never through a link): a program may
// have left a folder it cannot be listed or emptied from (chmod 000), which would otherwise stop
// the next grading in the same work folder.
void make_removable(const fs::path& dir) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
  chmod(dir.c_str(), 0700);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) make_removable(e.path());
}

}  // namespace

void fresh_directory(const fs::path& dir) {
  make_removable(dir);
  fs::remove_all(dir);  // removes a link in its place, never what it points to
  fs::create_directories(dir);
}

}  // namespace gtl::grader
