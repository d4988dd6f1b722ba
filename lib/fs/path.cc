#include "fs/path.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace rcp {

Result<std::string> clean_relative(std::string_view path) {
  if (path.size() > 4095) return make_error(ENAMETOOLONG, "path too long");
  if (path.find('\0') != std::string_view::npos) return make_error(EINVAL, "path contains a NUL byte");
  if (!path.empty() && path.front() == '/')
    return make_error(EPERM, "absolute path '" + std::string(path) + "' refused: paths are relative to the export");
  std::string out;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view comp = path.substr(i, j - i);
    if (comp == "..")
      return make_error(EPERM, "path '" + std::string(path) + "' refused: '..' may not leave the export");
    if (!comp.empty() && comp != ".") {
      if (!out.empty()) out += '/';
      out += comp;
    }
    i = j + 1;
  }
  return out;
}

std::pair<std::string, std::string> split_module(std::string_view spec) {
  size_t s = spec.find('/');
  if (s == std::string_view::npos) return {std::string(spec), ""};
  return {std::string(spec.substr(0, s)), std::string(spec.substr(s + 1))};
}

bool is_plain_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos && name.size() <= 255;
}

std::string base_name(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t s = path.rfind('/');
  return std::string(s == std::string_view::npos ? path : path.substr(s + 1));
}

std::string dir_name(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t s = path.rfind('/');
  if (s == std::string_view::npos) return "";
  if (s == 0) return "/";
  return std::string(path.substr(0, s));
}

Result<Fd> open_beneath(int root_fd, std::string_view rel, int flags, unsigned mode) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.mode = (flags & O_CREAT) ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  std::string p = rel.empty() ? std::string(".") : std::string(rel);
  long fd = syscall(SYS_openat2, root_fd, p.c_str(), &how, sizeof how);
  if (fd < 0) {
    if (errno == EXDEV)
      return make_error(EPERM, "'" + p + "' resolves outside the export (symlink or '..')");
    return sys_error("'" + p + "'");
  }
  return Fd(static_cast<int>(fd));
}

Result<Fd> make_dirs_beneath(int root_fd, std::string_view rel, unsigned mode, bool* made_last) {
  RCP_ASSIGN(std::string clean, clean_relative(rel));
  RCP_ASSIGN(Fd cur, open_beneath(root_fd, "", O_RDONLY | O_DIRECTORY));
  size_t i = 0;
  while (i < clean.size()) {
    size_t j = clean.find('/', i);
    if (j == std::string::npos) j = clean.size();
    const std::string comp = clean.substr(i, j - i);
    const bool made = ::mkdirat(cur.get(), comp.c_str(), mode) == 0;
    if (!made && errno != EEXIST) return sys_error("mkdir '" + clean.substr(0, j) + "'");
    if (made_last) *made_last = made;
    auto next = open_beneath(cur.get(), comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (!next.ok()) return make_error(next.error().code, "'" + clean.substr(0, j) + "': " + next.error().context);
    cur = std::move(next.value());
    i = j + 1;
  }
  return cur;
}

}  // namespace rcp
