/// Typed work-request ids. Every verbs work request carries a 64-bit wr_id
/// that its completion hands back; ours says what the request was (a control
/// receive, a control send, the last READ of a chunk) and which buffer or
/// chunk it belongs to. Encoding and decoding live here and nowhere else, so
/// no other file shifts or masks wr_id bits.
///
/// Layout (unchanged from the hand-packed one it replaces): kind in the top
/// 8 bits, value in the low 56 — a control buffer index for receives and
/// sends, the engine's read cookie for READs. The engine numbers cookies
/// from 0 upwards, so 56 bits never run out. Kind 0 is never issued, so a
/// zeroed wr_id does not decode.
#pragma once

#include <cstdint>
#include <optional>

namespace rcp::rdma {

enum class WrKind : uint8_t {
  recv = 1,  ///< a control receive buffer; value = its index
  send = 2,  ///< a control send buffer; value = its index
  read = 3,  ///< the signalled (last) READ of a chunk; value = the engine's cookie
};

struct WrId {
  static constexpr unsigned kKindBits = 8;
  static constexpr unsigned kValueBits = 56;
  static constexpr uint64_t kMaxValue = (uint64_t{1} << kValueBits) - 1;
  static_assert(kKindBits + kValueBits == 64, "a WrId fills wr_id exactly");
  static_assert(static_cast<unsigned>(WrKind::read) < (1u << kKindBits), "every kind fits its bits");

  WrKind kind = WrKind::recv;
  uint64_t value = 0;

  /// Whether value can ride in a wr_id (check before encode()).
  static constexpr bool fits(uint64_t v) { return v <= kMaxValue; }

  /// The wr_id to post. Callers check fits() first; a value too large is
  /// truncated to its low 56 bits, never allowed to corrupt the kind.
  constexpr uint64_t encode() const {
    return (uint64_t{static_cast<uint8_t>(kind)} << kValueBits) | (value & kMaxValue);
  }

  /// The WrId a completion carries, or nothing when wr_id is not one we
  /// issue (unknown kind).
  static constexpr std::optional<WrId> decode(uint64_t raw) {
    const auto k = static_cast<uint8_t>(raw >> kValueBits);
    switch (static_cast<WrKind>(k)) {
      case WrKind::recv:
      case WrKind::send:
      case WrKind::read: return WrId{static_cast<WrKind>(k), raw & kMaxValue};
    }
    return std::nullopt;
  }

  friend constexpr bool operator==(const WrId&, const WrId&) = default;
};

constexpr const char* wr_kind_name(WrKind k) {
  switch (k) {
    case WrKind::recv: return "RECV";
    case WrKind::send: return "SEND";
    case WrKind::read: return "RDMA READ";
  }
  return "unknown work request";
}

}  // namespace rcp::rdma
