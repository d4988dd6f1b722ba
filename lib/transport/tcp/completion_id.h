/// What an io_uring completion of the TCP transport is about, carried in the
/// 64-bit user_data: the operation, the stream it ran on and, for sends, the
/// stream's send sequence (zero-copy notifications name the send they end).
///
/// One typed encode/decode instead of shifts and masks at every call site:
/// the stream index used to be packed into 8 bits, so a stream index above
/// 255 aliased stream 0 — a peer's data could be accounted to the control
/// stream. Field widths are checked at compile time against the most
/// streams a session may have, encode refuses what does not fit instead of
/// truncating it, and decode refuses an unknown operation or a stream the
/// transport does not have.
#pragma once

#include <cstdint>
#include <optional>

#include "transport/join_registry.h"

namespace rcp::tcp {

enum class IoOp : uint8_t {
  recv = 1,        ///< a receive into the stream's own buffer (frame headers, messages)
  recv_reply = 2,  ///< a receive straight into a read's scatter list (registered pool memory)
  send = 3,        ///< a sendmsg (zero-copy or not), or its zero-copy notification
};

struct CompletionId {
  static constexpr unsigned kOpBits = 8;
  static constexpr unsigned kStreamBits = 16;
  static constexpr unsigned kSeqBits = 40;
  static_assert(kOpBits + kStreamBits + kSeqBits == 64, "the fields fill user_data exactly");
  static_assert(kMaxJoinedConnections <= (uint64_t{1} << kStreamBits), "every stream index fits");
  static_assert(static_cast<uint8_t>(IoOp::send) < (1u << kOpBits), "every operation fits");
  static constexpr uint64_t kSeqMask = (uint64_t{1} << kSeqBits) - 1;
  static constexpr uint32_t kStreamLimit = 1u << kStreamBits;

  IoOp op = IoOp::recv;
  uint32_t stream = 0;
  /// send: the stream's send sequence, kept below 2^40 by next_seq() (at a
  /// million sends a second it wraps after 12 days; only sends in flight at
  /// the same time must differ).
  uint64_t seq = 0;

  static constexpr uint64_t next_seq(uint64_t seq) { return (seq + 1) & kSeqMask; }

  /// The user_data for this id; nullopt when a field does not fit.
  constexpr std::optional<uint64_t> encode() const {
    if (stream >= kStreamLimit || seq > kSeqMask) return std::nullopt;
    if (op != IoOp::recv && op != IoOp::recv_reply && op != IoOp::send) return std::nullopt;
    return (seq << (kOpBits + kStreamBits)) | (uint64_t{stream} << kOpBits) | static_cast<uint8_t>(op);
  }

  /// The id in `user_data`, or nullopt when its operation is unknown or its
  /// stream is not below `streams` (the streams the transport has).
  static constexpr std::optional<CompletionId> decode(uint64_t user_data, uint32_t streams) {
    CompletionId id;
    const auto op = static_cast<uint8_t>(user_data & ((1u << kOpBits) - 1));
    if (op != static_cast<uint8_t>(IoOp::recv) && op != static_cast<uint8_t>(IoOp::recv_reply) &&
        op != static_cast<uint8_t>(IoOp::send))
      return std::nullopt;
    id.op = static_cast<IoOp>(op);
    id.stream = static_cast<uint32_t>((user_data >> kOpBits) & (kStreamLimit - 1));
    id.seq = user_data >> (kOpBits + kStreamBits);
    if (id.stream >= streams) return std::nullopt;
    return id;
  }
};

}  // namespace rcp::tcp
