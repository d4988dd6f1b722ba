#include "fs/path.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <dirent.h>

#include <algorithm>
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

namespace {

struct Walk {
  int root_fd;
  const WalkOptions& opt;
  std::vector<TreeEntry>& out;
  std::vector<std::string>& skipped;
  std::vector<std::pair<dev_t, ino_t>> ancestors;  // directories being walked (-L loops)
};

/// What a symlink at `rel` (name n in dir_fd) names, followed (-L).
bool follow(const Walk& w, int dir_fd, const std::string& n, const std::string& rel, struct stat& st) {
  if (!w.opt.beneath) return ::fstatat(dir_fd, n.c_str(), &st, 0) == 0;
  auto fd = open_beneath(w.root_fd, rel, O_PATH);
  return fd.ok() && ::fstat(fd->get(), &st) == 0;
}

Status walk_into(Walk& w, int dir_fd, const std::string& prefix, int depth) {
  if (depth > 256) return make_error(ELOOP, "'" + prefix + "': directory tree deeper than 256 levels");
  int dup_fd = ::dup(dir_fd);
  if (dup_fd < 0) return sys_error("dup");
  DIR* d = ::fdopendir(dup_fd);
  if (!d) {
    ::close(dup_fd);
    return sys_error("opendir '" + prefix + "'");
  }
  std::vector<std::pair<std::string, unsigned char>> names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(std::move(n), e->d_type);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& [n, type] : names) {
    const std::string rel = prefix.empty() ? n : prefix + "/" + n;
    // A regular file needs no stat here: whoever sends it opens it and takes
    // size and mode from fstat on that fd (which also catches a file replaced
    // in between). Trusting d_type saves one syscall per file; file systems
    // that do not fill it in (DT_UNKNOWN) get the stat.
    if (type == DT_REG) {
      w.out.push_back({rel, false, 0, S_IFREG});
      continue;
    }
    struct stat st;
    if (::fstatat(dir_fd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return sys_error("stat '" + rel + "'");
    bool followed = false;
    if (S_ISLNK(st.st_mode) && w.opt.copy_links) {
      if (!follow(w, dir_fd, n, rel, st)) {
        w.skipped.push_back(rel);  // dangling, or (in an export) leading outside it
        continue;
      }
      followed = true;
    }
    const unsigned t = st.st_mode & S_IFMT;
    if (S_ISREG(st.st_mode)) {
      w.out.push_back({rel, false, st.st_mode & 0777u, S_IFREG});
    } else if (S_ISDIR(st.st_mode)) {
      if (std::find(w.ancestors.begin(), w.ancestors.end(), std::make_pair(st.st_dev, st.st_ino)) != w.ancestors.end()) {
        w.skipped.push_back(rel);  // a followed symlink back into its own tree
        continue;
      }
      w.out.push_back({rel, true, st.st_mode & 07777u, S_IFDIR, st.st_mtim.tv_sec * int64_t{1000000000} + st.st_mtim.tv_nsec,
                       st.st_uid, st.st_gid});
      Result<Fd> sub = make_error(EINVAL, "");
      if (!followed) {
        sub = open_beneath(dir_fd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      } else if (w.opt.beneath) {
        sub = open_beneath(w.root_fd, rel, O_RDONLY | O_DIRECTORY);
      } else {
        const int fd = ::openat(dir_fd, n.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        sub = fd >= 0 ? Result<Fd>(Fd(fd)) : Result<Fd>(sys_error("'" + rel + "'"));
      }
      if (!sub.ok()) return sub.error();
      w.ancestors.emplace_back(st.st_dev, st.st_ino);
      RCP_TRY(walk_into(w, sub->get(), rel, depth + 1));
      w.ancestors.pop_back();
    } else if ((t == S_IFLNK && w.opt.links) || ((t == S_IFCHR || t == S_IFBLK) && w.opt.devices) ||
               ((t == S_IFIFO || t == S_IFSOCK) && w.opt.specials)) {
      w.out.push_back({rel, false, st.st_mode & 07777u, t});
    } else {
      w.skipped.push_back(rel);
    }
  }
  return {};
}

}  // namespace

Result<std::vector<TreeEntry>> walk_tree(int dir_fd, std::vector<std::string>& skipped, const WalkOptions& opt) {
  std::vector<TreeEntry> out;
  Walk w{dir_fd, opt, out, skipped, {}};
  struct stat st;
  if (::fstat(dir_fd, &st) == 0) w.ancestors.emplace_back(st.st_dev, st.st_ino);
  RCP_TRY(walk_into(w, dir_fd, "", 0));
  return out;
}

}  // namespace rcp
