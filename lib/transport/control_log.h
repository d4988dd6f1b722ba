/// What a control channel sent that the peer may not have taken yet, kept so
/// that control can move to another link and lose nothing (an RDMA session
/// with several rails moves it off rail 0 when that link fails,
/// rdma/connection.cc). No sequence numbers travel: every send, a message or
/// a credit-only one, takes one of the peer's posted receives, and every
/// receive the peer re-posts comes back as one credit, in order — so after
/// n credits came back the first n sends reached the peer and are dropped
/// here. At most the peer's receive depth of sends is ever held (64 × at
/// most 4 KiB by default). When control moves, the peer says how many of
/// our sends it took (wire CONTROL_MOVED); the data messages from there on
/// are sent again.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "util/result.h"

namespace rcp {

class ControlLog {
 public:
  /// One send: `message` empty for a credit-only send.
  void on_send(std::span<const uint8_t> message);
  /// The peer granted n credits: its first n outstanding sends arrived.
  /// A peer granting more than was sent trims what there is.
  void on_granted(uint64_t n);
  uint64_t sent() const { return base_ + log_.size(); }
  /// Sends the peer is known to have taken.
  uint64_t acked() const { return base_; }
  /// The messages (credit-only sends left out) from send number `from` on,
  /// in order, when the peer says it took `from` of our sends. Refuses a
  /// count below what it already acknowledged or above what was sent: a
  /// peer lying about it would make this side drop or invent messages.
  Result<std::vector<std::vector<uint8_t>>> since(uint64_t from) const;

 private:
  std::deque<std::vector<uint8_t>> log_;  ///< sends base_, base_ + 1, ...
  uint64_t base_ = 0;
};

}  // namespace rcp
