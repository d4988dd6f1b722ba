/// Anonymous memory for a session's buffer pool, faulted in up front: the
/// owner of one mmap (RAII, as Fd owns a descriptor).
///
/// Backed by transparent huge pages where the kernel gives them: the pool is
/// mapped 2 MiB-aligned, marked MADV_HUGEPAGE and populated with
/// MADV_POPULATE_WRITE. Measured here (Linux 6.18, THP "madvise"), a 16 MiB
/// pool took 10-14 ms to populate with 4 KiB pages (MAP_POPULATE) and 2 more
/// to unmap, 2 ms and 0.1 ms with huge pages: both ends map one per copy,
/// and a one-file copy over loopback took 50 ms in all. Fewer pages also
/// means fewer to pin when the pool is registered with the NIC or io_uring.
/// Where madvise refuses (an older kernel, THP "never"), 4 KiB pages, still
/// populated.
#pragma once

#include <cstddef>
#include <cstdint>

#include "util/result.h"

namespace rcp {

class AnonMemory {
 public:
  AnonMemory() = default;
  AnonMemory(AnonMemory&& o) noexcept { *this = static_cast<AnonMemory&&>(o); }
  AnonMemory& operator=(AnonMemory&& o) noexcept;
  AnonMemory(const AnonMemory&) = delete;
  ~AnonMemory() { release(); }

  /// len bytes (len > 0), zeroed, resident, readable and writable.
  static Result<AnonMemory> map(size_t len);
  uint8_t* data() const { return data_; }
  size_t size() const { return len_; }
  /// Whether the kernel agreed to back it with huge pages (MADV_HUGEPAGE).
  bool huge() const { return huge_; }

 private:
  void release();
  void* map_ = nullptr;  // what mmap returned (data_ is inside it, aligned)
  size_t map_len_ = 0;
  uint8_t* data_ = nullptr;
  size_t len_ = 0;
  bool huge_ = false;
};

}  // namespace rcp
