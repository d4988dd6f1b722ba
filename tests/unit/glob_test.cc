// Remote globs (daemon/glob.h): what a pattern matches beneath a module's
// root, and what is refused — a wildcard before the last component, no
// match, more matches than the bound, a directory part leaving the root.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/glob.h"
#include "util/fd.h"
#include "scratch_dir.h"

using namespace rcp;

namespace {

struct Root {
  std::string dir;
  Fd fd;
  Root() {
    // tmpfs where there is one: the bound's case makes 100,001 files.
    const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string t = std::string(base) + "/rcp-glob-test.XXXXXX";
    REQUIRE(::mkdtemp(t.data()) != nullptr);
    dir = t;
    fd.reset(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd.valid());
  }
  ~Root() { std::filesystem::remove_all(dir); }
  void touch(const std::string& rel) const {
    std::filesystem::create_directories(std::filesystem::path(dir + "/" + rel).parent_path());
    Fd f(::open((dir + "/" + rel).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    REQUIRE(f.valid());
  }
};

using test::says;

}  // namespace

TEST_CASE("glob: the last component's matches, sorted, as paths in the module; a leading dot only when asked") {
  Root r;
  for (const char* f : {"logs/b.gz", "logs/a.gz", "logs/c.txt", "logs/.hidden.gz", "top.gz"}) r.touch(f);
  CHECK(has_wildcard("logs/*.gz"));
  CHECK_FALSE(has_wildcard("logs/a.gz"));
  CHECK_FALSE(has_wildcard("lo*s/a.gz"));  // (only the last component counts)
  auto m = expand_wildcard(r.fd.get(), "logs/*.gz", "data/logs/*.gz");
  REQUIRE_MESSAGE(m.ok(), m.error().message());
  CHECK(*m == std::vector<std::string>{"logs/a.gz", "logs/b.gz"});
  auto dots = expand_wildcard(r.fd.get(), "logs/.*.gz", "data/logs/.*.gz");
  REQUIRE(dots.ok());
  CHECK(*dots == std::vector<std::string>{"logs/.hidden.gz"});
  auto top = expand_wildcard(r.fd.get(), "t?p.[gx]z", "data/t?p.[gx]z");
  REQUIRE(top.ok());
  CHECK(*top == std::vector<std::string>{"top.gz"});
}

TEST_CASE("glob: refused with a wildcard before the last component, with no match, or leaving the module") {
  Root r;
  r.touch("logs/a.gz");
  auto dir_wild = expand_wildcard(r.fd.get(), "lo*/a.gz", "data/lo*/a.gz");
  REQUIRE_FALSE(dir_wild.ok());
  CHECK(dir_wild.error().code == 0);  // (the message says why: rcp/main.cc words())
  CHECK_MESSAGE(says(dir_wild.error(), "'data/lo*/a.gz': wildcards are expanded in the last path component only"),
                dir_wild.error().message());
  auto none = expand_wildcard(r.fd.get(), "logs/*.zip", "data/logs/*.zip");
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == ENOENT);
  CHECK_MESSAGE(says(none.error(), "'data/logs/*.zip': no match"), none.error().message());
  auto out = expand_wildcard(r.fd.get(), "../*", "data/../*");
  CHECK_FALSE(out.ok());
}

TEST_CASE("glob: more matches than the bound is refused, not listed (E2BIG)") {
  Root r;
  std::filesystem::create_directory(r.dir + "/many");
  Fd d(::open((r.dir + "/many").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(d.valid());
  for (size_t i = 0; i <= kMaxGlobMatches; ++i) {
    const std::string n = "f" + std::to_string(i);
    Fd f(::openat(d.get(), n.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    if (!f.valid()) FAIL("cannot create " << n);
  }
  auto all = expand_wildcard(r.fd.get(), "many/f*", "data/many/f*");
  REQUIRE_FALSE(all.ok());
  CHECK(all.error().code == E2BIG);
  CHECK_MESSAGE(says(all.error(), "matches more than 100000 entries"), all.error().message());
  REQUIRE(::unlinkat(d.get(), "f0", 0) == 0);  // exactly the bound: listed
  auto bound = expand_wildcard(r.fd.get(), "many/f*", "data/many/f*");
  REQUIRE_MESSAGE(bound.ok(), bound.error().message());
  CHECK(bound->size() == kMaxGlobMatches);
}
