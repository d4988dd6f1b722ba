#include "fs/blockdev.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdio>
#include <cstring>

#include <fmt/core.h>

namespace rcp {

Result<uint64_t> block_device_size(int fd, const std::string& shown) {
  uint64_t size = 0;
  if (::ioctl(fd, BLKGETSIZE64, &size) != 0) return sys_error("size of block device '" + shown + "' (BLKGETSIZE64)");
  return size;
}

Result<std::string> mount_point_of(dev_t rdev) {
  FILE* f = std::fopen("/proc/self/mountinfo", "re");
  if (f == nullptr) return sys_error("cannot read /proc/self/mountinfo to check whether the device is mounted");
  // "ID PARENT MAJOR:MINOR ROOT MOUNTPOINT ...": the third field names the device.
  char line[4096];
  std::string where;
  while (std::fgets(line, sizeof line, f)) {
    unsigned maj = 0, min = 0;
    char mnt[2048];
    if (std::sscanf(line, "%*u %*u %u:%u %*s %2047s", &maj, &min, mnt) == 3 && maj == major(rdev) &&
        min == minor(rdev)) {
      where = mnt;
      break;
    }
  }
  std::fclose(f);
  return where;
}

Result<std::shared_ptr<DeviceTarget>> open_device_target(const std::string& path, const std::string& shown,
                                                         bool force) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return sys_error("'" + shown + "'");
  if (!S_ISBLK(st.st_mode)) return make_error(EINVAL, "'" + shown + "' is not a block device");
  if (!force) {
    RCP_ASSIGN(std::string where, mount_point_of(st.st_rdev));
    if (!where.empty())
      return make_error(EBUSY, fmt::format("'{}' is mounted on {}: refused (--force writes it all the same)", shown,
                                           where));
  }
  // Read and write: --partial reads back what an interrupted run wrote (its
  // chunks are kept when their digests match).
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | (force ? 0 : O_EXCL));
  if (fd < 0) {
    if (errno == EBUSY)
      return make_error(EBUSY, fmt::format("'{}' is in use (held by a file system, LVM, md or another program): "
                                           "refused (--force writes it all the same)", shown));
    return sys_error("'" + shown + "'");
  }
  auto t = std::make_shared<DeviceTarget>();
  t->fd.reset(fd);
  struct stat now;
  if (::fstat(fd, &now) != 0) return sys_error("stat '" + shown + "'");
  if (!S_ISBLK(now.st_mode) || now.st_rdev != st.st_rdev)
    return make_error(EAGAIN, "'" + shown + "' was replaced while being opened");
  RCP_ASSIGN(t->size, block_device_size(fd, shown));
  t->shown = shown;
  return t;
}

std::string in_place_warning(const std::string& shown) {
  return fmt::format("writing block device '{}' in place: a copy that fails or is interrupted leaves it partially "
                     "written (there is no temp file to discard); rerun with --partial to finish it", shown);
}

}  // namespace rcp
