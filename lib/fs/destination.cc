#include "fs/destination.h"

#include "fs/filetime.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/core.h>

#include "fs/path.h"

namespace rcp {

namespace {

/// What a stat says stands at a destination path, for a refusal.
const char* node_kind(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISDIR(m)) return "a directory";
  return "not a regular file";
}

/// Whether the directory open as `dir_fd` has no entry but "." and "..":
/// read through a descriptor of its own, so dir_fd's offset is untouched.
/// false when it cannot be read (then every name is looked up, as before).
bool dir_is_empty(int dir_fd) {
  const int fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  DIR* dp = ::fdopendir(fd);
  if (!dp) {
    ::close(fd);
    return false;
  }
  bool empty = true;
  errno = 0;
  while (dirent* e = ::readdir(dp)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      empty = false;
      break;
    }
  }
  if (errno != 0) empty = false;
  ::closedir(dp);
  return empty;
}

Result<Destination> finish_destination(Result<Fd> as_dir, Result<Fd> parent, std::string leaf,
                                       bool multi, std::string shown) {
  Destination d;
  d.shown = std::move(shown);
  if (as_dir.ok()) {
    d.dir = std::move(as_dir.value());
    d.is_dir = true;
    // An empty directory is as fresh as a made one: its names need no
    // lookup (10,000 files pushed as arguments into one: a failed fstatat
    // each, ~0.8 s of the daemon's CPU per GiB, bench/README.md).
    d.empty = dir_is_empty(d.dir.get());
    return d;
  }
  const int e = as_dir.error().code;
  if (e != ENOTDIR && e != ENOENT) return as_dir.error();
  if (multi) return make_error(ENOTDIR, "destination '" + d.shown + "' is not an existing directory (needed for several sources or -r)");
  if (!parent.ok()) return parent.error();
  if (!is_plain_name(leaf)) return make_error(EINVAL, "destination '" + d.shown + "' has no file name");
  d.dir = std::move(parent.value());
  d.leaf = std::move(leaf);
  return d;
}

}  // namespace

namespace {
/// A dry run's destination directory that a real run would create: no fd,
/// so every lookup below it finds nothing (everything is new).
Destination missing_dir(std::string shown) {
  Destination d;
  d.is_dir = true;
  d.shown = std::move(shown);
  return d;
}
}  // namespace

Result<Destination> resolve_destination_beneath(int root_fd, std::string_view rel, bool multi,
                                                std::string shown, bool make_dir, bool dry_run) {
  if (make_dir) {
    multi = true;
    auto probe = open_beneath(root_fd, rel, O_PATH);
    if (!probe.ok() && probe.error().code == ENOENT && dry_run) return missing_dir(std::move(shown));
    if (!probe.ok() && probe.error().code == ENOENT) {
      auto made = make_dirs_beneath(root_fd, rel, 0755);
      if (!made.ok()) return make_error(made.error().code, "cannot create destination '" + shown + "': " + made.error().context);
    }
  }
  auto as_dir = open_beneath(root_fd, rel, O_RDONLY | O_DIRECTORY);
  if (as_dir.ok() || rel.empty())
    return finish_destination(std::move(as_dir), make_error(ENOENT, shown), "", multi, shown);
  auto parent = open_beneath(root_fd, dir_name(rel), O_RDONLY | O_DIRECTORY);
  return finish_destination(std::move(as_dir), std::move(parent), base_name(rel), multi, std::move(shown));
}

namespace {

/// mkdir -p for the user's own path: every missing component, 0777 less the umask.
Status make_local_dirs(const std::string& path) {
  std::string cur;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    cur = path.substr(0, j);
    if (j > i && ::mkdir(cur.c_str(), 0777) != 0 && errno != EEXIST)  // (j == i: "a//b", "dst/")
      return sys_error("cannot create destination directory '" + cur + "'");
    i = j + 1;
  }
  return {};
}

}  // namespace

Result<Destination> resolve_destination_local(const std::string& path, bool multi, LocalDeviceOptions dev,
                                              bool make_dir, bool dry_run) {
  // A trailing '/' names a directory, whatever else is said.
  if (path.size() > 1 && path.back() == '/') multi = true;
  struct stat st;
  if (make_dir) {
    multi = true;
    if (dry_run && ::stat(path.c_str(), &st) != 0 && errno == ENOENT) return missing_dir(path);
    if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) RCP_TRY(make_local_dirs(path));
  }
  if (::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
    if (!S_ISBLK(st.st_mode) || !dev.write_devices)
      return make_error(EEXIST, fmt::format("destination '{}' is {}: refused, it is never replaced{}", path,
                                            node_kind(st.st_mode),
                                            S_ISBLK(st.st_mode) ? " (--write-devices writes the device in place)" : ""));
    if (multi) return make_error(ENOTDIR, "destination '" + path + "' is a block device: it takes exactly one file");
    Destination d;
    d.shown = path;
    RCP_ASSIGN(d.device, open_device_target(path, path, dev.force));
    return d;
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  Result<Fd> as_dir = fd >= 0 ? Result<Fd>(Fd(fd)) : Result<Fd>(sys_error("'" + path + "'"));
  if (as_dir.ok()) return finish_destination(std::move(as_dir), make_error(ENOENT, path), "", multi, path);
  std::string parent_path = dir_name(path);
  if (parent_path.empty()) parent_path.push_back('.');  // (not = ".": GCC 12 warns falsely, -Wrestrict)
  int pfd = ::open(parent_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  Result<Fd> parent = pfd >= 0 ? Result<Fd>(Fd(pfd)) : Result<Fd>(sys_error("directory '" + parent_path + "'"));
  return finish_destination(std::move(as_dir), std::move(parent), base_name(path), multi, path);
}

Status check_replaceable(int dir_fd, const std::string& name, const std::string& shown) {
  struct stat st;
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return {};
  return check_replaceable(st, shown);
}

Status check_replaceable(const struct stat& st, const std::string& shown) {
  if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode)) return {};  // (a directory: rename fails)
  return make_error(EEXIST, fmt::format("'{}' is {}: refused, it is never replaced", shown, node_kind(st.st_mode)));
}

namespace {

/// Is `name` (from FILE_BEGIN) what the pull asked for?
/// A requested name with wildcards (a remote glob the daemon expands inside
/// the module) admits every name its pattern matches, with the daemon's
/// flags (FNM_PERIOD: a leading dot is never matched by a wildcard).
bool expected_one(const std::string& base, bool tree, const std::string& name, bool is_dir) {
  const size_t slash = name.find('/');
  const std::string top = name.substr(0, slash);
  const bool glob = base.find_first_of("*?[") != std::string::npos;
  const bool top_ok = glob ? ::fnmatch(base.c_str(), top.c_str(), FNM_PERIOD) == 0 : top == base;
  if (!tree) return !is_dir && slash == std::string::npos && top_ok;
  return base.empty() || (top_ok && (slash == std::string::npos || slash + 1 < name.size()));
}

/// --files-from: the listed path itself, or (with -r) a name below it.
bool expected_relative(const std::string& path, bool tree, const std::string& name) {
  if (name == path) return true;
  return tree && name.size() > path.size() + 1 && name.compare(0, path.size(), path) == 0 && name[path.size()] == '/';
}

bool expected(const ExpectedNames& x, const std::string& name, bool is_dir) {
  if (x.relative) {
    if (expected_relative(x.base, x.tree, name)) return true;
    for (const auto& m : x.more)
      if (expected_relative(m, x.tree, name)) return true;
    return false;
  }
  if (expected_one(x.base, x.tree, name, is_dir)) return true;
  for (const auto& m : x.more)
    if (expected_one(m, x.tree, name, is_dir)) return true;
  return false;
}

}  // namespace

PlacedEntry DestinationTree::place(const std::string& name, unsigned type, unsigned mode, const std::string& peer,
                                   const IncomingFile& in, bool no_data) {
  const bool is_dir = type == S_IFDIR, is_file = type == 0 || type == S_IFREG;
  const bool dry = in.rules && in.rules->dry_run;
  const uint64_t size = in.size;
  PlacedEntry e;
  std::string target;
  int dir_fd = dest_.dir.get();
  e.mode = mode & 0777;
  if (dest_.expect && !expected(*dest_.expect, name, is_dir)) {
    e.shown = dest_.shown;
    e.error = fmt::format("refused {} '{}' from {}: not what was asked for ('{}'{}{})", is_dir ? "directory" : "file",
                          name, peer, dest_.expect->base,
                          dest_.expect->more.empty() ? "" : fmt::format(" and {} more", dest_.expect->more.size()),
                          dest_.expect->tree ? " or below" : "");
    ++seen_;
    return e;
  }
  if (dest_.device) {
    PlacedEntry d = place_on_device(is_dir, size);
    if (dry && d.error.empty()) {  // (nothing is written to it: the dup'ed fd is closed unused)
      d.tmp = TempFile();
      d.dry_write = true;
    }
    return d;
  }
  if (dest_.is_dir) {
    e.shown = dest_.shown + (dest_.shown.empty() || dest_.shown.back() == '/' ? "" : "/") + name;
    // A name may carry directories (recursive copies), but only plain
    // components: no "..", no absolute path, nothing to clean away.
    auto clean = clean_relative(name);
    if (!clean.ok() || clean->empty() || clean.value() != name) {
      e.error = fmt::format("refused unsafe file name '{}' from {}", name, peer);
    } else if (is_dir) {
      e.rel = name;
      const std::string parent = dir_name(name);
      e.old = look(parent.empty() ? dest_.dir.get() : existing_subdir(parent)->get(), base_name(name));
    } else {
      target = base_name(name);
      const std::string parent = dir_name(name);
      if (!parent.empty() && dry) {
        e.parent = existing_subdir(parent);
        dir_fd = e.parent->get();
      } else if (!parent.empty()) {
        auto pd = subdir(parent, 0755);
        if (pd.ok()) {
          e.parent = std::move(pd.value());
          dir_fd = e.parent->get();
        } else {
          e.error = pd.error().message();
        }
      }
    }
  } else {
    e.shown = dest_.shown;
    target = dest_.leaf;
    if (seen_ > 0 || is_dir)
      e.error = is_dir ? "a directory was sent to the file destination '" + dest_.shown + "'"
                       : "several files sent to the single-file destination '" + dest_.shown + "'";
  }
  ++seen_;
  if (!e.error.empty() || is_dir) return e;
  if (!is_plain_name(target)) {
    e.error = fmt::format("refused unsafe file name '{}' from {}", name, peer);
    return e;
  }
  e.dir_fd = dir_fd;
  e.leaf = target;
  // One lstat of the target serves -i, the replaceable check and the
  // update rules: each lookup of a name that is not there costs a negative
  // dentry, 15 % of the daemon's time receiving 10,000 new 4 KiB files
  // when it was done three times.
  struct stat st;
  const bool exists = !fresh_.count(dir_name(name)) && look(dir_fd, target, e.old, st);
  // A FIFO, socket or device at the destination is never replaced by a
  // file, a hard link or a symlink (only -D's own kind of entry replaces it).
  if (exists && (is_file || type == S_IFLNK)) {
    if (Status ok = check_replaceable(st, e.shown); !ok.ok()) {
      e.error = ok.error().context;
      return e;
    }
  }
  if (!is_file || no_data) return e;  // a symlink, special or hard link: made by its maker at its end
  // An existing file keeps its permission bits; a new one gets the source's
  // less the umask (-p: exactly the source's). Decided before the temp file
  // exists, which is created with the final bits: its data is never readable more widely.
  ExistingEntry old;
  if (exists)
    old = {true, S_ISREG(st.st_mode), static_cast<uint64_t>(st.st_size), mtime_ns_of(st)};
  if (in.rules && decide_update(*in.rules, old, in.size, in.mtime_ns) == UpdateAction::skip) {
    e.skip = true;
    return e;
  }
  if (dry) {  // would be written: nothing opened, nothing created
    e.dry_write = true;
    return e;
  }
  if (in.rules && use_basis(*in.rules, old)) {
    // O_NOFOLLOW: a symlink swapped in since the fstatat is refused, never
    // followed; a file that is not the one stat'ed is simply not used.
    Fd b(::openat(dir_fd, target.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat bs;
    if (b.valid() && ::fstat(b.get(), &bs) == 0 && S_ISREG(bs.st_mode) && bs.st_ino == st.st_ino && bs.st_dev == st.st_dev) {
      e.basis = std::move(b);
      e.basis_size = static_cast<uint64_t>(bs.st_size);
    }
  }
  if (preserve_.perms)
    e.mode = preserved_bits(mode, false, running_as_root() && preserve_.trusted_sender);  // commit() applies it after the owner
  else if (old.exists && old.regular)
    e.mode = st.st_mode & 0777;
  else
    e.mode = umasked(mode);
  if (in.rules && in.rules->partial) {
    // Busy (another session has it), or not a plain file: a private temp file instead.
    auto part = TempFile::open_partial(dir_fd, target, e.shown, e.mode & 0777);
    if (part.ok()) {
      e.tmp = std::move(part.value());
      return e;
    }
  }
  // A new file: unnamed until linked at commit (fs/tempfile.h); a file
  // that is there is replaced by rename, which linkat cannot do.
  Result<TempFile> tmp = make_error(ENOTSUP, "");
  if (!exists) tmp = TempFile::create_unnamed(dir_fd, target, e.shown, e.mode & 0777);
  if (!tmp.ok()) tmp = TempFile::create(dir_fd, target, e.shown, e.mode & 0777);
  if (tmp.ok())
    e.tmp = std::move(tmp.value());
  else
    e.error = tmp.error().message();
  return e;
}

PlacedEntry DestinationTree::place_on_device(bool is_dir, uint64_t size) {
  PlacedEntry e;
  e.shown = dest_.shown;
  const DeviceTarget& d = *dest_.device;
  if (seen_++ > 0 || is_dir) {
    e.error = is_dir ? "a directory was sent to the block device '" + d.shown + "'"
                     : "several files sent to the block device '" + d.shown + "': it takes exactly one";
    return e;
  }
  if (size > d.size) {
    e.error = fmt::format("block device '{}' ({} bytes) is smaller than the file sent ({} bytes): nothing written",
                          d.shown, d.size, size);
    return e;
  }
  const int fd = ::fcntl(d.fd.get(), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) {
    e.error = sys_error("dup '" + d.shown + "'").message();
    return e;
  }
  e.tmp = TempFile::on_device(Fd(fd), d.shown);
  return e;
}

Status DestinationTree::make_dir(const std::string& rel, unsigned mode, const std::string& /*shown*/) {
  // mkdir applies the umask; an existing directory (or one made earlier in
  // this session) is left as it is.
  RCP_TRY(subdir(rel, mode & 0777));
  return {};
}

Result<std::shared_ptr<Fd>> DestinationTree::parent_of(const std::string& name) {
  if (!dest_.is_dir) return std::make_shared<Fd>(::dup(dest_.dir.get()));
  const std::string parent = dir_name(name);
  if (parent.empty()) return std::make_shared<Fd>(::dup(dest_.dir.get()));
  return subdir(parent, 0755);
}

std::shared_ptr<Fd> DestinationTree::existing_subdir(const std::string& rel) {
  if (auto it = dirs_.find(rel); it != dirs_.end()) return it->second;
  // One component at a time, none a symlink: what make_dirs_beneath would
  // open (or fail on) in a real run.
  auto clean = clean_relative(rel);
  Fd cur;
  if (clean.ok() && dest_.dir.valid()) {
    auto root = open_beneath(dest_.dir.get(), "", O_RDONLY | O_DIRECTORY);
    if (root.ok()) cur = std::move(root.value());
    size_t i = 0;
    while (cur.valid() && i < clean->size()) {
      size_t j = clean->find('/', i);
      if (j == std::string::npos) j = clean->size();
      auto next = open_beneath(cur.get(), clean->substr(i, j - i), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      cur = next.ok() ? std::move(next.value()) : Fd();
      i = j + 1;
    }
  }
  auto p = std::make_shared<Fd>(std::move(cur));
  if (!p->valid()) return p;  // (not cached: a real run's subdir() makes it later)
  if (dirs_.size() >= kDirCache) {
    dirs_.clear();
    fresh_.clear();
  }
  dirs_.emplace(rel, p);
  return p;
}

OldEntry DestinationTree::look(int dir_fd, const std::string& leaf) {
  OldEntry o;
  struct stat st;
  look(dir_fd, leaf, o, st);
  return o;
}

bool DestinationTree::look(int dir_fd, const std::string& leaf, OldEntry& o, struct stat& st) {
  o = {};
  if (dir_fd < 0 || ::fstatat(dir_fd, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
  o = old_entry_of(st);
  if (S_ISLNK(st.st_mode)) {
    char buf[4096];
    const ssize_t n = ::readlinkat(dir_fd, leaf.c_str(), buf, sizeof buf);
    if (n > 0) o.link_target.assign(buf, static_cast<size_t>(n));
  }
  return true;
}

Result<std::shared_ptr<Fd>> DestinationTree::subdir(const std::string& rel, unsigned mode) {
  if (auto it = dirs_.find(rel); it != dirs_.end()) return it->second;
  bool made = false;
  RCP_ASSIGN(Fd fd, make_dirs_beneath(dest_.dir.get(), rel, mode, &made));
  // Bounded: a cleared cache costs one reopen per directory, never a leak
  // of fds for a tree with many directories.
  if (dirs_.size() >= kDirCache) {
    dirs_.clear();
    fresh_.clear();
  }
  if (made) fresh_.insert(rel);
  auto p = std::make_shared<Fd>(std::move(fd));
  dirs_.emplace(rel, p);
  return p;
}

}  // namespace rcp
