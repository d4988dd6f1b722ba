/// Multi-rail RDMA sessions (rcp --rails): what travels so a copy can stripe
/// its READs over several RDMA devices. Three pieces, all transport-level
/// (the engine never sees them):
///  - the daemon's accept hello may be followed, after the session token, by
///    the addresses of its other rails (kHelloRails): one per RDMA device
///    other than the one the session arrived on;
///  - a rail join (kHelloJoin | kHelloRail) is a join hello, the token, then
///    the 1-based index of the announced address it connected to;
///  - RAIL_KEYS, sent by a side that registered memory for remote reading on
///    several rails: the key the engine quotes (rail 0's rkey) and the rkey
///    of the same memory on each other rail (an MR belongs to one PD, a PD to
///    one device, so every rail has its own rkey).
/// Everything here comes from the peer: counts, families, addresses and
/// indexes are bounded and a lying value is refused, never clamped.
#pragma once

#include <netinet/in.h>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "util/result.h"
#include "wire/messages.h"

namespace rcp::wire {

/// Most rails one session may use, the first (the control connection's
/// device) included. 4 keeps the daemon's accept private data at
/// 32 + 8 + 1 + 3 × 17 = 92 bytes, well under the 196 an IB/RoCE REP holds,
/// and bounds the PDs, CQs and registrations one client makes rcpd create.
constexpr uint32_t kMaxRails = 4;

/// Client hello: the client would use several rails (the daemon then
/// announces its other addresses and sets up a PD and CQ per device).
constexpr uint32_t kHelloWantRails = 1u << 3;
/// Daemon hello: the token is followed by a rail address list.
constexpr uint32_t kHelloRails = 1u << 4;
/// Join hello: the token is followed by the rail index joined (1-based).
constexpr uint32_t kHelloRail = 1u << 5;
/// Rail join hello: this queue pair (the first of its rail) also carries a
/// standby control channel — receive buffers posted before it connects —
/// that control moves to should rail 0's link fail (CONTROL_MOVED below).
constexpr uint32_t kHelloRailStandby = 1u << 7;
/// Client hello: the client takes RAIL_STATS (the daemon then reports what
/// it read over each rail, so a push's --json has per-rail bytes).
constexpr uint32_t kHelloRailStats = 1u << 6;

/// One rail address: IPv4 or IPv6, as carried (family byte 4 or 6, then 16
/// bytes; an IPv4 address is its 4 bytes followed by 12 zero bytes).
struct RailAddr {
  uint8_t family = 4;  ///< 4 or 6
  std::array<uint8_t, 16> bytes{};
  bool operator==(const RailAddr&) const = default;
};
constexpr size_t kRailAddrSize = 17;

RailAddr rail_addr_v4(const in_addr& a);
RailAddr rail_addr_v6(const in6_addr& a);
/// "10.78.0.2" or "fe80::1".
std::string rail_addr_string(const RailAddr& a);

/// The daemon's accept: hello, token, then u8 count and count addresses.
/// count <= kMaxRails - 1 (the caller passes at most that many).
std::vector<uint8_t> encode_hello_rails(Hello h, uint64_t token, std::span<const RailAddr> addrs);
/// The addresses behind a hello+token (buf as given to decode_hello, whose
/// flags said kHelloRails). Refuses a count of 0 or above kMaxRails - 1, an
/// unknown family, an IPv4 entry with non-zero padding, an unspecified,
/// loopback, multicast or broadcast address, a duplicate, and a list that is
/// truncated or followed by more bytes.
Result<std::vector<RailAddr>> decode_hello_rails(std::span<const uint8_t> buf);

/// A rail join: the hello with kHelloJoin | kHelloRail, the token, the index.
std::vector<uint8_t> encode_rail_join(Hello h, uint64_t token, uint8_t rail);
/// The rail index of a rail join; refuses 0, an index above `announced`
/// (the addresses this session announced) and a missing byte.
Result<uint8_t> decode_rail_join(std::span<const uint8_t> buf, size_t announced);

/// RAIL_KEYS: a message of its own type outside the engine's range (the
/// engine's decode refuses it), so the connection can take it off the
/// control stream first. magic, version, type, length, then key u32,
/// u8 count, count × (rail u8, rkey u32). Rails are numbered as the daemon
/// announced them (1..kMaxRails-1); a client that did not join one leaves
/// it out.
constexpr uint16_t kRailKeysType = 0x7201;
struct RailKey {
  uint8_t rail = 0;
  uint32_t rkey = 0;
  bool operator==(const RailKey&) const = default;
};
struct RailKeys {
  uint32_t key = 0;             ///< what the engine quotes: rail 0's rkey
  std::vector<RailKey> rkeys;   ///< the same memory on other rails
  bool operator==(const RailKeys&) const = default;
};
std::vector<uint8_t> encode_rail_keys(const RailKeys& k);
/// True if buf is a RAIL_KEYS message (header check only).
bool is_rail_keys(std::span<const uint8_t> buf);
/// Refuses a count of 0 or above kMaxRails - 1, a rail index of 0 or above
/// kMaxRails - 1, the same rail twice and a length that does not match.
Result<RailKeys> decode_rail_keys(std::span<const uint8_t> buf);

/// RAIL_STATS, sent by the daemon to a client whose hello set
/// kHelloRailStats, before a control message whenever its counts changed
/// (so its last message is preceded by the final counts): what it read over
/// each rail so far. magic, version, type, length, then u8 count, count ×
/// (rail u8, bytes u64, chunks u64). Rail 0 is the control connection's
/// device, the others are numbered as announced.
constexpr uint16_t kRailStatsType = 0x7202;
struct RailCount {
  uint8_t rail = 0;
  uint64_t bytes = 0, chunks = 0;
  bool operator==(const RailCount&) const = default;
};
std::vector<uint8_t> encode_rail_stats(std::span<const RailCount> counts);
/// True if buf is a RAIL_STATS message (header check only).
bool is_rail_stats(std::span<const uint8_t> buf);
/// Refuses a count of 0 or above kMaxRails, a rail index of kMaxRails or
/// more, the same rail twice, more chunks than bytes (a chunk is at least a
/// byte) and a length that does not match. Whether the rails are ones the
/// session has, and whether the bytes fit what was offered, is the
/// receiver's to check.
Result<std::vector<RailCount>> decode_rail_stats(std::span<const uint8_t> buf);

/// CONTROL_MOVED: the first message on a rail's standby control channel,
/// sent by each side when control leaves rail 0 (its link failed): how many
/// sends of the peer's (messages and credit-only sends alike) this side took
/// off rail 0 before it stopped listening there. Each side then sends again,
/// on the new channel, what it sent from that count on (the rest the peer
/// has). magic, version, type, length 8, then received u64.
constexpr uint16_t kControlMovedType = 0x7203;
std::vector<uint8_t> encode_control_moved(uint64_t received);
/// True if buf is a CONTROL_MOVED message (header check only).
bool is_control_moved(std::span<const uint8_t> buf);
/// Refuses a length other than 8. Whether the count is one this side could
/// have sent is the receiver's to check (ControlLog::since).
Result<uint64_t> decode_control_moved(std::span<const uint8_t> buf);

}  // namespace rcp::wire
