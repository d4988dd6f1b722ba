// Proves the block-device helpers' refusals that need no root: the mount
// lookup by major:minor, and that only a block device is ever opened as a
// device destination.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fs/blockdev.h"

using namespace rcp;

TEST_CASE("mount_point_of finds the file system of / by its device number") {
  struct stat st;
  REQUIRE(::stat("/", &st) == 0);
  auto where = mount_point_of(st.st_dev);
  REQUIRE(where.ok());
  CHECK_FALSE(where->empty());
  auto none = mount_point_of(makedev(4095, 1048575));  // no such device
  REQUIRE(none.ok());
  CHECK(none->empty());
}

TEST_CASE("open_device_target refuses what is not a block device, naming it") {
  auto r = open_device_target("/dev/null", "the-null", false);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EINVAL);
  CHECK(r.error().context.find("the-null") != std::string::npos);
  auto missing = open_device_target("/nonexistent/dev", "gone", false);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ENOENT);
}
