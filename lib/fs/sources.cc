#include "fs/sources.h"

#include "fs/filetime.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

Result<SourceFile> finish_source_file(SourceFile f, const struct stat& now, bool device, const std::string& path,
                                      std::string shown) {
  f.meta = meta_of(now);
  if (device) {
    RCP_ASSIGN(f.size, block_device_size(f.fd.get(), shown));
    // Sent as a regular file: a disk's image is as private as the disk (the
    // node's bits say who may open /dev).
    f.meta.mode = S_IFREG | 0600;
    f.meta.rdev = 0;
  } else {
    f.size = static_cast<uint64_t>(now.st_size);
    f.no_holes = static_cast<uint64_t>(now.st_blocks) * 512 >= f.size;
    f.dev = now.st_dev;
    f.ino = now.st_ino;
    f.nlink = now.st_nlink;
  }
  f.name = base_name(path);
  f.shown = std::move(shown);
  return f;
}

}  // namespace

Status clear_nonblock(int fd, const std::string& shown) {
  if (::fcntl(fd, F_SETFL, 0) != 0) return sys_error("fcntl '" + shown + "'");  // (no other F_SETFL flag was set)
  return {};
}

Result<SourceFile> open_source_file(int dir_fd, const std::string& path, std::string shown, bool beneath,
                                    bool devices) {
  // Never open() what could block or act: a FIFO's open waits for a writer
  // for good (64 gets of one once held 64 daemon threads), a device's open
  // may do anything. O_PATH resolves the name without opening the object,
  // and fstat on it says what it is (open_inspected_file).
  RCP_ASSIGN(Fd probe, open_at(dir_fd, path, O_PATH, beneath, shown));
  struct stat st;
  if (::fstat(probe.get(), &st) != 0) return sys_error("stat '" + shown + "'");
  return open_inspected_file(dir_fd, path, st, std::move(shown), beneath, devices);
}

Result<SourceFile> open_inspected_file(int dir_fd, const std::string& path, const struct stat& st, std::string shown,
                                       bool beneath, bool devices) {
  // Only a regular file (or, asked for, a block device) is opened for
  // reading — O_NONBLOCK, in case the name was swapped for a FIFO since st —
  // and sent only if it is the very inode inspected.
  if (S_ISDIR(st.st_mode)) return make_error(EISDIR, "'" + shown + "' is a directory");
  const bool device = devices && S_ISBLK(st.st_mode);
  if (!S_ISREG(st.st_mode) && !device)
    return make_error(EINVAL, fmt::format("'{}' is {}: refused, only regular files and directories are sent{}", shown,
                                          kind_of(st.st_mode),
                                          S_ISBLK(st.st_mode) ? " (--copy-devices sends a block device's contents)" : ""));
  if (g_between_probe_and_open) g_between_probe_and_open(path);
  SourceFile f;
  RCP_ASSIGN(f.fd, open_at(dir_fd, path, O_RDONLY | O_NONBLOCK, beneath, shown));
  struct stat now;
  if (::fstat(f.fd.get(), &now) != 0) return sys_error("stat '" + shown + "'");
  if (now.st_dev != st.st_dev || now.st_ino != st.st_ino || (now.st_mode & S_IFMT) != (st.st_mode & S_IFMT))
    return make_error(EAGAIN, "'" + shown + "' was replaced while being opened: not sent");
  return finish_source_file(std::move(f), now, device, path, std::move(shown));
}

Result<SourceFile> open_listed_file(int dir_fd, const std::string& leaf, std::string shown, bool confined) {
  // The walk's getdents said "regular file": open the name itself, with no
  // O_PATH probe first (the tree walk's 10,000 x 4 KiB push: 9 syscalls per
  // file on the sending side, 5 of them the probe's openat2, fstat and
  // close and the two fcntl). O_NOFOLLOW refuses a symlink swapped in,
  // O_NONBLOCK keeps a FIFO swapped in from blocking the open, and the fstat
  // on the opened file refuses anything but a regular file — as rsync, which
  // opens a file its directory listing called regular.
  SourceFile f;
  if (confined) {
    RCP_ASSIGN(f.fd, open_at(dir_fd, leaf, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY, true, shown));
  } else {
    RCP_ASSIGN(f.fd, open_at(dir_fd, leaf, O_RDONLY | O_NONBLOCK | O_NOCTTY, false, shown));
  }
  struct stat now;
  if (::fstat(f.fd.get(), &now) != 0) return sys_error("stat '" + shown + "'");
  if (!S_ISREG(now.st_mode))
    return make_error(EAGAIN, fmt::format("'{}' was replaced by {} while being listed: not sent", shown, kind_of(now.st_mode)));
  return finish_source_file(std::move(f), now, false, leaf, std::move(shown));
}

Result<SourceFile> open_source_entry(int dir_fd, const std::string& path, std::string shown, bool beneath) {
  RCP_ASSIGN(Fd probe, open_at(dir_fd, path, O_PATH | O_NOFOLLOW, beneath, shown));
  struct stat st;
  if (::fstat(probe.get(), &st) != 0) return sys_error("stat '" + shown + "'");
  if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
    return make_error(EAGAIN, "'" + shown + "' was replaced while being listed: not sent");
  SourceFile f;
  f.meta = meta_of(st);
  if (S_ISLNK(st.st_mode)) {
    // readlinkat on an O_PATH descriptor of the link itself, with "": the
    // very link inspected, whatever happens to the name meanwhile.
    std::string target(4096, '\0');
    const ssize_t n = ::readlinkat(probe.get(), "", target.data(), target.size());
    if (n < 0) return sys_error("readlink '" + shown + "'");
    if (static_cast<size_t>(n) >= target.size()) return make_error(ENAMETOOLONG, "symlink '" + shown + "' target too long");
    target.resize(static_cast<size_t>(n));
    if (target.empty()) return make_error(EINVAL, "symlink '" + shown + "' has an empty target");
    f.meta.link_target = std::move(target);
  }
  f.name = base_name(path);
  f.shown = std::move(shown);
  return f;
}

WalkOptions walk_options(const Preserve& p) {
  WalkOptions w;
  w.links = p.links;
  w.copy_links = p.copy_links;
  w.devices = p.devices;
  w.specials = p.specials;
  return w;
}

SourceOpener skipped_entry(std::string note) {
  return [note = std::move(note)]() -> Result<SourceFile> {
    SourceFile f;
    f.skip_note = note;
    return f;
  };
}

SourceOpener failed_entry(Error e) {
  return [e = std::move(e)]() -> Result<SourceFile> { return e; };
}

namespace {
Result<SourceFile> vanished_or(Error e) {
  if (e.code != ENOENT && e.code != ESTALE) return e;
  SourceFile f;
  f.vanished_err = e.code;
  f.skip_note = "file has vanished: " + e.message();
  return f;
}
}  // namespace

SourceOpener listed_entry_failed(Error e) {
  return [e = std::move(e)]() -> Result<SourceFile> { return vanished_or(e); };
}

SourceOpener listed(SourceOpener op) {
  return [op = std::move(op)]() -> Result<SourceFile> {
    auto r = op();
    if (!r.ok()) return vanished_or(r.error());
    return r;
  };
}

SourceStream stream_of(std::vector<SourceOpener> files) {
  auto v = std::make_shared<std::vector<SourceOpener>>(std::move(files));
  auto i = std::make_shared<size_t>(0);
  return [v, i]() -> std::optional<SourceOpener> {
    if (*i == v->size()) return std::nullopt;
    return std::move((*v)[(*i)++]);
  };
}

SourceStream chain(size_t count, std::function<SourceStream(size_t)> part) {
  struct State {
    size_t count;
    std::function<SourceStream(size_t)> part;
    size_t next = 0;
    SourceStream cur;
  };
  auto st = std::make_shared<State>(State{count, std::move(part), 0, {}});
  return [st]() -> std::optional<SourceOpener> {
    for (;;) {
      if (st->cur) {
        if (auto e = st->cur()) return e;
        st->cur = nullptr;
      }
      if (st->next == st->count) return std::nullopt;
      st->cur = st->part(st->next++);
    }
  };
}

std::vector<SourceOpener> drain(SourceStream& s) {
  std::vector<SourceOpener> out;
  while (auto e = s()) out.push_back(std::move(*e));
  return out;
}

namespace {

/// A directory's entry (no data); `st` is its stat (mode, mtime, owner).
SourceOpener dir_entry(std::string name, std::string shown, const struct stat& st, std::shared_ptr<Fd> dir) {
  EntryMeta m = meta_of(st);
  m.mode = S_IFDIR | (m.mode & 07777);
  return [name = std::move(name), shown = std::move(shown), m, dir = std::move(dir)]() -> Result<SourceFile> {
    SourceFile f;
    f.is_dir = true;
    f.dir = dir;
    f.meta = m;
    f.name = name;
    f.shown = shown;
    return f;
  };
}

/// The walk of one tree, depth first, names sorted, parents before their
/// contents (a sink can tell when a directory is complete: --delete). It
/// holds one open directory and its sorted names per level, nothing per
/// file already sent.
class TreeWalk {
 public:
  static constexpr size_t kMaxDepth = 256;
  TreeWalk(std::string base, std::string shown, ExpandOptions opt)
      : base_(std::move(base)), shown_(std::move(shown)), opt_(std::move(opt)), w_(opt_.walk) {
    w_.beneath = opt_.beneath;
  }

  Status enter(std::shared_ptr<Fd> dir, std::string rel) {
    if (stack_.size() >= kMaxDepth)
      return make_error(ELOOP, fmt::format("'{}/{}': directory tree deeper than {} levels", shown_, rel, kMaxDepth));
    struct stat st {};
    if (::fstat(dir->get(), &st) != 0) return sys_error("stat '" + shown_ + (rel.empty() ? "" : "/" + rel) + "'");
    Frame f{std::move(dir), std::move(rel), {}, 0, st.st_dev, st.st_ino};
    int dup_fd = ::dup(f.dir->get());
    if (dup_fd < 0) return sys_error("dup");
    DIR* d = ::fdopendir(dup_fd);
    if (!d) {
      ::close(dup_fd);
      return sys_error("opendir '" + shown_ + (f.rel.empty() ? "" : "/" + f.rel) + "'");
    }
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") f.names.emplace_back(std::move(n), e->d_type);
    }
    ::closedir(d);
    std::sort(f.names.begin(), f.names.end());
    stack_.push_back(std::move(f));
    return {};
  }

  std::optional<SourceOpener> next() {
    while (!stack_.empty()) {
      Frame& f = stack_.back();
      if (f.i == f.names.size()) {
        stack_.pop_back();
        continue;
      }
      auto [n, type] = std::move(f.names[f.i++]);
      const std::string rel = f.rel.empty() ? n : f.rel + "/" + n;
      std::string name = base_.empty() ? rel : base_ + "/" + rel, eshown = shown_ + "/" + rel;
      // A regular file needs no stat here: whoever sends it opens it and
      // takes size and mode from fstat on that fd. Trusting d_type saves a
      // syscall per file; DT_UNKNOWN gets the stat.
      mode_t m = S_IFREG;
      struct stat st {};
      bool followed = false;
      if (type != DT_REG) {
        if (::fstatat(f.dir->get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
          return listed_entry_failed(sys_error("stat '" + eshown + "'"));
        if (S_ISLNK(st.st_mode) && w_.copy_links) {
          // -L: what the link names; dangling, or (in an export) leading
          // outside it: skipped.
          if (!follow(f, n, rel, st)) {
            if (auto s = skip(eshown, "a dangling symlink, or one leading outside the tree")) return s;
            continue;
          }
          followed = true;
        }
        m = st.st_mode;
      }
      const bool is_dir = S_ISDIR(m);
      if (opt_.filter && opt_.filter->excluded(name, is_dir)) continue;
      if (S_ISREG(m)) {
        // Opened confined to the tree (a symlink swapped in is refused),
        // unless a push follows symlinks (-L): then the user's links lead
        // where they lead. A followed link in an export: beneath its root.
        const bool via_root = followed && w_.beneath;
        auto dir = via_root ? stack_.front().dir : f.dir;
        const std::string at = via_root ? rel : n;
        const bool confine = !followed || w_.beneath;
        const bool listed_reg = !followed && type == DT_REG;  // no stat of it yet: getdents said regular
        return listed([dir, at, confine, listed_reg, name = std::move(name), eshown = std::move(eshown)]() -> Result<SourceFile> {
          RCP_ASSIGN(SourceFile sf, listed_reg ? open_listed_file(dir->get(), at, eshown)
                                               : open_source_file(dir->get(), at, eshown, confine));
          sf.name = name;
          return sf;
        });
      }
      if (is_dir) {
        if (std::any_of(stack_.begin(), stack_.end(),
                        [&](const Frame& a) { return a.dev == st.st_dev && a.ino == st.st_ino; })) {
          // A followed symlink back into its own tree (-L).
          if (auto s = skip(eshown, "a symlink loop")) return s;
          continue;
        }
        {
          Result<Fd> sub = make_error(EINVAL, "");
          if (!followed) {
            sub = open_beneath(f.dir->get(), n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
          } else if (w_.beneath) {
            sub = open_beneath(stack_.front().dir->get(), rel, O_RDONLY | O_DIRECTORY);
          } else {
            const int fd = ::openat(f.dir->get(), n.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            sub = fd >= 0 ? Result<Fd>(Fd(fd)) : Result<Fd>(sys_error("'" + eshown + "'"));
          }
          if (!sub.ok()) return listed_entry_failed(make_error(sub.error().code, "'" + eshown + "'"));
          auto subdir = std::make_shared<Fd>(std::move(sub.value()));
          if (Status e = enter(subdir, rel); !e.ok()) return failed_entry(e.error());
          return dir_entry(std::move(name), std::move(eshown), st, std::move(subdir));
        }
      }
      {
        const unsigned t = m & S_IFMT;
        if ((t == S_IFLNK && w_.links) || ((t == S_IFCHR || t == S_IFBLK) && w_.devices) ||
            ((t == S_IFIFO || t == S_IFSOCK) && w_.specials)) {
          return listed([dir = f.dir, n, name = std::move(name), eshown = std::move(eshown)]() -> Result<SourceFile> {
            RCP_ASSIGN(SourceFile sf, open_source_entry(dir->get(), n, eshown, true));
            sf.name = name;
            return sf;
          });
        }
      }
      if (auto s = skip(eshown, "not a regular file or directory")) return s;
    }
    return std::nullopt;
  }

 private:
  struct Frame {
    std::shared_ptr<Fd> dir;
    std::string rel;
    std::vector<std::pair<std::string, unsigned char>> names;
    size_t i = 0;
    dev_t dev = 0;  // the directory's identity: a followed symlink back into
    ino_t ino = 0;  // a directory being walked is a loop (-L)
  };

  /// What the symlink `n` (at `rel`) in f names, followed (-L): beneath the
  /// walked tree's root when the walk is confined (an export).
  bool follow(const Frame& f, const std::string& n, const std::string& rel, struct stat& st) const {
    if (!w_.beneath) return ::fstatat(f.dir->get(), n.c_str(), &st, 0) == 0;
    auto fd = open_beneath(stack_.front().dir->get(), rel, O_PATH);
    return fd.ok() && ::fstat(fd->get(), &st) == 0;
  }

  /// An entry not sent: told to on_skip (nothing returned), or a note to send.
  std::optional<SourceOpener> skip(const std::string& eshown, const char* why) const {
    if (opt_.on_skip) {
      opt_.on_skip(eshown);
      return std::nullopt;
    }
    return skipped_entry(fmt::format("skipping '{}': {}", eshown, why));
  }

  std::string base_, shown_;
  ExpandOptions opt_;
  WalkOptions w_;
  std::vector<Frame> stack_;
};

/// Is a path naming this (lstat'ed) entry sent as the entry itself (-l, -D)?
bool sent_as_entry(const struct stat& st, const WalkOptions& w) {
  const unsigned t = st.st_mode & S_IFMT;
  return (t == S_IFLNK && w.links && !w.copy_links) || ((t == S_IFCHR || t == S_IFBLK) && w.devices) ||
         ((t == S_IFIFO || t == S_IFSOCK) && w.specials);
}

}  // namespace

Result<SourceSet> expand_source(int dir_fd, const std::string& path, const std::string& shown, bool beneath,
                                bool recursive, bool devices, const WalkOptions& wopt) {
  ExpandOptions o;
  o.walk = wopt;
  o.devices = devices;
  o.beneath = beneath;
  o.recursive = recursive;
  return expand_source(dir_fd, path, shown, o);
}

Result<SourceSet> expand_source(int dir_fd, const std::string& path, const std::string& shown,
                                const ExpandOptions& opt) {
  SourceSet out;
  struct stat st;
  std::shared_ptr<Fd> dir;
  const bool beneath = opt.beneath;
  std::string name = opt.name ? *opt.name : base_name(path);
  auto excluded = [&](bool is_dir) {
    return opt.filter && !name.empty() && name != "/" && name != "." && opt.filter->excluded(name, is_dir);
  };
  const WalkOptions& w = opt.walk;
  if (opt.known_regular && !beneath) {
    if (excluded(false)) {
      out.files = stream_of({});
      return out;
    }
    out.files = stream_of({[dir_fd, path, shown, n = opt.name]() -> Result<SourceFile> {
      RCP_ASSIGN(SourceFile f, open_listed_file(dir_fd, path, shown, false));
      if (n) f.name = *n;
      return f;
    }});
    return out;
  }
  // -l/-D: a path naming a symlink (without a trailing '/', which asks to
  // follow it, as in rsync) or a special file is sent as that entry.
  if ((w.links || w.devices || w.specials) && !path.empty() && path.back() != '/') {
    bool entry = false;
    if (beneath) {
      auto probe = open_beneath(dir_fd, path, O_PATH | O_NOFOLLOW);
      entry = probe.ok() && ::fstat(probe->get(), &st) == 0 && sent_as_entry(st, w);
    } else {
      entry = ::fstatat(dir_fd, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && sent_as_entry(st, w);
    }
    if (entry) {
      if (excluded(false)) {
        out.files = stream_of({});
        return out;
      }
      out.files = stream_of({[dir_fd, path, shown, beneath, n = opt.name]() -> Result<SourceFile> {
        RCP_ASSIGN(SourceFile f, open_source_entry(dir_fd, path, shown, beneath));
        if (n) f.name = *n;
        return f;
      }});
      return out;
    }
  }
  if (beneath) {
    // One O_PATH open resolves the path, confined, without opening what it
    // names (a FIFO would block); fstat on it says what it is.
    RCP_ASSIGN(Fd probe, open_beneath(dir_fd, path, O_PATH));
    if (::fstat(probe.get(), &st) != 0) return sys_error("stat '" + shown + "'");
    if (!S_ISDIR(st.st_mode)) {
      if (excluded(false)) {
        out.files = stream_of({});
        return out;
      }
      // Opened now, past the probe just made; its error, if any, is the
      // file's when its turn comes.
      auto r = open_inspected_file(dir_fd, path, st, shown, true, opt.devices);
      if (r.ok() && opt.name) r->name = *opt.name;
      auto holder = std::make_shared<Result<SourceFile>>(std::move(r));
      out.files = stream_of({[holder]() -> Result<SourceFile> { return std::move(*holder); }});
      return out;
    }
  } else if (const bool found = ::fstatat(dir_fd, path.c_str(), &st, 0) == 0; !found || !S_ISDIR(st.st_mode)) {
    if (excluded(false)) {
      out.files = stream_of({});
      return out;
    }
    // A regular file is opened as the walk opens one (no probe: the open's
    // own fstat refuses anything swapped in); anything else, or a path not
    // there, is probed when its turn comes and refused or reported then.
    const bool regular = found && S_ISREG(st.st_mode);
    out.files = stream_of({[dir_fd, path, shown, n = opt.name, devices = opt.devices, regular]() -> Result<SourceFile> {
      RCP_ASSIGN(SourceFile f, regular ? open_listed_file(dir_fd, path, shown, false)
                                       : open_source_file(dir_fd, path, shown, false, devices));
      if (n) f.name = *n;
      return f;
    }});
    return out;
  }
  if (excluded(true)) {
    out.files = stream_of({});
    return out;
  }
  // "dir/" (rsync's rule) sends what is in dir, as "/" and "." do.
  if (name == "/" || name == "." || (!opt.name && path.size() > 1 && path.back() == '/')) name.clear();
  if (!opt.recursive && opt.dir_alone && !name.empty()) {
    // (Opened for its xattrs, -X/-A; confined like the probe above.)
    auto d = beneath ? open_beneath(dir_fd, path, O_RDONLY | O_DIRECTORY)
                     : Result<Fd>(Fd(::openat(dir_fd, path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)));
    auto dp = d.ok() && d->valid() ? std::make_shared<Fd>(std::move(d.value())) : nullptr;
    out.files = stream_of({dir_entry(name, shown, st, std::move(dp))});
    out.tree = true;
    return out;
  }
  if (!opt.recursive) return make_error(EISDIR, "'" + shown + "' is a directory (use -r)");
  if (beneath) {
    // Reopened for listing; O_DIRECTORY refuses anything swapped in meanwhile.
    RCP_ASSIGN(Fd d, open_beneath(dir_fd, path, O_RDONLY | O_DIRECTORY));
    dir = std::make_shared<Fd>(std::move(d));
  } else {
    int dfd = ::openat(dir_fd, path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return sys_error("'" + shown + "'");
    dir = std::make_shared<Fd>(dfd);
  }
  out.tree = true;
  out.contents = name.empty();
  auto walk = std::make_shared<TreeWalk>(name, shown, opt);
  RCP_TRY(walk->enter(dir, ""));
  auto top = name.empty() ? std::optional<SourceOpener>{} : std::optional<SourceOpener>{dir_entry(name, shown, st, dir)};
  out.files = [walk, top = std::move(top)]() mutable -> std::optional<SourceOpener> {
    if (top) {
      auto t = std::move(top);
      top.reset();
      return t;
    }
    return walk->next();
  };
  return out;
}

}  // namespace rcp
