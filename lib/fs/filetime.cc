#include "fs/filetime.h"

#include <fcntl.h>

namespace rcp {

int64_t mtime_ns_of(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

Status set_mtime_ns(int fd, int64_t mtime_ns) {
  // Floor division: -1 ns is 1969-12-31 23:59:59.999999999, tv_nsec stays in [0, 1e9).
  int64_t sec = mtime_ns / 1000000000, nsec = mtime_ns % 1000000000;
  if (nsec < 0) {
    nsec += 1000000000;
    --sec;
  }
  const struct timespec ts[2] = {{0, UTIME_NOW}, {static_cast<time_t>(sec), static_cast<long>(nsec)}};
  if (::futimens(fd, ts) != 0) return sys_error("set modification time");
  return {};
}

}  // namespace rcp
