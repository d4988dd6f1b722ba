#include "fs/sources.h"

#include "fs/filetime.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include "fs/blockdev.h"
#include "fs/path.h"

namespace rcp {

namespace {

/// What a stat says the path is, for a refusal.
const char* kind_of(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISLNK(m)) return "a symlink";
  return "not a regular file";
}

/// Opens path as dir_fd-relative (confined beneath it when `beneath`) with flags.
Result<Fd> open_at(int dir_fd, const std::string& path, int flags, bool beneath, const std::string& shown) {
  if (beneath) {
    auto fd = open_beneath(dir_fd, path, flags);
    // Named as the user sees it (open_beneath names the path relative to dir_fd).
    if (!fd.ok())
      return make_error(fd.error().code, "'" + shown + "'" +
                                             (fd.error().code == EPERM ? " resolves outside the export (symlink or '..')" : ""));
    return fd;
  }
  int fd = ::openat(dir_fd, path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return sys_error("'" + shown + "'");
  return Fd(fd);
}

}  // namespace

Result<SourceFile> open_source_file(int dir_fd, const std::string& path, std::string shown, bool beneath,
                                    bool devices) {
  // Never open() what could block or act: a FIFO's open waits for a writer
  // for good (64 gets of one once held 64 daemon threads), a device's open
  // may do anything. O_PATH resolves the name without opening the object,
  // fstat on it says what it is, and only a regular file is then opened for
  // reading — O_NONBLOCK, in case the name was swapped for a FIFO in between
  // — and sent only if it is the very inode inspected.
  RCP_ASSIGN(Fd probe, open_at(dir_fd, path, O_PATH, beneath, shown));
  struct stat st;
  if (::fstat(probe.get(), &st) != 0) return sys_error("stat '" + shown + "'");
  if (S_ISDIR(st.st_mode)) return make_error(EISDIR, "'" + shown + "' is a directory");
  const bool device = devices && S_ISBLK(st.st_mode);
  if (!S_ISREG(st.st_mode) && !device)
    return make_error(EINVAL, fmt::format("'{}' is {}: refused, only regular files and directories are sent{}", shown,
                                          kind_of(st.st_mode),
                                          S_ISBLK(st.st_mode) ? " (--copy-devices sends a block device's contents)" : ""));
  SourceFile f;
  RCP_ASSIGN(f.fd, open_at(dir_fd, path, O_RDONLY | O_NONBLOCK, beneath, shown));
  struct stat now;
  if (::fstat(f.fd.get(), &now) != 0) return sys_error("stat '" + shown + "'");
  if (now.st_dev != st.st_dev || now.st_ino != st.st_ino || (now.st_mode & S_IFMT) != (st.st_mode & S_IFMT))
    return make_error(EAGAIN, "'" + shown + "' was replaced while being opened: not sent");
  // (Regular files ignore O_NONBLOCK; cleared all the same.)
  const int fl = ::fcntl(f.fd.get(), F_GETFL);
  if (fl < 0 || ::fcntl(f.fd.get(), F_SETFL, fl & ~O_NONBLOCK) != 0) return sys_error("fcntl '" + shown + "'");
  if (device) {
    RCP_ASSIGN(f.size, block_device_size(f.fd.get(), shown));
    f.mode = 0600;  // a disk's image is as private as the disk (the node's bits say who may open /dev)
  } else {
    f.size = static_cast<uint64_t>(now.st_size);
    f.mode = now.st_mode & 0777;
  }
  f.mtime_ns = mtime_ns_of(now);
  f.name = base_name(path);
  f.shown = std::move(shown);
  return f;
}

SourceOpener skipped_entry(std::string note) {
  return [note = std::move(note)]() -> Result<SourceFile> {
    SourceFile f;
    f.skip_note = note;
    return f;
  };
}

Result<std::vector<SourceOpener>> tree_sources(std::shared_ptr<Fd> dir, const std::string& base, unsigned mode,
                                               const std::string& shown, std::vector<std::string>& skipped) {
  RCP_ASSIGN(auto entries, walk_tree(dir->get(), skipped));
  auto dir_entry = [](std::string name, std::string eshown, unsigned m) -> SourceOpener {
    return [name, eshown, m]() -> Result<SourceFile> {
      SourceFile f;
      f.is_dir = true;
      f.mode = m & 0777;
      f.name = name;
      f.shown = eshown;
      return f;
    };
  };
  std::vector<SourceOpener> files;
  if (!base.empty()) files.push_back(dir_entry(base, shown, mode));
  for (auto& e : entries) {
    std::string name = base.empty() ? e.rel : base + "/" + e.rel, eshown = shown + "/" + e.rel;
    if (e.is_dir) {
      files.push_back(dir_entry(std::move(name), std::move(eshown), e.mode));
    } else {
      files.push_back([dir, rel = e.rel, name, eshown]() -> Result<SourceFile> {
        RCP_ASSIGN(SourceFile f, open_source_file(dir->get(), rel, eshown, true));
        f.name = name;
        return f;
      });
    }
  }
  return files;
}

Result<SourceSet> expand_source(int dir_fd, const std::string& path, const std::string& shown, bool beneath,
                                bool recursive, bool devices) {
  SourceSet out;
  struct stat st;
  std::shared_ptr<Fd> dir;
  if (beneath) {
    // One O_PATH open resolves the path, confined, without opening what it
    // names (a FIFO would block); fstat on it says what it is.
    RCP_ASSIGN(Fd probe, open_beneath(dir_fd, path, O_PATH));
    if (::fstat(probe.get(), &st) != 0) return sys_error("stat '" + shown + "'");
    if (!S_ISDIR(st.st_mode)) {
      // Opened now; its error, if any, is the file's when its turn comes.
      auto holder = std::make_shared<Result<SourceFile>>(open_source_file(dir_fd, path, shown, true, devices));
      out.files.push_back([holder]() -> Result<SourceFile> { return std::move(*holder); });
      return out;
    }
    if (!recursive) return make_error(EISDIR, "'" + shown + "' is a directory (use -r)");
    // Reopened for listing; O_DIRECTORY refuses anything swapped in meanwhile.
    RCP_ASSIGN(Fd d, open_beneath(dir_fd, path, O_RDONLY | O_DIRECTORY));
    dir = std::make_shared<Fd>(std::move(d));
  } else {
    if (::fstatat(dir_fd, path.c_str(), &st, 0) != 0 || !S_ISDIR(st.st_mode)) {
      out.files.push_back(
          [dir_fd, path, shown, devices]() { return open_source_file(dir_fd, path, shown, false, devices); });
      return out;
    }
    if (!recursive) return make_error(EISDIR, "'" + shown + "' is a directory (use -r)");
    int dfd = ::openat(dir_fd, path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return sys_error("'" + shown + "'");
    dir = std::make_shared<Fd>(dfd);
  }
  out.tree = true;
  std::string base = base_name(path);
  if (base == "/" || base == ".") base.clear();
  RCP_ASSIGN(out.files, tree_sources(std::move(dir), base, st.st_mode, shown, out.skipped));
  return out;
}

}  // namespace rcp
