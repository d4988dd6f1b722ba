#include "session/pool.h"

#include <sys/uio.h>

#include <fmt/core.h>

#include "util/memlock.h"
#include <vector>

namespace rcp {

Pool::~Pool() {
  if (key_) t_.deregister_memory(key_);
}

Status Pool::init(Ring& ring, bool remote_read) {
  len_ = size_t{units_} * unit_;
  auto mem = AnonMemory::map(len_);
  if (!mem.ok()) return make_error(mem.error().code, fmt::format("allocate buffer pool of {} bytes", len_));
  mem_ = std::move(mem.value());
  base_ = mem_.data();
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
