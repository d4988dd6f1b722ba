#include "fs/prune.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <fmt/core.h>

#include "fs/path.h"
#include "util/fd.h"

namespace rcp {

namespace {

constexpr size_t kMaxPruneErrors = 100;
constexpr int kMaxPruneDepth = 256;

/// A directory beneath `at`, no symlink anywhere on the way (not even one
/// that stays inside): deletion never acts anywhere a link points.
Result<Fd> open_dir_nofollow(int at, const std::string& rel) {
  open_how how{};
  how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const std::string p = rel.empty() ? "." : rel;
  long fd = syscall(SYS_openat2, at, p.c_str(), &how, sizeof how);
  if (fd < 0) return sys_error("'" + p + "'");
  return Fd(static_cast<int>(fd));
}

/// The names in a directory (not "." and ".."), with their d_type.
Result<std::vector<std::pair<std::string, unsigned char>>> list_dir(int fd, const std::string& shown) {
  int dup_fd = ::dup(fd);
  if (dup_fd < 0) return sys_error("dup");
  DIR* d = ::fdopendir(dup_fd);
  if (!d) {
    ::close(dup_fd);
    return sys_error("opendir '" + shown + "'");
  }
  std::vector<std::pair<std::string, unsigned char>> out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.emplace_back(std::move(n), e->d_type);
  }
  ::closedir(d);
  return out;
}

/// A copy's own temp file (".NAME.rcp-XXXXXXXX", fs/tempfile.h): it may be
/// a file in flight of this very session; never pruned. Nor is a --partial
/// file (".NAME.rcp-partial"): it is what the next run resumes from (rsync
/// likewise protects its --partial-dir from --delete).
bool is_temp_name(const std::string& n) {
  auto ends = [&](std::string_view suffix, size_t min_stem) {
    return n.size() > suffix.size() + min_stem && n[0] == '.' &&
           n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends(".rcp-partial", 1)) return true;
  return n.size() > 14 && n[0] == '.' && n.compare(n.size() - 13, 5, ".rcp-") == 0;
}

std::string join(const std::string& dir, const std::string& name) { return dir.empty() ? name : dir + "/" + name; }

}  // namespace

Pruner::Pruner(int dest_fd, PruneOptions opt) : dest_fd_(dest_fd), opt_(std::move(opt)) {
  stack_.push_back({"", {}, opt_.root});
}

void Pruner::saw(const std::string& name, bool is_dir) {
  auto clean = clean_relative(name);
  if (!clean.ok() || clean->empty() || clean.value() != name) return;
  const std::string parent = dir_name(name);
  // Directories that are not ancestors of this entry are complete.
  auto ancestor = [&](const std::string& d) {
    return d.empty() || parent == d || (parent.size() > d.size() && parent.compare(0, d.size(), d) == 0 &&
                                        parent[d.size()] == '/');
  };
  while (!stack_.empty() && !ancestor(stack_.back().rel)) {
    complete(stack_.back());
    stack_.pop_back();
  }
  // A parent never sent as a directory entry (a file named alone, a
  // --files-from path): its names are recorded, it is not pruned.
  if (stack_.empty() || stack_.back().rel != parent) stack_.push_back({parent, {}, false});
  stack_.back().names.insert(base_name(name));
  if (is_dir) stack_.push_back({name, {}, true});
}

void Pruner::finish() {
  while (!stack_.empty()) {
    complete(stack_.back());
    stack_.pop_back();
  }
  if (io_error_) {
    if (!queued_.empty()) error("errors at the source: deletions skipped");
    queued_.clear();
    return;
  }
  for (const std::string& rel : queued_) {
    auto dir = open_dir_nofollow(dest_fd_, dir_name(rel));
    if (!dir.ok()) {
      error(fmt::format("delete '{}': {}", rel, dir.error().message()));
      continue;
    }
    remove_entry(dir->get(), dir_name(rel), base_name(rel));
  }
  queued_.clear();
}

void Pruner::complete(Frame& f) {
  if (!f.in_scope || io_error_) return;
  auto dir = open_dir_nofollow(dest_fd_, f.rel);
  if (!dir.ok()) {
    // Never created (its entry failed), or replaced by a symlink: nothing to prune there.
    if (dir.error().code != ENOENT) error(fmt::format("delete in '{}': {}", f.rel, dir.error().message()));
    return;
  }
  auto names = list_dir(dir->get(), f.rel);
  if (!names.ok()) {
    error(names.error().message());
    return;
  }
  for (auto& [n, type] : names.value()) {
    if (f.names.count(n) || is_temp_name(n)) continue;
    const std::string rel = join(f.rel, n);
    bool is_dir = type == DT_DIR;
    if (type == DT_UNKNOWN) {
      struct stat st;
      is_dir = ::fstatat(dir->get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    }
    if (opt_.filter && opt_.filter->excluded(rel, is_dir)) continue;  // protected
    if (opt_.after)
      queued_.push_back(rel);
    else
      remove_entry(dir->get(), f.rel, n);
  }
}

void Pruner::remove_entry(int dir_fd, const std::string& dir_rel, const std::string& name) {
  const std::string rel = join(dir_rel, name);
  struct stat st;
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) error(fmt::format("delete '{}': {}", rel, std::strerror(errno)));
    return;
  }
  if (!S_ISDIR(st.st_mode)) {
    if (opt_.dry_run || ::unlinkat(dir_fd, name.c_str(), 0) == 0)
      removed(rel, false);
    else
      error(fmt::format("delete '{}': {}", rel, std::strerror(errno)));
    return;
  }
  if (auto s = remove_tree(dir_fd, name, rel, 0); !s.ok()) error("delete " + s.error().message());
}

Result<bool> Pruner::remove_tree(int parent_fd, const std::string& name, const std::string& rel, int depth) {
  if (depth >= kMaxPruneDepth) return make_error(ELOOP, fmt::format("'{}': deeper than {} levels", rel, kMaxPruneDepth));
  RCP_ASSIGN(Fd d, open_dir_nofollow(parent_fd, name));
  RCP_ASSIGN(auto names, list_dir(d.get(), rel));
  bool kept = false;
  for (auto& [n, type] : names) {
    const std::string sub = rel + "/" + n;
    struct stat st;
    if (::fstatat(d.get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const bool is_dir = S_ISDIR(st.st_mode);
    if (opt_.filter && opt_.filter->excluded(sub, is_dir)) {  // protected: its directory stays
      kept = true;
      continue;
    }
    if (is_dir) {
      auto gone = remove_tree(d.get(), n, sub, depth + 1);
      if (!gone.ok()) error("delete " + gone.error().message());
      if (!gone.ok() || !*gone) kept = true;
    } else if (opt_.dry_run || ::unlinkat(d.get(), n.c_str(), 0) == 0) {
      removed(sub, false);
    } else {
      error(fmt::format("delete '{}': {}", sub, std::strerror(errno)));
      kept = true;
    }
  }
  if (kept) return false;  // rsync leaves a directory that still holds protected entries
  if (!opt_.dry_run && ::unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) != 0) return sys_error("'" + rel + "'");
  removed(rel, true);
  return true;
}

void Pruner::error(std::string line) {
  if (errors_.size() < kMaxPruneErrors)
    errors_.push_back(std::move(line));
  else
    ++errors_dropped_;
}

}  // namespace rcp
