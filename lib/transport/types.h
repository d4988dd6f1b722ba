/// Types the transports own and the engine uses: what one RDMA READ (or
/// its TCP equivalent) looks like, and the credit accounting of a control
/// channel with a fixed number of posted receives. They live here, below
/// the engine, so that `session` depends on `transport` and never the reverse.
#pragma once

#include <cstdint>
#include <vector>

namespace rcp {

/// A local scatter element of a READ.
struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
};

/// One RDMA READ work request: a contiguous remote range scattered over sges.
struct ReadWr {
  uint64_t remote_addr = 0;
  uint32_t length = 0;
  std::vector<Sge> sges;
};

/// Send credits of a message channel whose receiver has a fixed number of
/// posted receive buffers. Every message consumes one credit; each side
/// grants credits back as it re-posts buffers. The last credit is kept for
/// a message that only grants credits, so two sides that both run out can
/// always unblock each other.
class Credits {
 public:
  explicit Credits(uint32_t initial_peer_credits) : peer_(initial_peer_credits) {}
  /// May a message carrying data be sent now?
  bool can_send_data() const { return peer_ >= 2; }
  /// May a credit-only message be sent now (uses the reserved credit)?
  bool can_send_grant() const { return peer_ >= 1 && pending_ > 0; }
  /// Records one message sent; returns the grants it carries (all pending).
  uint32_t on_send() {
    --peer_;
    uint32_t g = pending_;
    pending_ = 0;
    return g;
  }
  /// The peer granted n credits back.
  void on_grant(uint32_t n) { peer_ += n; }
  /// We re-posted one receive buffer: one more credit to grant.
  void on_repost() { ++pending_; }
  /// Whether a credit-only message is worth sending (enough have piled up
  /// that the peer may be waiting).
  bool grant_due(uint32_t threshold) const { return pending_ >= threshold; }
  uint32_t peer_credits() const { return peer_; }
  uint32_t pending_grants() const { return pending_; }

 private:
  uint32_t peer_;
  uint32_t pending_ = 0;
};

}  // namespace rcp
