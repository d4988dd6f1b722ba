/// File times, in one place: what quick check compares and what a sink sets
/// on each file it writes, so the next run finds it unchanged.
#pragma once

#include <sys/stat.h>

#include <cstdint>

#include "util/result.h"

namespace rcp {

/// st_mtim as nanoseconds since the epoch (negative before 1970).
int64_t mtime_ns_of(const struct stat& st);

/// Sets the file's modification time (access time: now) through its fd.
/// The one place a sink applies a source's times.
Status set_mtime_ns(int fd, int64_t mtime_ns);

}  // namespace rcp
