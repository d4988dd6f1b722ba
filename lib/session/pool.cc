#include "session/pool.h"

#include <sys/mman.h>
#include <sys/uio.h>

#include <fmt/core.h>

#include "util/memlock.h"
#include <vector>

namespace rcp {

Pool::~Pool() {
  if (key_) t_.deregister_memory(key_);
  if (base_) ::munmap(base_, len_);
}

Status Pool::init(Ring& ring, bool remote_read) {
  len_ = size_t{units_} * unit_;
  void* p = ::mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) return sys_error(fmt::format("allocate buffer pool of {} bytes", len_));
  base_ = static_cast<uint8_t*>(p);
  auto key = t_.register_memory(base_, len_, remote_read);
  if (!key.ok()) return registration_error(key.error().code, len_, "the buffer pool", key.error().context);
  key_ = key.value();
  // One fixed buffer for the whole pool when io_uring allows it (≤ 1 GiB
  // per buffer), so a run of adjacent blocks can be written with one
  // WRITE_FIXED; otherwise one buffer per unit.
  single_ = len_ <= (size_t{1} << 30);
  std::vector<iovec> iov;
  if (single_) {
    iov.push_back({base_, len_});
  } else {
    for (uint32_t i = 0; i < units_; ++i) iov.push_back({base_ + size_t{i} * unit_, unit_});
  }
  if (Status st = ring.register_buffers(iov); !st.ok())
    return registration_error(st.error().code, len_, "the buffer pool (io_uring fixed buffers)", st.error().context);
  return {};
}

}  // namespace rcp
