// -i lines (fs/itemize.h): which letters a change shows, against rsync's
// format (rsync 3.2 -i output for the same cases, by hand: ">f+++++++++",
// ">f.st......", "cd+++++++++", ".d..t......", "cL+++++++++", "*deleting").
#include <doctest/doctest.h>
#include <sys/stat.h>

#include "fs/itemize.h"

using namespace rcp;

namespace {
OldEntry file(uint64_t size, int64_t mtime, unsigned mode = 0644) {
  OldEntry o;
  o.exists = true;
  o.type = S_IFREG;
  o.size = size;
  o.mtime_ns = mtime;
  o.mode = mode;
  return o;
}
EntryMeta meta(int64_t mtime, unsigned mode = 0100644) {
  EntryMeta m;
  m.mtime_ns = mtime;
  m.mode = mode;
  return m;
}
}  // namespace

TEST_CASE("itemize: a new file, directory, symlink and hard link") {
  Preserve p = Preserve::archive();
  CHECK(itemize_line(item_changes({}, S_IFREG, 10, meta(1), p, true, false, false), S_IFREG, "a", false) ==
        ">f+++++++++ a");
  CHECK(itemize_line(item_changes({}, 0, 10, meta(1), p, true, false, false), 0, "a", true) == "<f+++++++++ a");
  CHECK(itemize_line(item_changes({}, S_IFDIR, 0, meta(1, 040755), p, false, false, false), S_IFDIR, "d", false) ==
        "cd+++++++++ d/");
  CHECK(itemize_line(item_changes({}, S_IFLNK, 0, meta(1, 0120777), p, false, false, false), S_IFLNK, "l", false) ==
        "cL+++++++++ l");
  CHECK(itemize_line(item_changes({}, S_IFREG, 0, meta(1), p, false, false, true), S_IFREG, "h", false) ==
        "hf+++++++++ h");
  CHECK(itemize_line(item_changes({}, S_IFIFO, 0, meta(1, 010644), p, false, false, false), S_IFIFO, "p", false) ==
        "cS+++++++++ p");
  // A directory where a file was: another type is a new entry.
  CHECK(item_changes(file(3, 1), S_IFDIR, 0, meta(1, 040755), p, false, false, false) == kChangeNew);
}

TEST_CASE("itemize: an updated file shows what differs") {
  Preserve p = Preserve::archive();
  CHECK(itemize_line(item_changes(file(5, 1), S_IFREG, 10, meta(2), p, true, false, false), S_IFREG, "a", false) ==
        ">f.st...... a");
  CHECK(itemize_line(item_changes(file(10, 1), S_IFREG, 10, meta(2), p, true, false, false), S_IFREG, "a", false) ==
        ">f..t...... a");
  CHECK(itemize_line(item_changes(file(10, 2, 0600), S_IFREG, 10, meta(2), p, true, true, false), S_IFREG, "a",
                     false) == ">fc..p..... a");
  // -p not asked: the mode is not compared.
  Preserve np;
  CHECK(item_changes(file(10, 2, 0600), S_IFREG, 10, meta(3), np, true, false, false) == (kChangeData | kChangeTime));
}

TEST_CASE("itemize: what is left alone prints nothing") {
  Preserve p = Preserve::archive();
  CHECK(item_changes(file(10, 2), S_IFREG, 10, meta(2), p, false, false, false) == 0);  // skipped by the rules
  CHECK(itemize_line(0, S_IFREG, "a", false).empty());
  OldEntry d;
  d.exists = true;
  d.type = S_IFDIR;
  d.mode = 0755;
  d.mtime_ns = 7;
  CHECK(item_changes(d, S_IFDIR, 0, meta(7, 040755), p, false, false, false) == 0);
  CHECK(itemize_line(item_changes(d, S_IFDIR, 0, meta(8, 040700), p, false, false, false), S_IFDIR, "d", false) ==
        ".d..tp..... d/");
  OldEntry l;
  l.exists = true;
  l.type = S_IFLNK;
  l.link_target = "x";
  EntryMeta lm = meta(1, 0120777);
  lm.link_target = "x";
  CHECK(item_changes(l, S_IFLNK, 0, lm, p, false, false, false) == 0);
  lm.link_target = "y";
  CHECK(itemize_line(item_changes(l, S_IFLNK, 0, lm, p, false, false, false), S_IFLNK, "l", false) == ".Lc........ l");
  // An existing entry where a hard link goes: no line.
  CHECK(item_changes(file(10, 2), S_IFREG, 0, meta(2), p, false, false, true) == 0);
}

TEST_CASE("itemize: owner and group only when kept") {
  Preserve p = Preserve::archive();
  OldEntry o = file(1, 1);
  o.uid = 5;
  o.gid = 6;
  EntryMeta m = meta(1);
  m.uid = 7;
  m.gid = 8;
  CHECK(itemize_line(item_changes(o, S_IFREG, 1, m, p, true, false, false), S_IFREG, "a", false) == ">f....og... a");
  p.owner = p.group = false;
  CHECK(item_changes(o, S_IFREG, 1, m, p, true, false, false) == kChangeData);
}

TEST_CASE("itemize: deletions") {
  CHECK(itemize_deleted("a/b", false) == "*deleting   a/b");
  CHECK(itemize_deleted("a/d", true) == "*deleting   a/d/");
}

TEST_CASE("itemize: -X/-A changes are rsync's 'a' (position 10) and 'x' (position 11)") {
  CHECK(itemize_line(kChangeXattr, S_IFREG, "f", false) == ".f........x f");
  CHECK(itemize_line(kChangeAcl, S_IFDIR, "d", false) == ".d.......a. d/");
  CHECK(itemize_line(kChangeData | kChangeTime | kChangeAcl | kChangeXattr, S_IFREG, "f", true) == "<f..t....ax f");
  CHECK(itemize_line(kChangeNew | kChangeData | kChangeXattr, S_IFREG, "f", false) == ">f+++++++++ f");
  CHECK(kChangeKnown == ((kChangeXattr << 1) - 1));
}

TEST_CASE("itemize: which xattrs differ (names in any order, ACLs apart)") {
  const std::vector<Xattr> a{{"user.a", "1"}, {"user.b", ""}, {"system.posix_acl_access", "acl"}};
  CHECK(xattr_changes(a, a) == 0);
  CHECK(xattr_changes(a, {a[2], a[0], a[1]}) == 0);
  CHECK(xattr_changes({}, {}) == 0);
  CHECK(xattr_changes(a, {{"user.a", "2"}, a[1], a[2]}) == kChangeXattr);  // another value
  CHECK(xattr_changes(a, {a[0], a[2]}) == kChangeXattr);                   // one removed
  CHECK(xattr_changes({a[0]}, {a[0], a[1]}) == kChangeXattr);              // one added (empty value)
  CHECK(xattr_changes(a, {a[0], a[1]}) == kChangeAcl);                     // the ACL removed
  CHECK(xattr_changes(a, {a[0], a[1], {"system.posix_acl_access", "other"}}) == kChangeAcl);
  CHECK(xattr_changes({}, {{"system.posix_acl_default", "d"}, {"user.x", ""}}) == (kChangeAcl | kChangeXattr));
}
