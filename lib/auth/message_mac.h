/// Integrity of the control channel of an authenticated session: each
/// control message carries tag = HMAC-SHA256(direction key, seq || message),
/// seq a 64-bit count of the messages sent in that direction (big-endian,
/// starting at 0, never on the wire). The receiver counts too, so a message
/// altered, dropped, replayed, reordered, reflected back to its sender
/// (the two directions have different keys) or moved to another session
/// (other keys) fails open(). After one failure the channel refuses every
/// later message: the session is to be ended, and an attacker gets one guess.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "auth/handshake.h"
#include "auth/hmac.h"
#include "util/result.h"

namespace rcp::auth {

constexpr size_t kTagSize = 32;
using Tag = std::array<uint8_t, kTagSize>;

class MessageMac {
 public:
  /// self: which side this process is; it seals with its own direction's key
  /// and opens with the peer's.
  MessageMac(Role self, const SessionKeys& keys);

  /// The tag for the next message this side sends.
  Tag seal(std::span<const uint8_t> msg);
  /// Checks the next message from the peer (EBADMSG on a wrong or short tag,
  /// or once the channel has failed).
  Status open(std::span<const uint8_t> msg, std::span<const uint8_t> tag);

  uint64_t sent() const { return send_seq_; }
  uint64_t received() const { return recv_seq_; }
  bool failed() const { return failed_; }

 private:
  Hmac send_;
  Hmac recv_;
  uint64_t send_seq_ = 0;
  uint64_t recv_seq_ = 0;
  bool failed_ = false;
};

}  // namespace rcp::auth
