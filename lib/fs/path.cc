#include "fs/path.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <vector>

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

namespace {

Result<Destination> finish_destination(Result<Fd> as_dir, Result<Fd> parent, std::string leaf,
                                       bool multi, std::string shown) {
  Destination d;
  d.shown = std::move(shown);
  if (as_dir.ok()) {
    d.dir = std::move(as_dir.value());
    d.is_dir = true;
    return d;
  }
  const int e = as_dir.error().code;
  if (e != ENOTDIR && e != ENOENT) return as_dir.error();
  if (multi) return make_error(ENOTDIR, "destination '" + d.shown + "' is not a directory (several sources)");
  if (!parent.ok()) return parent.error();
  if (!is_plain_name(leaf)) return make_error(EINVAL, "destination '" + d.shown + "' has no file name");
  d.dir = std::move(parent.value());
  d.leaf = std::move(leaf);
  return d;
}

}  // namespace

Result<Destination> resolve_destination_beneath(int root_fd, std::string_view rel, bool multi,
                                                std::string shown) {
  auto as_dir = open_beneath(root_fd, rel, O_RDONLY | O_DIRECTORY);
  if (as_dir.ok() || rel.empty())
    return finish_destination(std::move(as_dir), make_error(ENOENT, shown), "", multi, shown);
  auto parent = open_beneath(root_fd, dir_name(rel), O_RDONLY | O_DIRECTORY);
  return finish_destination(std::move(as_dir), std::move(parent), base_name(rel), multi, std::move(shown));
}

Result<Destination> resolve_destination_local(const std::string& path, bool multi) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  Result<Fd> as_dir = fd >= 0 ? Result<Fd>(Fd(fd)) : Result<Fd>(sys_error("'" + path + "'"));
  if (as_dir.ok()) return finish_destination(std::move(as_dir), make_error(ENOENT, path), "", multi, path);
  std::string parent_path = dir_name(path);
  if (parent_path.empty()) parent_path = ".";
  int pfd = ::open(parent_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  Result<Fd> parent = pfd >= 0 ? Result<Fd>(Fd(pfd)) : Result<Fd>(sys_error("directory '" + parent_path + "'"));
  return finish_destination(std::move(as_dir), std::move(parent), base_name(path), multi, path);
}

}  // namespace rcp
