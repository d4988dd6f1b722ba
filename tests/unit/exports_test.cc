// lib/daemon/exports: --export modules, peer addresses from Transport::peer(),
// and the stale temp file cleanup at start.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "daemon/config.h"
#include "daemon/device_module.h"
#include "daemon/exports.h"
#include "scratch_dir.h"

using namespace rcp;
using namespace rcp::daemon;

TEST_CASE("--export modules are read-write, unauthenticated, open to every host") {
  auto c = config_from_exports({"data=/srv/data", "b=/tmp"});
  REQUIRE(c.ok());
  REQUIRE(c->modules.size() == 2);
  CHECK(c->modules[0].name == "data");
  CHECK(c->modules[0].path == "/srv/data");
  CHECK_FALSE(c->modules[0].read_only);
  CHECK_FALSE(c->modules[0].write_only);
  CHECK_FALSE(c->modules[0].auth_required());
  CHECK_FALSE(c->modules[0].hosts.allow.has_value());
  CHECK_FALSE(config_from_exports({"nodir"}).ok());
  CHECK_FALSE(config_from_exports({"=/tmp"}).ok());
  CHECK_FALSE(config_from_exports({"a/b=/tmp"}).ok());
  CHECK_FALSE(config_from_exports({"x=/tmp", "x=/srv"}).ok());
}

TEST_CASE("peer_address reads every form the transports log") {
  auto v4 = peer_address("127.0.0.1:5000");
  REQUIRE(v4.ok());
  CHECK(v4->to_string() == "127.0.0.1");
  auto v6 = peer_address("::1:5000");  // TCP: IPv6 without brackets
  REQUIRE(v6.ok());
  CHECK(v6->to_string() == "::1");
  auto v6b = peer_address("[2001:db8::7]:7471");  // rdma_cm: with brackets
  REQUIRE(v6b.ok());
  CHECK(v6b->to_string() == "2001:db8::7");
  CHECK_FALSE(peer_address("?").ok());
  CHECK_FALSE(peer_address("host.example:22").ok());
}

TEST_CASE("clean_stale_temps removes .NAME.rcp-XXXXXXXX files only, below the root, without following links") {
  const test::ScratchDir root, out;
  const std::string& d = root.dir;
  auto touch = [](const std::string& p) { ::close(::open(p.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600)); };
  REQUIRE(::mkdir((d + "/sub").c_str(), 0700) == 0);
  touch(d + "/.a.txt.rcp-abc12345");
  touch(d + "/sub/.b.rcp-0000zzzz");
  touch(d + "/a.txt");
  touch(d + "/.a.txt.rcp-ABC12345");  // not what TempFile makes
  touch(d + "/.a.txt.rcp-abc1234");   // one short
  // --partial files: kept for the next run, removed once untouched for 7 days
  touch(d + "/sub/.old.rcp-partial");
  touch(d + "/.new.rcp-partial");
  {
    const struct timespec ts[2] = {{::time(nullptr) - 8 * 24 * 3600, 0}, {::time(nullptr) - 8 * 24 * 3600, 0}};
    REQUIRE(::utimensat(AT_FDCWD, (d + "/sub/.old.rcp-partial").c_str(), ts, 0) == 0);
  }
  const std::string& outside = out.dir;
  touch(std::string(outside) + "/.x.rcp-abcdefgh");
  REQUIRE(::symlink(outside.c_str(), (d + "/link").c_str()) == 0);
  const int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  CHECK(clean_stale_temps(fd) == 3);
  ::close(fd);
  CHECK(::access((d + "/.a.txt.rcp-abc12345").c_str(), F_OK) != 0);
  CHECK(::access((d + "/sub/.b.rcp-0000zzzz").c_str(), F_OK) != 0);
  CHECK(::access((d + "/a.txt").c_str(), F_OK) == 0);
  CHECK(::access((d + "/sub/.old.rcp-partial").c_str(), F_OK) != 0);
  CHECK(::access((d + "/.new.rcp-partial").c_str(), F_OK) == 0);
  CHECK(::access((d + "/.a.txt.rcp-ABC12345").c_str(), F_OK) == 0);
  CHECK(::access((d + "/.a.txt.rcp-abc1234").c_str(), F_OK) == 0);
  CHECK(::access((std::string(outside) + "/.x.rcp-abcdefgh").c_str(), F_OK) == 0);
}

TEST_CASE("open_exports: a module it cannot open stops the daemon at start, naming file, module and path") {
  const test::ScratchDir scratch;
  auto open_with = [&](const std::string& module) {
    auto c = parse_config_string(module, "t.conf");
    REQUIRE_MESSAGE(c.ok(), (c.ok() ? "" : c.error().message()));
    return open_exports(std::move(c.value()));
  };
  const std::string gone = scratch.at("gone");
  auto dir = open_with("[modules.m]\npath = \"" + gone + "\"\n");
  REQUIRE_FALSE(dir.ok());
  CHECK(dir.error().code == ENOENT);
  CHECK(test::says(dir.error(), "t.conf: module m: cannot open directory '" + gone + "'"));

  auto dev = open_with("[modules.d]\ndevice = \"" + gone + "\"\n");
  REQUIRE_FALSE(dev.ok());
  CHECK(dev.error().code == ENOENT);
  CHECK(test::says(dev.error(), "t.conf: module d: device '" + gone + "'"));

  auto sec = open_with("[modules.s]\npath = \"" + scratch.dir + "\"\nauth_users = [\"alice\"]\nsecrets_file = \"" + gone +
                       "\"\n");
  REQUIRE_FALSE(sec.ok());
  CHECK(sec.error().code == ENOENT);
  CHECK(test::says(sec.error(), "t.conf: module s: secrets_file: "));

  auto fine = open_with("[modules.m]\npath = \"" + scratch.dir + "\"\n");
  CHECK(fine.ok());
}

TEST_CASE("a device module is named alone: a path below it, more sources or relative names are refused") {
  ModuleConfig m;
  m.name = "disk";
  m.device = "/dev/null";
  const wire::Open plain;
  CHECK(check_device_path(m, "", plain).ok());
  CHECK(check_device_path(m, "sub/file", plain).error().code == ENOENT);
  wire::Open more;
  more.more = {"other"};
  CHECK(check_device_path(m, "", more).error().code == ENOENT);
  wire::Open relative;
  relative.flags = wire::kOpenRelative;
  const Status st = check_device_path(m, "", relative);
  REQUIRE_FALSE(st.ok());
  CHECK(test::says(st.error(), "module disk exports a block device: name the module alone (disk)"));
  // Written to: one file, verified, or nothing is opened.
  wire::Open multi;
  multi.flags = wire::kOpenMulti;
  CHECK(device_destination(m, multi, true).error().code == ENOTDIR);
  const auto unverified = device_destination(m, plain, false);
  REQUIRE_FALSE(unverified.ok());
  CHECK(test::says(unverified.error(), "digest none is refused"));
}
