// Proves peer-supplied paths are cleaned, can never resolve outside the export (by "..", absolute paths or symlinks), and that temp files vanish unless committed.
#include <doctest/doctest.h>

#include <algorithm>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <cstdio>
#include <string>
#include <vector>

#include "fs/destination.h"
#include "fs/path.h"
#include "fs/tempfile.h"

using namespace rcp;

namespace {

const std::string kUtf8Name = "r\xC3\xA9sum\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC\nline.txt";  // "résumé 日本\nline.txt"

std::string cleaned(std::string_view p) {
  auto r = clean_relative(p);
  REQUIRE_MESSAGE(r.ok(), r.error().message());
  return *r;
}

void write_file(const std::string& path, const std::string& content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()));
  ::close(fd);
}

std::string read_all(int fd) {
  std::string s;
  char buf[256];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

bool same_inode(int fd, const std::string& path) {
  struct stat a {}, b {};
  if (::fstat(fd, &a) != 0 || ::stat(path.c_str(), &b) != 0) return false;
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> v;
  for (const auto& e : std::filesystem::directory_iterator(dir)) v.push_back(e.path().filename().string());
  return v;
}

/// /tmp/rcp-path-test.XXXXXX/{export/..., outside/secret}, removed on destruction.
struct Tree {
  std::string base, root, outside;
  int root_fd = -1;

  Tree() {
    char tmpl[] = "/tmp/rcp-path-test.XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    base = tmpl;
    root = base + "/export";
    outside = base + "/outside";
    REQUIRE(::mkdir(root.c_str(), 0755) == 0);
    REQUIRE(::mkdir(outside.c_str(), 0755) == 0);
    REQUIRE(::mkdir((root + "/sub").c_str(), 0755) == 0);
    write_file(outside + "/secret", "secret");
    write_file(root + "/file.txt", "top");
    write_file(root + "/sub/file.txt", "hello");
    write_file(root + "/" + kUtf8Name, "utf8");
    REQUIRE(::symlink("/etc/passwd", (root + "/link_passwd").c_str()) == 0);
    REQUIRE(::symlink("../outside/secret", (root + "/link_out").c_str()) == 0);
    REQUIRE(::symlink("../outside", (root + "/link_dir_out").c_str()) == 0);
    REQUIRE(::symlink("sub/file.txt", (root + "/link_in").c_str()) == 0);
    REQUIRE(::symlink("../file.txt", (root + "/sub/link_up_in").c_str()) == 0);
    REQUIRE(::symlink("sub", (root + "/link_dir_in").c_str()) == 0);
    REQUIRE(::symlink((root + "/file.txt").c_str(), (root + "/link_abs_in").c_str()) == 0);
    root_fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(root_fd >= 0);
  }
  ~Tree() {
    if (root_fd >= 0) ::close(root_fd);
    std::error_code ec;
    std::filesystem::remove_all(base, ec);
  }
  Tree(const Tree&) = delete;
  Tree& operator=(const Tree&) = delete;
};

/// Opens rel beneath the export and returns its content, or fails the check.
std::string open_read(const Tree& t, const std::string& rel) {
  auto r = open_beneath(t.root_fd, rel, O_RDONLY);
  REQUIRE_MESSAGE(r.ok(), rel << ": " << r.error().message());
  return read_all(r->get());
}

void expect_refused(const Tree& t, const std::string& rel) {
  CAPTURE(rel);
  auto r = open_beneath(t.root_fd, rel, O_RDONLY);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EPERM);
}

}  // namespace

TEST_CASE("clean_relative normalises harmless forms") {
  CHECK(cleaned("") == "");
  CHECK(cleaned(".") == "");
  CHECK(cleaned("./") == "");
  CHECK(cleaned("a/./b//c/") == "a/b/c");
  CHECK(cleaned("./a") == "a");
  CHECK(cleaned("a") == "a");
  CHECK(cleaned("dir with spaces/file name") == "dir with spaces/file name");
  CHECK(cleaned("new\nline/x") == "new\nline/x");
  CHECK(cleaned("résumé/日本.txt") == "résumé/日本.txt");
  CHECK(cleaned("...") == "...");
  CHECK(cleaned("..a/b..") == "..a/b..");
  CHECK(cleaned("a/.../.b") == "a/.../.b");
  CHECK(cleaned(std::string(4095, 'a')) == std::string(4095, 'a'));
}

TEST_CASE("clean_relative refuses what could leave the export") {
  auto refused = [](std::string_view p, int code) {
    CAPTURE(p);
    auto r = clean_relative(p);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == code);
  };
  refused("..", EPERM);
  refused("../x", EPERM);
  refused("a/../b", EPERM);
  refused("a/..", EPERM);
  refused("a/../", EPERM);
  refused("./..", EPERM);
  refused("/etc/passwd", EPERM);
  refused("/", EPERM);
  refused(std::string_view("a\0b", 3), EINVAL);
  refused(std::string_view("\0", 1), EINVAL);
  refused(std::string(5000, 'a'), ENAMETOOLONG);
  refused(std::string(4096, 'a'), ENAMETOOLONG);
}

TEST_CASE("split_module") {
  using P = std::pair<std::string, std::string>;
  CHECK(split_module("mod/a/b") == P{"mod", "a/b"});
  CHECK(split_module("mod") == P{"mod", ""});
  CHECK(split_module("mod/") == P{"mod", ""});
  CHECK(split_module("") == P{"", ""});
  CHECK(split_module("/x") == P{"", "x"});
  CHECK(split_module("m o d/日本") == P{"m o d", "日本"});
}

TEST_CASE("is_plain_name") {
  CHECK(is_plain_name("a"));
  CHECK(is_plain_name("..."));
  CHECK(is_plain_name("..a"));
  CHECK(is_plain_name(".hidden"));
  CHECK(is_plain_name("with space"));
  CHECK(is_plain_name("new\nline"));
  CHECK(is_plain_name("日本.txt"));
  CHECK(is_plain_name(std::string(255, 'n')));
  CHECK_FALSE(is_plain_name(std::string(256, 'n')));
  CHECK_FALSE(is_plain_name(""));
  CHECK_FALSE(is_plain_name("."));
  CHECK_FALSE(is_plain_name(".."));
  CHECK_FALSE(is_plain_name("a/b"));
  CHECK_FALSE(is_plain_name("a/"));
  CHECK_FALSE(is_plain_name("/"));
  CHECK_FALSE(is_plain_name(std::string_view("a\0b", 3)));
}

TEST_CASE("base_name and dir_name") {
  CHECK(base_name("a/b/c") == "c");
  CHECK(base_name("c") == "c");
  CHECK(base_name("a/b/") == "b");
  CHECK(base_name("a/b//") == "b");
  CHECK(base_name("/a") == "a");
  CHECK(base_name("") == "");
  CHECK(base_name("dir/日本 x.txt") == "日本 x.txt");
  CHECK(dir_name("a/b/c") == "a/b");
  CHECK(dir_name("c") == "");
  CHECK(dir_name("a/b/") == "a");
  CHECK(dir_name("/a") == "/");
  CHECK(dir_name("") == "");
  CHECK(dir_name("x/日本 x.txt") == "x");
}

TEST_CASE("open_beneath opens what is inside the export") {
  Tree t;
  CHECK(open_read(t, "file.txt") == "top");
  CHECK(open_read(t, "sub/file.txt") == "hello");
  CHECK(open_read(t, "sub/../file.txt") == "top");  // ".." that stays inside is fine for the kernel
  CHECK(open_read(t, "link_in") == "hello");         // relative symlink inside
  CHECK(open_read(t, "sub/link_up_in") == "top");    // symlink going up but staying inside
  CHECK(open_read(t, "link_dir_in/file.txt") == "hello");
  CHECK(open_read(t, kUtf8Name) == "utf8");

  auto root = open_beneath(t.root_fd, "", O_RDONLY | O_DIRECTORY);
  REQUIRE(root.ok());
  CHECK(same_inode(root->get(), t.root));

  auto created = open_beneath(t.root_fd, "sub/new \xE6\x97\xA5\n.bin", O_WRONLY | O_CREAT | O_EXCL, 0600);
  REQUIRE(created.ok());
  struct stat st {};
  CHECK(::stat((t.root + "/sub/new \xE6\x97\xA5\n.bin").c_str(), &st) == 0);

  auto missing = open_beneath(t.root_fd, "nope", O_RDONLY);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ENOENT);
}

TEST_CASE("open_beneath refuses every way out") {
  Tree t;
  expect_refused(t, "../outside/secret");
  expect_refused(t, "..");
  expect_refused(t, "../x");
  expect_refused(t, "sub/../../outside/secret");
  expect_refused(t, "link_passwd");            // absolute symlink to a system file
  expect_refused(t, "link_out");               // relative symlink leaving the export
  expect_refused(t, "link_dir_out/secret");    // symlinked directory leaving the export
  expect_refused(t, "link_abs_in");            // absolute symlink, even though it points inside
  CHECK_FALSE(open_beneath(t.root_fd, "/etc/passwd", O_RDONLY).ok());
  CHECK_FALSE(open_beneath(t.root_fd, t.outside + "/secret", O_RDONLY).ok());
  // Creating through an escaping symlink must not create anything outside.
  CHECK_FALSE(open_beneath(t.root_fd, "link_dir_out/planted", O_WRONLY | O_CREAT, 0644).ok());
  struct stat st {};
  CHECK(::stat((t.outside + "/planted").c_str(), &st) != 0);
}

TEST_CASE("resolve_destination_beneath") {
  Tree t;
  SUBCASE("existing directory") {
    auto d = resolve_destination_beneath(t.root_fd, "sub", false, "host:mod/sub");
    REQUIRE_MESSAGE(d.ok(), d.error().message());
    CHECK(d->is_dir);
    CHECK(d->leaf.empty());
    CHECK(d->shown == "host:mod/sub");
    CHECK(same_inode(d->dir.get(), t.root + "/sub"));
    auto m = resolve_destination_beneath(t.root_fd, "sub", true, "s");
    REQUIRE(m.ok());
    CHECK(m->is_dir);
  }
  SUBCASE("the export root") {
    auto d = resolve_destination_beneath(t.root_fd, "", true, "mod");
    REQUIRE(d.ok());
    CHECK(d->is_dir);
    CHECK(same_inode(d->dir.get(), t.root));
  }
  SUBCASE("new file in an existing directory") {
    auto d = resolve_destination_beneath(t.root_fd, "sub/newfile", false, "s");
    REQUIRE_MESSAGE(d.ok(), d.error().message());
    CHECK_FALSE(d->is_dir);
    CHECK(d->leaf == "newfile");
    CHECK(same_inode(d->dir.get(), t.root + "/sub"));
    auto top = resolve_destination_beneath(t.root_fd, "newfile", false, "s");
    REQUIRE(top.ok());
    CHECK(top->leaf == "newfile");
    CHECK(same_inode(top->dir.get(), t.root));
  }
  SUBCASE("existing regular file is overwritten by name") {
    auto d = resolve_destination_beneath(t.root_fd, "file.txt", false, "s");
    REQUIRE(d.ok());
    CHECK_FALSE(d->is_dir);
    CHECK(d->leaf == "file.txt");
  }
  SUBCASE("UTF-8 and newline leaf") {
    auto d = resolve_destination_beneath(t.root_fd, "sub/" + kUtf8Name, false, "s");
    REQUIRE(d.ok());
    CHECK(d->leaf == kUtf8Name);
  }
  SUBCASE("missing parent") {
    auto d = resolve_destination_beneath(t.root_fd, "nodir/newfile", false, "s");
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().code == ENOENT);
  }
  SUBCASE("several sources need a directory") {
    for (const char* rel : {"file.txt", "newfile", "sub/newfile"}) {
      CAPTURE(rel);
      auto d = resolve_destination_beneath(t.root_fd, rel, true, std::string("shown:") + rel);
      REQUIRE_FALSE(d.ok());
      CHECK(d.error().code == ENOTDIR);
      CHECK(d.error().context.find(std::string("shown:") + rel) != std::string::npos);
    }
  }
  SUBCASE("symlinked parent leaving the export") {
    auto d = resolve_destination_beneath(t.root_fd, "link_dir_out/newfile", false, "s");
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().code == EPERM);
    auto dir = resolve_destination_beneath(t.root_fd, "link_dir_out", true, "s");
    REQUIRE_FALSE(dir.ok());
    CHECK(dir.error().code == EPERM);
    auto f = resolve_destination_beneath(t.root_fd, "link_passwd", false, "s");
    REQUIRE_FALSE(f.ok());
    CHECK(f.error().code == EPERM);
  }
  SUBCASE("symlinked parent inside the export") {
    auto d = resolve_destination_beneath(t.root_fd, "link_dir_in/newfile", false, "s");
    REQUIRE(d.ok());
    CHECK(d->leaf == "newfile");
    CHECK(same_inode(d->dir.get(), t.root + "/sub"));
  }
}

TEST_CASE("TempFile::create_unnamed: no name until commit links it; a file there since is replaced") {
  Tree t;
  const std::string dir = t.root + "/sub";
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(dfd >= 0);
  const auto before = entries(dir);
  for (bool via_proc : {false, true}) {
    CAPTURE(via_proc);
    TempFile::link_via_proc_for_test(via_proc);
    SUBCASE("discarded: nothing was ever in the directory") {
      {
        auto r = TempFile::create_unnamed(dfd, "u1", "shown", 0640);
        REQUIRE_MESSAGE(r.ok(), r.error().message());
        CHECK(r.value().temp_name().empty());
        CHECK(::write(r.value().fd(), "abc", 3) == 3);
        CHECK(entries(dir) == before);
      }
      CHECK(entries(dir) == before);
    }
    SUBCASE("committed: linked under its name with its bytes and mode") {
      auto r = TempFile::create_unnamed(dfd, "u2", "shown", 0640);
      REQUIRE(r.ok());
      REQUIRE(::write(r.value().fd(), "hello", 5) == 5);
      REQUIRE(r.value().commit(0640, false).ok());
      struct stat st {};
      REQUIRE(::fstatat(dfd, "u2", &st, AT_SYMLINK_NOFOLLOW) == 0);
      CHECK(st.st_size == 5);
      CHECK(st.st_nlink == 1);
      const mode_t um = ::umask(022);  // read the umask (single-threaded here), then put it back
      ::umask(um);
      CHECK((st.st_mode & 0777) == (0640 & ~um));
      CHECK(entries(dir).size() == before.size() + 1);
      ::unlinkat(dfd, "u2", 0);
    }
    SUBCASE("a file that appeared under the name meanwhile is replaced, as rename would") {
      auto r = TempFile::create_unnamed(dfd, "u3", "shown", 0644);
      REQUIRE(r.ok());
      REQUIRE(::write(r.value().fd(), "new!", 4) == 4);
      int o = ::openat(dfd, "u3", O_WRONLY | O_CREAT | O_EXCL, 0644);
      REQUIRE(o >= 0);
      REQUIRE(::write(o, "old old", 7) == 7);
      ::close(o);
      REQUIRE(r.value().commit(0644, false).ok());
      struct stat st {};
      REQUIRE(::fstatat(dfd, "u3", &st, AT_SYMLINK_NOFOLLOW) == 0);
      CHECK(st.st_size == 4);
      CHECK(entries(dir).size() == before.size() + 1);  // no temp name left behind
      ::unlinkat(dfd, "u3", 0);
    }
  }
  TempFile::link_via_proc_for_test(false);
  ::close(dfd);
}

TEST_CASE("TempFile::create_unnamed: a process that lost CAP_DAC_READ_SEARCH still links (through /proc)") {
  if (::geteuid() != 0) {
    MESSAGE("SKIPPED: needs root to drop to another user");
    return;
  }
  char d[] = "/tmp/rcp-unnamed.XXXXXX";
  REQUIRE(::mkdtemp(d) != nullptr);
  REQUIRE(::chmod(d, 0777) == 0);
  TempFile::link_via_proc_for_test(false);
  { auto warm = TempFile::create_unnamed(AT_FDCWD, "x", "x", 0600); }  // (the way is decided as root)
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Created as nobody, linked as nobody with other credentials (the saved
    // uid dropped in between): linkat(AT_EMPTY_PATH) is refused with ENOENT
    // (Linux >= 6.10 allows it only with the opener's very credentials).
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 0) != 0) ::_exit(3);
    int dfd = ::open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) ::_exit(4);
    auto r = TempFile::create_unnamed(dfd, "mine", "mine", 0644);
    if (!r.ok() || ::write(r.value().fd(), "ok", 2) != 2) ::_exit(5);
    if (::setresuid(65534, 65534, 65534) != 0) ::_exit(3);
    if (auto c = r.value().commit(0644, false); !c.ok()) {
      std::fprintf(stderr, "commit: %s\n", c.error().message().c_str());
      ::_exit(6);
    }
    struct stat st {};
    ::_exit(::fstatat(dfd, "mine", &st, 0) == 0 && st.st_size == 2 ? 0 : 7);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  ::unlinkat(AT_FDCWD, (std::string(d) + "/mine").c_str(), 0);
  ::rmdir(d);
}

TEST_CASE("TempFile is removed unless committed") {
  Tree t;
  const std::string dir = t.root + "/sub";
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(dfd >= 0);
  const auto before = entries(dir).size();

  SUBCASE("destructor removes an uncommitted file") {
    std::string name;
    {
      auto r = TempFile::create(dfd, "target.bin", "shown");
      REQUIRE_MESSAGE(r.ok(), r.error().message());
      TempFile tf = std::move(r).value();
      name = tf.temp_name();
      CHECK(name.rfind(".target.bin.rcp-", 0) == 0);
      CHECK(name.size() == std::string(".target.bin.rcp-").size() + 8);
      CHECK(tf.shown() == "shown");
      CHECK(tf.fd() >= 0);
      struct stat st {};
      REQUIRE(::fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0);
      CHECK(S_ISREG(st.st_mode));
      CHECK((st.st_mode & 0777) == 0600);
      CHECK(entries(dir).size() == before + 1);
    }
    struct stat st {};
    CHECK(::fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0);
    CHECK(entries(dir).size() == before);
    CHECK(::fstatat(dfd, "target.bin", &st, 0) != 0);
  }

  SUBCASE("commit renames into place with size and mode") {
    {
      auto r = TempFile::create(dfd, "target.bin", "shown");
      REQUIRE(r.ok());
      TempFile tf = std::move(r).value();
      REQUIRE(::write(tf.fd(), "abcdefgh", 8) == 8);
      REQUIRE(tf.set_size(5).ok());
      auto st = tf.commit(0640, true);
      REQUIRE_MESSAGE(st.ok(), st.error().message());
    }
    struct stat st {};
    REQUIRE(::fstatat(dfd, "target.bin", &st, 0) == 0);
    CHECK(st.st_size == 5);
    CHECK((st.st_mode & 07777) == 0640);
    int fd = ::openat(dfd, "target.bin", O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    CHECK(read_all(fd) == "abcde");
    ::close(fd);
    CHECK(entries(dir).size() == before + 1);  // the target only, no temp left behind
    for (const auto& e : entries(dir)) CHECK(e.find(".rcp-") == std::string::npos);
  }

  SUBCASE("commit extends, replaces an existing target and strips special bits") {
    auto r = TempFile::create(dfd, "file.txt", "shown");
    REQUIRE(r.ok());
    TempFile tf = std::move(r).value();
    REQUIRE(tf.set_size(10).ok());
    REQUIRE(tf.commit(04755, false).ok());
    struct stat st {};
    REQUIRE(::fstatat(dfd, "file.txt", &st, 0) == 0);
    CHECK(st.st_size == 10);
    CHECK((st.st_mode & 07777) == 0755);
    CHECK(entries(dir).size() == before);
  }

  SUBCASE("created with the final mode; commit still applies exactly the mode asked for") {
    const mode_t um = ::umask(022);  // read the umask (single-threaded here), then put it back
    ::umask(um);
    {
      auto r = TempFile::create(dfd, "m1", "shown", 0666);
      REQUIRE(r.ok());
      struct stat st {};
      REQUIRE(::fstat(r->fd(), &st) == 0);
      CHECK((st.st_mode & 0777) == (0666 & ~um));  // the umask applies while it is partial
      REQUIRE(r->commit(0666, false).ok());        // but the committed file has the source's mode
      REQUIRE(::fstatat(dfd, "m1", &st, 0) == 0);
      CHECK((st.st_mode & 0777) == 0666);
    }
    {
      auto r = TempFile::create(dfd, "m2", "shown", 0600);
      REQUIRE(r.ok());
      REQUIRE(r->commit(0600, false).ok());
      struct stat st {};
      REQUIRE(::fstatat(dfd, "m2", &st, 0) == 0);
      CHECK((st.st_mode & 0777) == 0600);
    }
    ::unlinkat(dfd, "m1", 0);
    ::unlinkat(dfd, "m2", 0);
  }

  SUBCASE("discard and move") {
    auto r = TempFile::create(dfd, "moved", "shown");
    REQUIRE(r.ok());
    TempFile a = std::move(r).value();
    const std::string name = a.temp_name();
    {
      TempFile b = std::move(a);
      CHECK(b.temp_name() == name);
      struct stat st {};
      CHECK(::fstatat(dfd, name.c_str(), &st, 0) == 0);  // the move did not remove it
      b.discard();
      CHECK(::fstatat(dfd, name.c_str(), &st, 0) != 0);
    }
    CHECK(entries(dir).size() == before);
  }

  SUBCASE("a 255-byte target name still gets a valid temp name") {
    const std::string longname(255, 'L');
    auto r = TempFile::create(dfd, longname, "shown");
    REQUIRE_MESSAGE(r.ok(), r.error().message());
    TempFile tf = std::move(r).value();
    CHECK(tf.temp_name().size() <= 255);
    REQUIRE(tf.commit(0644, false).ok());
    struct stat st {};
    CHECK(::fstatat(dfd, longname.c_str(), &st, 0) == 0);
  }

  ::close(dfd);
}

TEST_CASE("make_dirs_beneath creates nested directories and never follows a link out") {
  Tree t;
  auto d = make_dirs_beneath(t.root_fd, "new/deeper/" + std::string(kUtf8Name));
  REQUIRE_MESSAGE(d.ok(), d.error().message());
  struct stat st {};
  CHECK(::stat((t.root + "/new/deeper/" + kUtf8Name).c_str(), &st) == 0);
  CHECK(S_ISDIR(st.st_mode));
  CHECK(make_dirs_beneath(t.root_fd, "sub").ok());  // existing directories are fine
  CHECK_FALSE(make_dirs_beneath(t.root_fd, "link_dir_out/evil").ok());
  CHECK(::access((t.outside + "/evil").c_str(), F_OK) != 0);
  CHECK_FALSE(make_dirs_beneath(t.root_fd, "link_dir_in/x").ok());  // even a link that stays inside
  CHECK_FALSE(make_dirs_beneath(t.root_fd, "../escape").ok());
  CHECK_FALSE(make_dirs_beneath(t.root_fd, "/abs").ok());
  CHECK_FALSE(make_dirs_beneath(t.root_fd, "file.txt/x").ok());  // a file in the way
}
