#include "wire/rails.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <fmt/core.h>

#include "wire/codec.h"

namespace rcp::wire {
namespace {

Error proto(std::string what) { return make_error(EPROTO, std::move(what)); }

/// rdma_cm pads private data (a REQ to 56 bytes, a REP to 196): what
/// follows a decoded part may only be zeros.
bool zeros(std::span<const uint8_t> rest) {
  return std::all_of(rest.begin(), rest.end(), [](uint8_t b) { return b == 0; });
}

/// Why `a` cannot be a peer's rail address, or nullptr.
const char* bad_rail_addr(const RailAddr& a) {
  if (a.family == 4) {
    if (!zeros(std::span(a.bytes).subspan(4))) return "an IPv4 rail address with non-zero padding";
    const uint8_t b0 = a.bytes[0];
    if (std::all_of(a.bytes.begin(), a.bytes.begin() + 4, [](uint8_t b) { return b == 0; }))
      return "the unspecified rail address 0.0.0.0";
    if (b0 == 127) return "a loopback rail address";
    if (b0 >= 224 && b0 <= 239) return "a multicast rail address";
    if (std::all_of(a.bytes.begin(), a.bytes.begin() + 4, [](uint8_t b) { return b == 255; }))
      return "the broadcast rail address";
    return nullptr;
  }
  if (a.family == 6) {
    in6_addr in6;
    std::memcpy(&in6, a.bytes.data(), 16);
    if (IN6_IS_ADDR_UNSPECIFIED(&in6)) return "the unspecified rail address ::";
    if (IN6_IS_ADDR_LOOPBACK(&in6)) return "a loopback rail address";
    if (IN6_IS_ADDR_MULTICAST(&in6)) return "a multicast rail address";
    return nullptr;
  }
  return "a rail address of unknown family";
}

}  // namespace

RailAddr rail_addr_v4(const in_addr& a) {
  RailAddr r;
  r.family = 4;
  std::memcpy(r.bytes.data(), &a, 4);
  return r;
}

RailAddr rail_addr_v6(const in6_addr& a) {
  RailAddr r;
  r.family = 6;
  std::memcpy(r.bytes.data(), &a, 16);
  return r;
}

std::string rail_addr_string(const RailAddr& a) {
  char buf[INET6_ADDRSTRLEN] = "?";
  inet_ntop(a.family == 4 ? AF_INET : AF_INET6, a.bytes.data(), buf, sizeof buf);
  return buf;
}

std::vector<uint8_t> encode_hello_rails(Hello h, uint64_t token, std::span<const RailAddr> addrs) {
  std::vector<uint8_t> out = encode_hello_token(h, kHelloToken | kHelloRails, token);
  Writer w(out);
  w.u8(static_cast<uint8_t>(addrs.size()));
  for (const RailAddr& a : addrs) {
    w.u8(a.family);
    w.bytes(a.bytes);
  }
  return out;
}

Result<std::vector<RailAddr>> decode_hello_rails(std::span<const uint8_t> buf) {
  if (buf.size() < kHelloTokenSize + 1) return proto("hello announces rails but holds no rail list");
  Reader r(buf.subspan(kHelloTokenSize));
  const uint8_t n = r.u8();
  if (n == 0 || n > kMaxRails - 1)
    return proto(fmt::format("hello announces {} more rails (1 to {} accepted)", n, kMaxRails - 1));
  std::vector<RailAddr> out;
  for (uint8_t i = 0; i < n; ++i) {
    RailAddr a;
    a.family = r.u8();
    r.bytes(a.bytes.data(), a.bytes.size());
    if (!r.ok()) return proto(fmt::format("rail list truncated at address {} of {}", i + 1, n));
    if (const char* why = bad_rail_addr(a)) return proto(fmt::format("hello announces {} (rail {})", why, i + 1));
    if (std::find(out.begin(), out.end(), a) != out.end())
      return proto(fmt::format("hello announces rail address {} twice", rail_addr_string(a)));
    out.push_back(a);
  }
  if (!zeros(buf.subspan(kHelloTokenSize + 1 + size_t{n} * kRailAddrSize)))
    return proto("rail list followed by more data");
  return out;
}

std::vector<uint8_t> encode_rail_join(Hello h, uint64_t token, uint8_t rail) {
  std::vector<uint8_t> out = encode_hello_token(h, kHelloJoin | kHelloRail, token);
  out.push_back(rail);
  return out;
}

Result<uint8_t> decode_rail_join(std::span<const uint8_t> buf, size_t announced) {
  if (buf.size() < kHelloTokenSize + 1) return proto("rail join without a rail index");
  const uint8_t rail = buf[kHelloTokenSize];
  if (rail == 0 || rail > announced)
    return proto(fmt::format("rail join names rail {} of the {} announced", rail, announced));
  return rail;
}

std::vector<uint8_t> encode_rail_keys(const RailKeys& k) {
  std::vector<uint8_t> out;
  Writer w(out);
  w.u32(kMagic);
  w.u16(protocol_version());
  w.u16(kRailKeysType);
  w.u32(static_cast<uint32_t>(5 + 5 * k.rkeys.size()));
  w.u32(k.key);
  w.u8(static_cast<uint8_t>(k.rkeys.size()));
  for (const RailKey& rk : k.rkeys) {
    w.u8(rk.rail);
    w.u32(rk.rkey);
  }
  return out;
}

bool is_rail_keys(std::span<const uint8_t> buf) {
  if (buf.size() < kHeaderSize) return false;
  Reader r(buf);
  const uint32_t magic = r.u32();
  r.u16();
  return magic == kMagic && r.u16() == kRailKeysType;
}

Result<RailKeys> decode_rail_keys(std::span<const uint8_t> buf) {
  if (!is_rail_keys(buf)) return proto("not a RAIL_KEYS message");
  Reader r(buf.subspan(8));
  const uint32_t len = r.u32();
  if (len != buf.size() - kHeaderSize)
    return proto(fmt::format("RAIL_KEYS length {} does not match {} bytes received", len, buf.size() - kHeaderSize));
  RailKeys k;
  k.key = r.u32();
  const uint8_t n = r.u8();
  if (n == 0 || n > kMaxRails - 1) return proto(fmt::format("RAIL_KEYS for {} more rails (1 to {} accepted)", n, kMaxRails - 1));
  for (uint8_t i = 0; i < n; ++i) {
    RailKey rk;
    rk.rail = r.u8();
    rk.rkey = r.u32();
    if (!r.ok()) return proto("truncated RAIL_KEYS message");
    if (rk.rail == 0 || rk.rail > kMaxRails - 1)
      return proto(fmt::format("RAIL_KEYS names rail {} (1 to {} accepted)", rk.rail, kMaxRails - 1));
    for (const RailKey& o : k.rkeys)
      if (o.rail == rk.rail) return proto(fmt::format("RAIL_KEYS names rail {} twice", rk.rail));
    k.rkeys.push_back(rk);
  }
  if (!r.at_end()) return proto(fmt::format("RAIL_KEYS message has {} trailing bytes", r.remaining()));
  return k;
}

std::vector<uint8_t> encode_rail_stats(std::span<const RailCount> counts) {
  std::vector<uint8_t> out;
  Writer w(out);
  w.u32(kMagic);
  w.u16(protocol_version());
  w.u16(kRailStatsType);
  w.u32(static_cast<uint32_t>(1 + 17 * counts.size()));
  w.u8(static_cast<uint8_t>(counts.size()));
  for (const RailCount& c : counts) {
    w.u8(c.rail);
    w.u64(c.bytes);
    w.u64(c.chunks);
  }
  return out;
}

bool is_rail_stats(std::span<const uint8_t> buf) {
  if (buf.size() < kHeaderSize) return false;
  Reader r(buf);
  const uint32_t magic = r.u32();
  r.u16();
  return magic == kMagic && r.u16() == kRailStatsType;
}

Result<std::vector<RailCount>> decode_rail_stats(std::span<const uint8_t> buf) {
  if (!is_rail_stats(buf)) return proto("not a RAIL_STATS message");
  Reader r(buf.subspan(8));
  const uint32_t len = r.u32();
  if (len != buf.size() - kHeaderSize)
    return proto(fmt::format("RAIL_STATS length {} does not match {} bytes received", len, buf.size() - kHeaderSize));
  const uint8_t n = r.u8();
  if (n == 0 || n > kMaxRails) return proto(fmt::format("RAIL_STATS for {} rails (1 to {} accepted)", n, kMaxRails));
  std::vector<RailCount> out;
  for (uint8_t i = 0; i < n; ++i) {
    RailCount c;
    c.rail = r.u8();
    c.bytes = r.u64();
    c.chunks = r.u64();
    if (!r.ok()) return proto("truncated RAIL_STATS message");
    if (c.rail >= kMaxRails) return proto(fmt::format("RAIL_STATS names rail {} (0 to {} accepted)", c.rail, kMaxRails - 1));
    if (c.chunks > c.bytes)
      return proto(fmt::format("RAIL_STATS: rail {} read {} chunks in {} bytes", c.rail, c.chunks, c.bytes));
    for (const RailCount& o : out)
      if (o.rail == c.rail) return proto(fmt::format("RAIL_STATS names rail {} twice", c.rail));
    out.push_back(c);
  }
  if (!r.at_end()) return proto(fmt::format("RAIL_STATS message has {} trailing bytes", r.remaining()));
  return out;
}

std::vector<uint8_t> encode_control_moved(uint64_t received) {
  std::vector<uint8_t> out;
  Writer w(out);
  w.u32(kMagic);
  w.u16(protocol_version());
  w.u16(kControlMovedType);
  w.u32(8);
  w.u64(received);
  return out;
}

bool is_control_moved(std::span<const uint8_t> buf) {
  if (buf.size() < kHeaderSize) return false;
  Reader r(buf);
  const uint32_t magic = r.u32();
  r.u16();
  return magic == kMagic && r.u16() == kControlMovedType;
}

Result<uint64_t> decode_control_moved(std::span<const uint8_t> buf) {
  if (!is_control_moved(buf)) return proto("not a CONTROL_MOVED message");
  Reader r(buf.subspan(8));
  const uint32_t len = r.u32();
  if (len != 8 || buf.size() != kHeaderSize + 8)
    return proto(fmt::format("CONTROL_MOVED of {} bytes (8 expected)", buf.size() - std::min(buf.size(), kHeaderSize)));
  return r.u64();
}

}  // namespace rcp::wire
