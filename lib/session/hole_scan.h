/// Which chunks of a file lie wholly in holes, from the file's data extents
/// (SEEK_DATA/SEEK_HOLE, fs/sparse.h). Pure logic: the extent finder is
/// passed in, so every edge (data at the very end, a hole at the end, an
/// all-hole file, a short last chunk) is unit tested without a file system.
/// A chunk with any data byte is sent as a chunk (zeros and all); only
/// chunks with none become a HOLE, in runs, one message per run.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "fs/sparse.h"
#include "util/result.h"

namespace rcp {

/// The first data extent that ends after `from` (it may begin before it).
using FindData = std::function<Result<DataExtent>(uint64_t from)>;

/// `count` chunks from some index on, all holes or all with data.
struct ChunkRun {
  uint64_t count = 0;
  bool hole = false;
};

/// The run starting at chunk `index` (< chunk_count(size, chunk_size)), given
/// `next`, the first data extent ending after that chunk's offset. A finder
/// that answers nonsense (an extent ending before the chunk) makes the chunk
/// data: sending bytes is always correct, skipping them only when sure.
ChunkRun classify_chunks(uint64_t size, uint32_t chunk_size, uint64_t index, DataExtent next);

/// Walks a file's chunks in order, asking the finder once per extent.
class HoleScan {
 public:
  HoleScan(uint64_t size, uint32_t chunk_size, FindData find)
      : size_(size), chunk_(chunk_size), find_(std::move(find)) {}
  /// The run at chunk `index` (chunks are asked for in increasing order).
  Result<ChunkRun> run_at(uint64_t index);

 private:
  uint64_t size_;
  uint32_t chunk_;
  FindData find_;
  std::optional<DataExtent> known_;  // the last extent found
};

}  // namespace rcp
