#include "fs/metadata.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <random>
#include <unordered_map>
#include <vector>

namespace rcp {

uint32_t Preserve::bits() const {
  return (perms ? kPerms : 0) | (times ? kTimes : 0) | (owner ? kOwner : 0) | (group ? kGroup : 0) |
         (links ? kLinks : 0) | (copy_links ? kCopyLinks : 0) | (devices ? kDevices : 0) |
         (specials ? kSpecials : 0) | (hard_links ? kHardLinks : 0) | (sparse ? kSparse : 0) |
         (numeric_ids ? kNumericIds : 0) | (discard ? kDiscard : 0) |
         (xattrs ? kXattrs : 0) | (acls ? kAcls : 0);
}

Preserve Preserve::from_bits(uint32_t b) {
  Preserve p;
  p.perms = b & kPerms;
  p.times = b & kTimes;
  p.owner = b & kOwner;
  p.group = b & kGroup;
  p.links = b & kLinks;
  p.copy_links = b & kCopyLinks;
  p.devices = b & kDevices;
  p.specials = b & kSpecials;
  p.hard_links = b & kHardLinks;
  p.sparse = b & kSparse;
  p.numeric_ids = b & kNumericIds;
  p.discard = b & kDiscard;
  p.xattrs = b & kXattrs;
  p.acls = b & kAcls;
  return p;
}

Preserve Preserve::archive() {
  Preserve p;
  p.perms = p.times = p.owner = p.group = p.links = p.devices = p.specials = true;
  return p;
}

int64_t to_ns(const timespec& ts) { return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec; }

timespec from_ns(int64_t ns) {
  int64_t sec = ns / 1000000000, rem = ns % 1000000000;
  if (rem < 0) {
    rem += 1000000000;
    --sec;
  }
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(sec);
  ts.tv_nsec = static_cast<long>(rem);
  return ts;
}

EntryMeta meta_of(const struct stat& st) {
  EntryMeta m;
  m.mode = st.st_mode & (S_IFMT | 07777);
  m.mtime_ns = to_ns(st.st_mtim);
  m.uid = st.st_uid;
  m.gid = st.st_gid;
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) m.rdev = st.st_rdev;
  return m;
}

namespace {

/// A small per-thread cache; cleared when full, so it never grows without bound.
template <class K, class V>
struct Cache {
  std::unordered_map<K, V> map;
  template <class F>
  V get(const K& k, F&& make) {
    if (auto it = map.find(k); it != map.end()) return it->second;
    if (map.size() >= 1024) map.clear();
    return map.emplace(k, make()).first->second;
  }
};

}  // namespace

std::string user_name(uint32_t uid) {
  static thread_local Cache<uint32_t, std::string> c;
  return c.get(uid, [&] {
    passwd pw, *res = nullptr;
    std::vector<char> buf(16384);
    return ::getpwuid_r(uid, &pw, buf.data(), buf.size(), &res) == 0 && res ? std::string(pw.pw_name) : std::string();
  });
}

std::string group_name(uint32_t gid) {
  static thread_local Cache<uint32_t, std::string> c;
  return c.get(gid, [&] {
    group gr, *res = nullptr;
    std::vector<char> buf(16384);
    return ::getgrgid_r(gid, &gr, buf.data(), buf.size(), &res) == 0 && res ? std::string(gr.gr_name) : std::string();
  });
}

uint32_t map_uid(const std::string& name, uint32_t id, bool numeric) {
  if (numeric || name.empty()) return id;
  static thread_local Cache<std::string, int64_t> c;
  const int64_t v = c.get(name, [&]() -> int64_t {
    passwd pw, *res = nullptr;
    std::vector<char> buf(16384);
    return ::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &res) == 0 && res ? int64_t{pw.pw_uid} : -1;
  });
  return v >= 0 ? static_cast<uint32_t>(v) : id;
}

uint32_t map_gid(const std::string& name, uint32_t id, bool numeric) {
  if (numeric || name.empty()) return id;
  static thread_local Cache<std::string, int64_t> c;
  const int64_t v = c.get(name, [&]() -> int64_t {
    group gr, *res = nullptr;
    std::vector<char> buf(16384);
    return ::getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &res) == 0 && res ? int64_t{gr.gr_gid} : -1;
  });
  return v >= 0 ? static_cast<uint32_t>(v) : id;
}

bool running_as_root() { return ::geteuid() == 0; }

unsigned preserved_bits(unsigned mode, bool is_dir, bool as_root) {
  if (as_root) return mode & 07777;
  return mode & (is_dir ? 03777u : 01777u);
}

Ownership ownership_for(const EntryMeta& m, const Preserve& p) {
  Ownership o;
  if (p.owner && running_as_root()) o.uid = map_uid(m.user, m.uid, p.numeric_ids);
  if (p.group) o.gid = map_gid(m.group, m.gid, p.numeric_ids);
  return o;
}

namespace {

/// chown's result: EPERM on the group alone, as a non-root receiver, is the
/// expected "not a member" and is ignored (rsync does the same).
Status chown_result(int rc, const Ownership& o, const std::string& shown) {
  if (rc == 0) return {};
  if (errno == EPERM && o.uid < 0 && !running_as_root()) return {};
  return sys_error("chown '" + shown + "'");
}

}  // namespace

Status apply_fd_meta(int fd, const EntryMeta& m, const Preserve& p, int mode_bits, const std::string& shown) {
  const Ownership o = ownership_for(m, p);
  if (o.uid >= 0 || o.gid >= 0) {
    const int rc = ::fchown(fd, o.uid >= 0 ? static_cast<uid_t>(o.uid) : static_cast<uid_t>(-1),
                            o.gid >= 0 ? static_cast<gid_t>(o.gid) : static_cast<gid_t>(-1));
    RCP_TRY(chown_result(rc, o, shown));
  }
  // After chown, which clears setuid/setgid.
  if (mode_bits >= 0 && ::fchmod(fd, static_cast<mode_t>(mode_bits) & 07777) != 0) return sys_error("chmod '" + shown + "'");
  if (p.times) {
    const timespec ts[2] = {{0, UTIME_OMIT}, from_ns(m.mtime_ns)};
    if (::futimens(fd, ts) != 0) return sys_error("set times of '" + shown + "'");
  }
  return {};
}

Status apply_entry_meta(int dir_fd, const std::string& leaf, const EntryMeta& m, const Preserve& p,
                        const std::string& shown) {
  const Ownership o = ownership_for(m, p);
  if (o.uid >= 0 || o.gid >= 0) {
    const int rc = ::fchownat(dir_fd, leaf.c_str(), o.uid >= 0 ? static_cast<uid_t>(o.uid) : static_cast<uid_t>(-1),
                              o.gid >= 0 ? static_cast<gid_t>(o.gid) : static_cast<gid_t>(-1), AT_SYMLINK_NOFOLLOW);
    RCP_TRY(chown_result(rc, o, shown));
  }
  if (p.perms && !S_ISLNK(m.mode) && ::fchmodat(dir_fd, leaf.c_str(), m.mode & 07777, 0) != 0)
    return sys_error("chmod '" + shown + "'");
  if (p.times) {
    const timespec ts[2] = {{0, UTIME_OMIT}, from_ns(m.mtime_ns)};
    if (::utimensat(dir_fd, leaf.c_str(), ts, AT_SYMLINK_NOFOLLOW) != 0) return sys_error("set times of '" + shown + "'");
  }
  return {};
}

namespace {

/// Makes an entry under a fresh hidden name with `make`, then renames it
/// onto leaf (replacing a file or symlink, never a directory).
template <class Make>
Status make_and_rename(int dir_fd, const std::string& leaf, const std::string& shown, const char* what, Make&& make) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const std::string stem = "." + leaf.substr(0, 200) + ".rcp-";
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string tmp = stem;
    for (int i = 0; i < 8; ++i) tmp += "abcdefghijklmnopqrstuvwxyz0123456789"[rng() % 36];
    if (make(tmp.c_str()) != 0) {
      if (errno == EEXIST) continue;
      return sys_error(std::string(what) + " '" + shown + "'");
    }
    struct stat st;
    if (::fstatat(dir_fd, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
      ::unlinkat(dir_fd, tmp.c_str(), 0);
      return make_error(EISDIR, std::string(what) + " '" + shown + "': a directory is in the way");
    }
    if (::renameat(dir_fd, tmp.c_str(), dir_fd, leaf.c_str()) != 0) {
      Error e = sys_error(std::string(what) + " '" + shown + "'");
      ::unlinkat(dir_fd, tmp.c_str(), 0);
      return e;
    }
    // rename(2) over another link of the same inode "does nothing, and
    // returns success": a hard link that is already in place (a second -H
    // run) would leave its temporary name behind. The name is ours (made
    // above under a random name), so removing it is safe.
    if (::unlinkat(dir_fd, tmp.c_str(), 0) != 0 && errno != ENOENT)
      return sys_error(std::string(what) + " '" + shown + "': removing its temporary name");
    return {};
  }
  return make_error(EEXIST, std::string(what) + " '" + shown + "': no free temporary name");
}

}  // namespace

Status make_symlink(int dir_fd, const std::string& leaf, const std::string& target, const std::string& shown) {
  if (target.empty() || target.find('\0') != std::string::npos)
    return make_error(EINVAL, "symlink '" + shown + "' with an empty or NUL-holding target");
  return make_and_rename(dir_fd, leaf, shown, "symlink",
                         [&](const char* tmp) { return ::symlinkat(target.c_str(), dir_fd, tmp); });
}

Status make_hardlink(int from_dir, const std::string& from_leaf, int dir_fd, const std::string& leaf,
                     const std::string& shown) {
  return make_and_rename(dir_fd, leaf, shown, "hard link",
                         [&](const char* tmp) { return ::linkat(from_dir, from_leaf.c_str(), dir_fd, tmp, 0); });
}

Status make_special(int dir_fd, const std::string& leaf, uint32_t mode, uint64_t rdev, const std::string& shown) {
  const mode_t type = mode & S_IFMT;
  if (type != S_IFIFO && type != S_IFSOCK && type != S_IFCHR && type != S_IFBLK)
    return make_error(EINVAL, "'" + shown + "' is not a device, FIFO or socket");
  return make_and_rename(dir_fd, leaf, shown, "mknod", [&](const char* tmp) {
    return ::mknodat(dir_fd, tmp, type | (mode & 0777 & ~07000), static_cast<dev_t>(rdev));
  });
}

}  // namespace rcp
