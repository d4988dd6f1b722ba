/// O_DIRECT for a file's data (rcp --direct, a module's `direct = true`):
/// the page cache leaves the data path, disk DMA lands in the session's
/// pool (mmap'ed, so page-aligned, and registered once with io_uring and the
/// NIC — session/pool.h), with no CPU copy.
///
/// A file gets a second descriptor on the same file opened with O_DIRECT.
/// An I/O goes through it only for whole granules: a granule is the larger
/// of the page size and the alignment statx(STATX_DIOALIGN) reports (the
/// logical block size BLKSSZGET for a block device where statx does not
/// say; 4096 otherwise), and the memory must meet the reported memory
/// alignment. Everything else — a file's unaligned tail, a chunk at an
/// offset that is not a granule multiple — goes through the ordinary
/// buffered descriptor. Since direct I/O only ever covers whole pages, no
/// page is written both ways (a buffered write of a page that a direct
/// write also covers could be written back over it later).
#pragma once

#include <cstdint>
#include <string>

#include "util/fd.h"
#include "util/result.h"

namespace rcp {

struct DirectFile {
  Fd fd;               ///< O_DIRECT; invalid: buffered I/O only
  uint32_t granule = 0;
  uint32_t mem_align = 0;
  /// Bytes of [offset, offset + len) at `buf` that go through fd: a whole
  /// number of granules from the start, or 0 (then all of it is buffered).
  uint32_t direct_part(uint64_t offset, const void* buf, uint32_t len) const;
};

/// Opens `fd`'s file again with O_DIRECT and `flags` (O_RDONLY or O_WRONLY),
/// through /proc/self/fd. A file system that refuses O_DIRECT (ramfs, tmpfs
/// before Linux 6.6: EINVAL)
/// gives an Error whose context says so and names `shown`: the caller falls
/// back to buffered I/O, saying so with -v.
Result<DirectFile> open_direct(int fd, int flags, const std::string& shown);

/// open_direct for a session's file (--direct): the twin, or none when the
/// file system refuses, logged once per session (`noted`) with -v.
DirectFile direct_or_buffered(int fd, int flags, const std::string& shown, bool& noted);

}  // namespace rcp
