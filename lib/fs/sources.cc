#include "fs/sources.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/path.h"

namespace rcp {

Result<SourceFile> open_source_file(int dir_fd, const std::string& path, std::string shown, bool beneath) {
  SourceFile f;
  if (beneath) {
    RCP_ASSIGN(f.fd, open_beneath(dir_fd, path, O_RDONLY));
  } else {
    int fd = ::openat(dir_fd, path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return sys_error("'" + shown + "'");
    f.fd.reset(fd);
  }
  struct stat st;
  if (::fstat(f.fd.get(), &st) != 0) return sys_error("stat '" + shown + "'");
  if (S_ISDIR(st.st_mode)) return make_error(EISDIR, "'" + shown + "' is a directory");
  if (!S_ISREG(st.st_mode)) return make_error(EINVAL, "'" + shown + "' is not a regular file");
  f.size = static_cast<uint64_t>(st.st_size);
  f.mode = st.st_mode & 0777;
  f.name = base_name(path);
  f.shown = std::move(shown);
  return f;
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
                                bool recursive) {
  SourceSet out;
  struct stat st;
  std::shared_ptr<Fd> dir;
  if (beneath) {
    // One open resolves the path, confined; fstat on it says what it is.
    RCP_ASSIGN(Fd probe, open_beneath(dir_fd, path, O_RDONLY));
    if (::fstat(probe.get(), &st) != 0) return sys_error("stat '" + shown + "'");
    if (!S_ISDIR(st.st_mode)) {
      // Opened now; its error, if any, is the file's when its turn comes.
      auto holder = std::make_shared<Result<SourceFile>>(open_source_file(dir_fd, path, shown, true));
      out.files.push_back([holder]() -> Result<SourceFile> { return std::move(*holder); });
      return out;
    }
    if (!recursive) return make_error(EISDIR, "'" + shown + "' is a directory (use -r)");
    dir = std::make_shared<Fd>(std::move(probe));
  } else {
    if (::fstatat(dir_fd, path.c_str(), &st, 0) != 0 || !S_ISDIR(st.st_mode)) {
      out.files.push_back([dir_fd, path, shown]() { return open_source_file(dir_fd, path, shown, false); });
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
