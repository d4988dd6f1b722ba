#include "fs/itemize.h"

#include <sys/stat.h>

namespace rcp {

OldEntry old_entry_of(const struct stat& st) {
  OldEntry o;
  o.exists = true;
  o.type = st.st_mode & S_IFMT;
  o.size = static_cast<uint64_t>(st.st_size);
  o.mtime_ns = to_ns(st.st_mtim);
  o.mode = st.st_mode & 07777;
  o.uid = st.st_uid;
  o.gid = st.st_gid;
  return o;
}

uint16_t item_changes(const OldEntry& old, unsigned type, uint64_t size, const EntryMeta& in, const Preserve& p,
                      bool data, bool checksum, bool hard_link) {
  if (type == 0) type = S_IFREG;
  const bool file = type == S_IFREG;
  if (!old.exists || old.type != type) {
    uint16_t c = kChangeNew;
    if (hard_link) c |= kChangeHardLink;
    else if (file && data) c |= kChangeData;
    return c;
  }
  // An existing entry of that name and type: rsync lists a hard link only
  // when it makes it, and a file the update rules skip not at all.
  if (hard_link || (file && !data)) return 0;
  uint16_t c = file ? kChangeData : 0;
  if (file && old.size != size) c |= kChangeSize;
  if (file && checksum && old.size == size && old.mtime_ns == in.mtime_ns) c |= kChangeContent;
  if (type == S_IFLNK && old.link_target != in.link_target) c |= kChangeContent;
  // A regular file written gets the source's mtime whatever -t says (the
  // quick check needs it); other entries only with -t. Symlinks' own times
  // are not compared (rsync needs lutimes support to set them either).
  if ((file || (p.times && type != S_IFLNK)) && old.mtime_ns != in.mtime_ns) c |= kChangeTime;
  if (p.perms && type != S_IFLNK && old.mode != (in.mode & 07777)) c |= kChangePerms;
  if (p.owner && old.uid != in.uid) c |= kChangeOwner;
  if (p.group && old.gid != in.gid) c |= kChangeGroup;
  return c;
}

uint16_t xattr_changes(const std::vector<Xattr>& old, const std::vector<Xattr>& now) {
  auto bit = [](const std::string& name) {
    return name.rfind("system.posix_acl_", 0) == 0 ? kChangeAcl : kChangeXattr;
  };
  auto find = [](const std::vector<Xattr>& v, const std::string& name) -> const Xattr* {
    for (const Xattr& x : v)
      if (x.name == name) return &x;
    return nullptr;
  };
  uint16_t c = 0;
  for (const Xattr& x : now) {
    const Xattr* o = find(old, x.name);
    if (!o || o->value != x.value) c |= bit(x.name);
  }
  for (const Xattr& x : old)
    if (!find(now, x.name)) c |= bit(x.name);
  return c;
}

namespace {
char type_char(unsigned type) {
  switch (type) {
    case S_IFDIR: return 'd';
    case S_IFLNK: return 'L';
    case S_IFCHR:
    case S_IFBLK: return 'D';
    case S_IFIFO:
    case S_IFSOCK: return 'S';
    default: return 'f';
  }
}
}  // namespace

std::string itemize_line(uint16_t changes, unsigned type, const std::string& name, bool sender) {
  if (changes == 0) return {};
  if (type == 0) type = S_IFREG;
  std::string s(11, '.');
  if (changes & kChangeHardLink) s[0] = 'h';
  else if (changes & kChangeData) s[0] = sender ? '<' : '>';
  else if (changes & kChangeNew) s[0] = 'c';
  s[1] = type_char(type);
  if (changes & kChangeNew) {
    s.replace(2, 9, 9, '+');
  } else {
    // rsync's YXcstpoguax: 'u' (position 9) is the access time, never set here.
    const char letters[] = "cstpog.ax";
    const uint16_t bits[] = {kChangeContent, kChangeSize, kChangeTime, kChangePerms, kChangeOwner,
                             kChangeGroup, 0, kChangeAcl, kChangeXattr};
    for (int i = 0; i < 9; ++i)
      if (changes & bits[i]) s[2 + i] = letters[i];
  }
  return s + " " + name + (type == S_IFDIR && (name.empty() || name.back() != '/') ? "/" : "");
}

std::string itemize_deleted(const std::string& name, bool is_dir) {
  return "*deleting   " + name + (is_dir ? "/" : "");
}

}  // namespace rcp
