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

TEST_CASE("block_device_size of what is not a block device is an error naming the ioctl") {
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  auto size = block_device_size(fd, "the-null");
  ::close(fd);
  REQUIRE_FALSE(size.ok());
  CHECK(size.error().code == ENOTTY);
  CHECK(size.error().context == "size of block device 'the-null' (BLKGETSIZE64)");
}
