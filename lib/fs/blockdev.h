/// Block devices as the ends of a copy, only when asked for (rcp
/// --copy-devices / --write-devices, or a daemon module's `device`): a
/// device's size comes from BLKGETSIZE64, never from st_size (0); a device
/// destination is written in place — there is no temp file to rename over a
/// disk — so it is opened only if it is not mounted (unless forced) and
/// exclusively (O_EXCL: the kernel refuses it while a file system or another
/// exclusive opener holds it), and a copy larger than it is refused before
/// a byte is written.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "util/fd.h"
#include "util/result.h"

namespace rcp {

/// The size in bytes of the block device open on fd (BLKGETSIZE64).
Result<uint64_t> block_device_size(int fd, const std::string& shown);

/// Where the block device `rdev` is mounted according to
/// /proc/self/mountinfo (its major:minor field), or "" when it is not.
Result<std::string> mount_point_of(dev_t rdev);

/// A block device opened for writing in place.
struct DeviceTarget {
  Fd fd;
  uint64_t size = 0;
  std::string shown;
};

/// Opens the block device `path` (following symlinks: the user or the
/// daemon's administrator named it) for writing. Refused: not a block
/// device (EINVAL), mounted (EBUSY, naming the mount point) unless `force`;
/// without `force` it is opened O_EXCL too, so a device in use by a file
/// system, LVM or md fails with EBUSY.
Result<std::shared_ptr<DeviceTarget>> open_device_target(const std::string& path, const std::string& shown,
                                                         bool force);

/// The one sentence every device destination prints or logs before writing.
std::string in_place_warning(const std::string& shown);

}  // namespace rcp
