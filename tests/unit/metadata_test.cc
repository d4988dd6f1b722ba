// Making and dressing entries that are not written through a file (fs/metadata.h):
// symlinks, hard links and special files made under a temp name and renamed into place,
// and the owner / mode / mtime applied to them and to open files — each failure named,
// and no temporary name left behind. What a copy keeps end to end is meta_suite's.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "fs/metadata.h"
#include "scratch_dir.h"
#include "util/fd.h"

using namespace rcp;

namespace {

struct Scratch : test::ScratchDir {
  /// Entries whose names mark them as one of make_and_rename's temporaries.
  int temps() const {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().filename().string().find(".rcp-") != std::string::npos) ++n;
    return n;
  }
  void file(const std::string& name) const {
    const int f = ::open(at(name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    REQUIRE(f >= 0);
    ::close(f);
  }
};

using test::says;

}  // namespace

TEST_CASE("a symlink target that is empty or holds a NUL is refused before anything is made") {
  Scratch s;
  for (const std::string& target : {std::string(), std::string("a\0b", 3)}) {
    Status st = make_symlink(s.fd.get(), "l", target, "dest/l");
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == EINVAL);
    CHECK_MESSAGE(says(st.error(), "symlink 'dest/l' with an empty or NUL-holding target"), st.error().message());
  }
  CHECK(std::filesystem::is_empty(s.dir));
}

TEST_CASE("a symlink replaces a file in place, and a directory in the way is refused, leaving no temp name") {
  Scratch s;
  s.file("l");
  REQUIRE(make_symlink(s.fd.get(), "l", "target", "dest/l").ok());
  CHECK(std::filesystem::read_symlink(s.at("l")) == "target");
  REQUIRE(::mkdir(s.at("d").c_str(), 0755) == 0);
  Status st = make_symlink(s.fd.get(), "d", "target", "dest/d");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == EISDIR);
  CHECK_MESSAGE(says(st.error(), "symlink 'dest/d': a directory is in the way"), st.error().message());
  CHECK(std::filesystem::is_directory(std::filesystem::symlink_status(s.at("d"))));
  CHECK(s.temps() == 0);
}

TEST_CASE("an entry that cannot be made fails with the reason, not as a name collision") {
  // Only EEXIST (the random temp name taken) is worth another name.
  Scratch s;
  Status st = make_hardlink(s.fd.get(), "missing", s.fd.get(), "h", "dest/h");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ENOENT);
  CHECK_MESSAGE(says(st.error(), "hard link 'dest/h'"), st.error().message());
  CHECK(s.temps() == 0);
}

TEST_CASE("a hard link already in place (a second -H run) leaves no temp name behind") {
  // rename(2) onto another link of the same inode succeeds and does nothing.
  Scratch s;
  s.file("a");
  REQUIRE(make_hardlink(s.fd.get(), "a", s.fd.get(), "b", "dest/b").ok());
  REQUIRE(make_hardlink(s.fd.get(), "a", s.fd.get(), "b", "dest/b").ok());
  struct stat a, b;
  REQUIRE(::stat(s.at("a").c_str(), &a) == 0);
  REQUIRE(::stat(s.at("b").c_str(), &b) == 0);
  CHECK(a.st_ino == b.st_ino);
  CHECK(a.st_nlink == 2);
  CHECK(s.temps() == 0);
}

TEST_CASE("make_special makes FIFOs and refuses a regular file's mode") {
  Scratch s;
  Status bad = make_special(s.fd.get(), "r", S_IFREG | 0644, 0, "dest/r");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == EINVAL);
  CHECK_MESSAGE(says(bad.error(), "'dest/r' is not a device, FIFO or socket"), bad.error().message());
  CHECK_FALSE(std::filesystem::exists(std::filesystem::symlink_status(s.at("r"))));
  REQUIRE(make_special(s.fd.get(), "p", S_IFIFO | 0640, 0, "dest/p").ok());
  CHECK(std::filesystem::is_fifo(s.at("p")));
  CHECK(s.temps() == 0);
}

TEST_CASE("metadata that cannot be applied to an entry is named: chown, chmod, set times") {
  Scratch s;
  EntryMeta m;
  m.mode = S_IFIFO | 0600;
  m.mtime_ns = 1'000'000'000;
  SUBCASE("chmod") {
    Preserve p;
    p.perms = true;
    Status st = apply_entry_meta(s.fd.get(), "gone", m, p, "dest/gone");
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ENOENT);
    CHECK_MESSAGE(says(st.error(), "chmod 'dest/gone'"), st.error().message());
  }
  SUBCASE("set times") {
    Preserve p;
    p.times = true;
    Status st = apply_entry_meta(s.fd.get(), "gone", m, p, "dest/gone");
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ENOENT);
    CHECK_MESSAGE(says(st.error(), "set times of 'dest/gone'"), st.error().message());
  }
  SUBCASE("chown (an error other than a non-member's EPERM on the group)") {
    Preserve p;
    p.group = true;
    Status st = apply_entry_meta(s.fd.get(), "gone", m, p, "dest/gone");
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ENOENT);
    CHECK_MESSAGE(says(st.error(), "chown 'dest/gone'"), st.error().message());
  }
  SUBCASE("all of it applied to an entry that is there") {
    REQUIRE(make_special(s.fd.get(), "p", m.mode, 0, "dest/p").ok());
    Preserve p;
    p.perms = p.times = true;
    m.mode = S_IFIFO | 0604;
    REQUIRE(apply_entry_meta(s.fd.get(), "p", m, p, "dest/p").ok());
    struct stat st;
    REQUIRE(::lstat(s.at("p").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0604);
    CHECK(st.st_mtim.tv_sec == 1);
  }
}

TEST_CASE("metadata that cannot be applied to an open file is named: chown, chmod, set times") {
  // An O_PATH descriptor: fchown, fchmod and futimens all refuse it (EBADF).
  Scratch s;
  s.file("f");
  Fd path(::open(s.at("f").c_str(), O_PATH | O_CLOEXEC));
  REQUIRE(path.valid());
  EntryMeta m;
  m.mtime_ns = 1'000'000'000;
  Preserve none;
  Status chmod = apply_fd_meta(path.get(), m, none, 0600, "dest/f");
  REQUIRE_FALSE(chmod.ok());
  CHECK_MESSAGE(says(chmod.error(), "chmod 'dest/f'"), chmod.error().message());
  Preserve times;
  times.times = true;
  Status t = apply_fd_meta(path.get(), m, times, -1, "dest/f");
  REQUIRE_FALSE(t.ok());
  CHECK_MESSAGE(says(t.error(), "set times of 'dest/f'"), t.error().message());
  Preserve group;
  group.group = true;
  Status g = apply_fd_meta(path.get(), m, group, -1, "dest/f");
  REQUIRE_FALSE(g.ok());
  CHECK_MESSAGE(says(g.error(), "chown 'dest/f'"), g.error().message());
}

TEST_CASE("a receiver that is not root leaves a group it may not set as it is, and reports any other chown failure") {
  // As rsync: -g by a user who is not a member of the group is not an error.
  // Needs root to become another user; a child process does it.
  if (!running_as_root()) {
    MESSAGE("SKIPPED: needs root to run the check as another user");
    return;
  }
  Scratch s;
  s.file("mine");
  s.file("theirs");
  REQUIRE(::chown(s.dir.c_str(), 65534, 65534) == 0);
  REQUIRE(::chown(s.at("mine").c_str(), 65534, 65534) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0)
      ::_exit(10);
    EntryMeta m;
    m.gid = 0;  // root's group: not one of nobody's
    Preserve p;
    p.group = p.numeric_ids = true;
    Fd mine(::open(s.at("mine").c_str(), O_RDONLY | O_CLOEXEC));
    if (!mine.valid()) ::_exit(11);
    if (!apply_fd_meta(mine.get(), m, p, -1, "dest/mine").ok()) ::_exit(12);  // EPERM on the group: left as is
    // Any other EPERM is an error: chmod of a file it does not own.
    Fd theirs(::open(s.at("theirs").c_str(), O_RDONLY | O_CLOEXEC));
    if (!theirs.valid()) ::_exit(13);
    Status st = apply_fd_meta(theirs.get(), m, Preserve{}, 0600, "dest/theirs");
    if (st.ok() || st.error().code != EPERM || !says(st.error(), "chmod 'dest/theirs'")) ::_exit(14);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  struct stat st;
  REQUIRE(::stat(s.at("mine").c_str(), &st) == 0);
  CHECK(st.st_gid == 65534);
}
