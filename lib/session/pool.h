/// A session's buffer pool: anonymous memory registered with the transport
/// (the NIC: remote-readable for the source's slots, a landing zone for the
/// sink's blocks) and with io_uring as fixed buffers, so file data moves
/// between disk and wire without a CPU copy. Registered once per
/// connection, never per chunk.
#pragma once

#include <cstddef>
#include <cstdint>

#include "io/ring.h"
#include "transport/transport.h"
#include "util/anon_memory.h"
#include "util/result.h"

namespace rcp {

class Pool {
 public:
  Pool(Transport& t, uint32_t units, uint32_t unit_size) : t_(t), units_(units), unit_(unit_size) {}
  Pool(const Pool&) = delete;
  ~Pool();
  /// Maps units x unit_size bytes and registers them with the transport and
  /// the ring.
  Status init(Ring& ring, bool remote_read);
  /// The fixed-buffer index that holds unit i.
  int buf_index(uint32_t i) const { return single_ ? 0 : static_cast<int>(i); }
  /// Whether a write may span several units (they share one fixed buffer).
  bool spans_units() const { return single_; }
  uint8_t* at(uint32_t i) const { return base_ + size_t{i} * unit_; }
  uint32_t key() const { return key_; }
  uint32_t unit() const { return unit_; }

 private:
  Transport& t_;
  uint32_t units_, unit_;
  AnonMemory mem_;  // (deregistered in ~Pool before this unmaps it)
  uint8_t* base_ = nullptr;
  size_t len_ = 0;
  uint32_t key_ = 0;
  bool single_ = false;
};

}  // namespace rcp
