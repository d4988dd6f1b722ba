#include "session/plan.h"

#include <algorithm>

namespace rcp {

uint64_t chunk_count(uint64_t file_size, uint32_t chunk_size) {
  if (chunk_size == 0) return 0;
  return file_size / chunk_size + (file_size % chunk_size != 0 ? 1 : 0);
}

ChunkSpan chunk_at(uint64_t file_size, uint32_t chunk_size, uint64_t index) {
  ChunkSpan c;
  c.offset = index * chunk_size;
  if (c.offset >= file_size) return {c.offset, 0};
  c.length = static_cast<uint32_t>(std::min<uint64_t>(chunk_size, file_size - c.offset));
  return c;
}

std::vector<ReadWr> plan_reads(uint64_t remote_addr, uint32_t length,
                               std::span<const uint64_t> block_addrs, uint32_t block_size,
                               uint32_t max_sge) {
  std::vector<ReadWr> wrs;
  if (length == 0 || block_size == 0 || max_sge == 0) return wrs;
  if (uint64_t{block_addrs.size()} * block_size < length) return wrs;
  uint32_t done = 0;
  size_t b = 0;
  while (done < length) {
    ReadWr wr;
    wr.remote_addr = remote_addr + done;
    while (done < length && wr.sges.size() < max_sge) {
      const uint32_t n = std::min(block_size, length - done);
      wr.sges.push_back({block_addrs[b++], n});
      wr.length += n;
      done += n;
    }
    wrs.push_back(std::move(wr));
  }
  return wrs;
}

IndexPool::IndexPool(uint32_t n) : capacity_(n), in_free_(n, true) {
  free_.reserve(n);
  for (uint32_t i = n; i > 0; --i) free_.push_back(i - 1);
}

bool IndexPool::take(uint32_t count, std::vector<uint32_t>& out) {
  if (free_.size() < count) return false;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t idx = free_.back();
    free_.pop_back();
    in_free_[idx] = false;
    out.push_back(idx);
  }
  return true;
}

bool IndexPool::take_one(uint32_t& out) {
  if (free_.empty()) return false;
  out = free_.back();
  free_.pop_back();
  in_free_[out] = false;
  return true;
}

bool IndexPool::give(uint32_t index) {
  if (index >= capacity_ || in_free_[index]) return false;
  in_free_[index] = true;
  free_.push_back(index);
  return true;
}

}  // namespace rcp
