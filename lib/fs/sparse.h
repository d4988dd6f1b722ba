/// Holes, at both ends. The source finds a file's data extents with
/// SEEK_DATA/SEEK_HOLE (a file system without them, or a block device,
/// reports one extent: all data, so nothing is skipped that is not a hole).
/// The sink fills a hole range of what it writes in one of four ways; every
/// way reads back as zeros except a BLKDISCARD fallback (see fill_hole).
#pragma once

#include <cstdint>
#include <vector>

#include "util/result.h"

namespace rcp {

/// Bytes [begin, end) of a file hold data. begin >= the file's size: no data
/// from where the search started to the end.
struct DataExtent {
  uint64_t begin = 0;
  uint64_t end = 0;
};

/// The first data extent of fd that ends after `from`, clipped to size;
/// {size, size} when there is none. Errors other than "no data there"
/// (ENXIO) make the rest one data extent: reading a hole costs time, skipping
/// data would cost the copy.
Result<DataExtent> find_data(int fd, uint64_t from, uint64_t size);

enum class HoleFill {
  /// A fresh file sized with ftruncate (-S): nothing to do, the range is a
  /// hole already. With may_hold_data (a --partial file being completed) the
  /// range is punched (FALLOC_FL_PUNCH_HOLE), else written with zeros.
  leave,
  /// A regular file without -S (rsync writes the zeros): blocks allocated
  /// with fallocate (they read as zeros), else zeros written; punched first
  /// when may_hold_data.
  allocate,
  /// A block device (--write-devices): FALLOC_FL_ZERO_RANGE (the kernel's
  /// blkdev_issue_zeroout: WRITE ZEROES where the device has it), else
  /// zeros written.
  zero,
  /// A block device with --discard: FALLOC_FL_PUNCH_HOLE (WRITE ZEROES with
  /// unmap: deallocated and guaranteed to read as zeros), else BLKDISCARD
  /// (deallocated; whether it then reads as zeros is the device's choice:
  /// most SSDs and loop devices do, some arrays do not), else zeros written.
  discard,
};

/// A piece of a write: bytes [offset, offset + length) of the file.
struct Span {
  uint64_t offset = 0;
  uint32_t length = 0;
};

/// -S on data the source had to send: the parts of the write of `len` bytes
/// at file offset `file_off` that are not whole `granule`-sized, granule-
/// aligned (by file offset) blocks of zeros, in order, adjacent parts merged.
/// The sink writes only these into a fresh file, so a zero block becomes a
/// hole as with rsync -S (a file of zeros written by cp or dd has no holes
/// for SEEK_DATA to find). Aligned by file offset because a file system can
/// leave only whole blocks unallocated; 4096 is ext4's, XFS's and tmpfs's
/// block. Pure: unit-tested in tests/unit/sparse_test.cc.
std::vector<Span> nonzero_spans(const uint8_t* data, uint64_t file_off, uint32_t len, uint32_t granule);

/// Makes [offset, offset + length) of fd a hole the way `how` says.
Status fill_hole(int fd, uint64_t offset, uint64_t length, HoleFill how, bool may_hold_data);

}  // namespace rcp
