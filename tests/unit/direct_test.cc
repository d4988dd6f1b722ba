// Proves the O_DIRECT split rule (io/direct.h): only whole granules at a
// granule-aligned offset from aligned memory go direct; everything else,
// and a file without a direct descriptor, is buffered.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include "io/write_inline.h"
#include <linux/magic.h>
#include <sys/vfs.h>
#include "io/direct.h"

using namespace rcp;

TEST_CASE("DirectFile::direct_part splits whole granules from the unaligned tail") {
  DirectFile d;
  d.granule = 4096;
  d.mem_align = 512;
  alignas(4096) static unsigned char buf[3 * 4096];
  CHECK(d.direct_part(0, buf, 8192) == 0);  // no direct fd: all buffered
  d.fd.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  REQUIRE(d.fd.valid());
  CHECK(d.direct_part(0, buf, 8192) == 8192);
  CHECK(d.direct_part(4096, buf, 4097) == 4096);  // the 1-byte tail goes buffered
  CHECK(d.direct_part(0, buf, 4095) == 0);        // less than a granule
  CHECK(d.direct_part(1024, buf, 8192) == 0);     // offset not a granule multiple
  CHECK(d.direct_part(0, buf + 100, 8192) == 0);  // memory not aligned
  CHECK(d.direct_part(0, buf + 512, 8192) == 8192);
}

TEST_CASE("open_direct: a regular file on a file system with O_DIRECT, or a clear refusal") {
  char path[] = "/var/tmp/rcp-direct-test.XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  auto d = open_direct(fd, O_RDONLY, path);
  if (d.ok()) {
    CHECK(d->fd.valid());
    CHECK(d->granule >= 4096);
    CHECK((d->granule & (d->granule - 1)) == 0);
    CHECK((::fcntl(d->fd.get(), F_GETFL) & O_DIRECT) != 0);
    CHECK((::fcntl(fd, F_GETFL) & O_DIRECT) == 0);  // the buffered descriptor stays buffered
  } else {
    CHECK(d.error().context.find(path) != std::string::npos);
  }
  ::unlink(path);
  ::close(fd);
}

TEST_CASE("write_inline: a tmpfs file yes, a disk file and a device node (on devtmpfs) no") {
  // /dev/null's node is on devtmpfs, which fstatfs reports as tmpfs: without
  // the regular-file check a block device's writes would be done inline.
  Fd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  REQUIRE(null.valid());
  CHECK_FALSE(write_inline(null.get()));
  CHECK_FALSE(read_inline(null.get()));
  struct statfs shm {};
  if (::statfs("/dev/shm", &shm) == 0 && shm.f_type == TMPFS_MAGIC) {
    char name[] = "/dev/shm/rcp-inline.XXXXXX";
    Fd f(::mkstemp(name));
    REQUIRE(f.valid());
    ::unlink(name);
    CHECK(write_inline(f.get()));
  } else {
    MESSAGE("SKIP: /dev/shm is not tmpfs here; only the negative cases ran");
  }
}
