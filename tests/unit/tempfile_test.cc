// TempFile's failures, each named: a temp file that cannot be created (for a
// reason other than its random name being taken), a --partial file that is a
// symlink or held by another session, a device whose data cannot be synced.
// The copies that succeed are proven by the engine tests.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "fs/tempfile.h"
#include "scratch_dir.h"

using namespace rcp;

namespace {

/// A directory, opened, then removed: nothing can be created in it (ENOENT).
struct RemovedDir {
  Fd fd;
  RemovedDir() {
    char tmpl[] = "/tmp/rcp-tempfile-test.XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    fd.reset(::open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd.valid());
    REQUIRE(::rmdir(tmpl) == 0);
  }
};

using Scratch = test::ScratchDir;
using test::says;

}  // namespace

TEST_CASE("a temp file that cannot be created fails with the reason, not as a name collision") {
  // Only EEXIST (another file took the random name) is worth another name;
  // anything else is the answer (here: the directory is gone).
  RemovedDir gone;
  auto t = TempFile::create(gone.fd.get(), "f", "dest/f");
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().code == ENOENT);
  CHECK_MESSAGE(says(t.error(), "cannot create temporary file for 'dest/f'"), t.error().message());
}

TEST_CASE("an unnamed temp file that cannot be made is refused (ENOTSUP: the caller then names one)") {
  RemovedDir gone;
  auto t = TempFile::create_unnamed(gone.fd.get(), "f", "dest/f", 0644);
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().code == ENOTSUP);
  CHECK_MESSAGE(says(t.error(), "O_TMPFILE for 'dest/f'"), t.error().message());
}

TEST_CASE("--partial: a symlink under the partial name is not followed; a partial file held elsewhere is in use") {
  Scratch s;
  SUBCASE("a symlink planted as .f.rcp-partial") {
    REQUIRE(::symlink("/etc/passwd", s.at(TempFile::partial_name("f")).c_str()) == 0);
    auto t = TempFile::open_partial(s.fd.get(), "f", "dest/f", 0644);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().code == ELOOP);
    CHECK_MESSAGE(says(t.error(), "cannot open partial file for 'dest/f'"), t.error().message());
  }
  SUBCASE("another session holds it") {
    auto first = TempFile::open_partial(s.fd.get(), "f", "dest/f", 0644);
    REQUIRE(first.ok());
    auto second = TempFile::open_partial(s.fd.get(), "f", "dest/f", 0644);
    REQUIRE_FALSE(second.ok());
    CHECK(second.error().code == EWOULDBLOCK);
    CHECK_MESSAGE(says(second.error(), "partial file for 'dest/f' is in use"), second.error().message());
    first = TempFile();  // let go: the next one may have it
    CHECK(TempFile::open_partial(s.fd.get(), "f", "dest/f", 0644).ok());
  }
}

TEST_CASE("a device whose data cannot be synced is not committed") {
  // The copy to a device is done only once its data is on the device; a
  // pipe stands in for one whose fsync fails (EINVAL).
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  Fd keep(p[1]);
  TempFile t = TempFile::on_device(Fd(p[0]), "/dev/sdz");
  Status st = t.commit(0644, true, false);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == EINVAL);
  CHECK_MESSAGE(says(st.error(), "fsync '/dev/sdz'"), st.error().message());
}

TEST_CASE("commit in two steps (the sink's --fsync): set_bits, then publish puts the file in place") {
  Scratch s;
  for (bool unnamed : {true, false}) {
    CAPTURE(unnamed);
    const std::string name = unnamed ? "u" : "n";
    auto t = unnamed ? TempFile::create_unnamed(s.fd.get(), name, "dest/" + name, 0600)
                     : TempFile::create(s.fd.get(), name, "dest/" + name);
    REQUIRE(t.ok());
    REQUIRE(::pwrite(t->fd(), "abc", 3, 0) == 3);
    REQUIRE(t->set_bits(0640, false).ok());
    CHECK_FALSE(std::filesystem::exists(s.at(name)));  // nothing appears before publish
    REQUIRE(t->publish().ok());
    struct stat st{};
    REQUIRE(::stat(s.at(name).c_str(), &st) == 0);
    CHECK(st.st_size == 3);
    CHECK((st.st_mode & 07777) == 0640);
    CHECK(t->fd() < 0);  // closed once in place
  }
}

TEST_CASE("a device is never published: commit() syncs it in place") {
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  Fd keep(p[1]);
  TempFile t = TempFile::on_device(Fd(p[0]), "/dev/sdz");
  Status st = t.publish();
  REQUIRE_FALSE(st.ok());
  CHECK_MESSAGE(says(st.error(), "publish() of device '/dev/sdz'"), st.error().message());
}
