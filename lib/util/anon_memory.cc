#include "util/anon_memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

namespace rcp {

namespace {
constexpr size_t kHuge = size_t{2} << 20;
}

AnonMemory& AnonMemory::operator=(AnonMemory&& o) noexcept {
  if (this != &o) {
    release();
    map_ = o.map_;
    map_len_ = o.map_len_;
    data_ = o.data_;
    len_ = o.len_;
    huge_ = o.huge_;
    o.map_ = nullptr;
    o.map_len_ = o.len_ = 0;
    o.data_ = nullptr;
  }
  return *this;
}

void AnonMemory::release() {
  if (map_) ::munmap(map_, map_len_);
  map_ = nullptr;
}

Result<AnonMemory> AnonMemory::map(size_t len) {
  if (len == 0) return make_error(EINVAL, "map 0 bytes");
  AnonMemory m;
  // Huge pages only pay for a pool of at least one; the extra 2 MiB of
  // address space (never touched) aligns it.
  const bool try_huge = len >= kHuge;
  m.map_len_ = try_huge ? len + kHuge : len;
  void* p = ::mmap(nullptr, m.map_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return sys_error(fmt::format("allocate {} bytes", len));
  m.map_ = p;
  m.len_ = len;
  const auto at = reinterpret_cast<uintptr_t>(p);
  m.data_ = static_cast<uint8_t*>(p) + (try_huge ? ((at + kHuge - 1) & ~(kHuge - 1)) - at : 0);
  if (try_huge) m.huge_ = ::madvise(m.data_, len, MADV_HUGEPAGE) == 0;
  if (::madvise(m.data_, len, MADV_POPULATE_WRITE) != 0) {
    if (errno == ENOMEM) return make_error(ENOMEM, fmt::format("populate {} bytes", len));
    // Before 5.14: touch every page (the pool is zero either way).
    for (size_t off = 0; off < len; off += 4096) m.data_[off] = 0;
  }
  return m;
}

}  // namespace rcp
