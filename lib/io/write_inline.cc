#include "io/write_inline.h"

#include <linux/magic.h>
#include <sys/vfs.h>

namespace rcp {

bool write_inline(int fd) {
  struct statfs s {};
  if (::fstatfs(fd, &s) != 0) return false;
  return s.f_type == TMPFS_MAGIC || s.f_type == RAMFS_MAGIC;
}

bool read_inline(int fd) { return write_inline(fd); }

}  // namespace rcp
