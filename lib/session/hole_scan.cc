#include "session/hole_scan.h"

#include <algorithm>

#include "session/plan.h"

namespace rcp {

ChunkRun classify_chunks(uint64_t size, uint32_t chunk_size, uint64_t index, DataExtent next) {
  const uint64_t n = chunk_count(size, chunk_size);
  if (chunk_size == 0 || index >= n) return {0, false};
  const uint64_t off = index * chunk_size;
  if (next.begin >= size) return {n - index, true};  // only a hole is left
  const uint64_t end = std::min(next.end, size);
  if (end <= off) return {1, false};  // nonsense from the finder: send it
  const uint64_t data = std::max(next.begin, off);
  const uint64_t chunk_end = std::min(off + chunk_size, size);
  if (data >= chunk_end) return {data / chunk_size - index, true};  // chunks ending at or before `data`
  // Chunks through the one holding the extent's last byte have data.
  return {(end - 1) / chunk_size + 1 - index, false};
}

Result<ChunkRun> HoleScan::run_at(uint64_t index) {
  const uint64_t off = index * uint64_t{chunk_};
  if (!known_ || (known_->begin < size_ && known_->end <= off)) {
    RCP_ASSIGN(auto e, find_(off));
    known_ = e;
  }
  return classify_chunks(size_, chunk_, index, *known_);
}

}  // namespace rcp
