/// Pure planning logic of the data path, free of syscalls so it can be unit
/// tested at every edge size: how a file splits into chunks, how a remote
/// chunk maps onto RDMA READ work requests scattering into local blocks, and
/// the free lists that bound memory.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "transport/types.h"

namespace rcp {

/// One chunk of a file: bytes [offset, offset + length).
struct ChunkSpan {
  uint64_t offset = 0;
  uint32_t length = 0;
};

/// Number of chunks of chunk_size that cover file_size (0 for an empty file).
uint64_t chunk_count(uint64_t file_size, uint32_t chunk_size);
/// The index-th chunk; the last one may be short.
ChunkSpan chunk_at(uint64_t file_size, uint32_t chunk_size, uint64_t index);

/// Splits a remote range of `length` bytes at `remote_addr` into READ work
/// requests that fill the local blocks (each `block_size` bytes, in order),
/// with at most `max_sge` SGEs per request. The blocks must together hold
/// `length` bytes; the last block is filled only partly when length is not a
/// multiple of block_size. Returns an empty plan for invalid arguments.
std::vector<ReadWr> plan_reads(uint64_t remote_addr, uint32_t length,
                               std::span<const uint64_t> block_addrs, uint32_t block_size,
                               uint32_t max_sge);

/// Blocks of block_size needed to hold length bytes.
inline uint32_t blocks_for(uint32_t length, uint32_t block_size) {
  if (block_size == 0) return 0;
  return static_cast<uint32_t>((uint64_t{length} + block_size - 1) / block_size);  // 64-bit: no wrap
}

/// A LIFO free list of indices [0, n): slots of the source pool, blocks of
/// the sink pool. LIFO keeps recently used (cache-warm) buffers in play.
class IndexPool {
 public:
  explicit IndexPool(uint32_t n);
  uint32_t capacity() const { return capacity_; }
  uint32_t available() const { return static_cast<uint32_t>(free_.size()); }
  bool take(uint32_t count, std::vector<uint32_t>& out);
  /// Takes one index; returns false when none is free.
  bool take_one(uint32_t& out);
  /// Returns an index; false if it is out of range or already free (a peer
  /// returning a slot twice is a protocol error, not a crash).
  bool give(uint32_t index);
  bool is_free(uint32_t index) const { return index < capacity_ && in_free_[index]; }

 private:
  uint32_t capacity_;
  std::vector<uint32_t> free_;
  std::vector<bool> in_free_;
};


}  // namespace rcp
