#include "daemon/access.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace rcp::daemon {
namespace {

constexpr std::array<uint8_t, 12> kV4MappedPrefix = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

Error bad(std::string_view text, std::string_view why) {
  return make_error(EINVAL, "'" + std::string(text) + "': " + std::string(why));
}

/// inet_pton wants a NUL-terminated string; it also refuses blanks and names.
bool pton(int family, std::string_view text, void* out) {
  if (text.find('\0') != std::string_view::npos) return false;  // c_str() would cut the text there
  std::string s(text);
  return inet_pton(family, s.c_str(), out) == 1;
}

}  // namespace

bool IpAddress::is_v4() const {
  return std::equal(kV4MappedPrefix.begin(), kV4MappedPrefix.end(), bytes.begin());
}

std::string IpAddress::to_string() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (is_v4()) {
    inet_ntop(AF_INET, bytes.data() + 12, buf, sizeof buf);
  } else {
    inet_ntop(AF_INET6, bytes.data(), buf, sizeof buf);
  }
  return buf;
}

Result<IpAddress> parse_ip(std::string_view text) {
  IpAddress a;
  in_addr v4{};
  if (pton(AF_INET, text, &v4)) {
    std::copy(kV4MappedPrefix.begin(), kV4MappedPrefix.end(), a.bytes.begin());
    std::memcpy(a.bytes.data() + 12, &v4, 4);
    return a;
  }
  if (pton(AF_INET6, text, a.bytes.data())) return a;
  return bad(text, "not an IPv4 or IPv6 address");
}

Result<IpAddress> ip_from_sockaddr(const sockaddr* sa, socklen_t len) {
  IpAddress a;
  if (sa != nullptr && sa->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    sockaddr_in in{};
    std::memcpy(&in, sa, sizeof in);
    std::copy(kV4MappedPrefix.begin(), kV4MappedPrefix.end(), a.bytes.begin());
    std::memcpy(a.bytes.data() + 12, &in.sin_addr, 4);
    return a;
  }
  if (sa != nullptr && sa->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, sa, sizeof in6);
    std::memcpy(a.bytes.data(), &in6.sin6_addr, 16);
    return a;
  }
  return make_error(EAFNOSUPPORT, "peer address is neither IPv4 nor IPv6");
}

bool Cidr::contains(const IpAddress& a) const {
  const unsigned full = prefix / 8, rest = prefix % 8;
  if (!std::equal(base.bytes.begin(), base.bytes.begin() + full, a.bytes.begin())) return false;
  if (rest == 0) return true;
  const uint8_t mask = static_cast<uint8_t>(0xff00u >> rest);
  return (base.bytes[full] & mask) == (a.bytes[full] & mask);
}

std::string Cidr::to_string() const {
  if (v4) return base.to_string() + "/" + std::to_string(prefix - 96);
  // An IPv6 rule keeps its IPv6 spelling even over the v4-mapped block, so
  // the text parses back to the same rule.
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, base.bytes.data(), buf, sizeof buf);
  return std::string(buf) + "/" + std::to_string(prefix);
}

Result<Cidr> parse_cidr(std::string_view text) {
  const size_t slash = text.find('/');
  const std::string_view addr = text.substr(0, slash);
  auto ip = parse_ip(addr);
  if (!ip) return bad(text, "not an IPv4 or IPv6 address or CIDR block");
  Cidr c;
  c.base = ip.value();
  // A rule in IPv4 notation; "::ffff:10.0.0.0/104" is an IPv6 rule that
  // happens to cover the same v4-mapped block, and its prefix counts 128 bits.
  c.v4 = addr.find(':') == std::string_view::npos;
  const unsigned width = c.v4 ? 32 : 128;
  unsigned len = width;
  if (slash != std::string_view::npos) {
    const std::string_view p = text.substr(slash + 1);
    if (p.empty() || p.size() > 3) return bad(text, "prefix length must be 0 to " + std::to_string(width));
    if (p.size() > 1 && p[0] == '0') return bad(text, "prefix length has a leading zero");
    len = 0;
    for (char ch : p) {
      if (ch < '0' || ch > '9') return bad(text, "prefix length must be 0 to " + std::to_string(width));
      len = len * 10 + static_cast<unsigned>(ch - '0');
    }
    if (len > width) return bad(text, "prefix length " + std::to_string(len) + " exceeds " + std::to_string(width));
  }
  c.prefix = static_cast<uint8_t>(c.v4 ? len + 96 : len);
  // Host bits beyond the prefix must be zero.
  for (unsigned bit = c.prefix; bit < 128; ++bit) {
    if (c.base.bytes[bit / 8] & (0x80u >> (bit % 8))) {
      return bad(text, "address has bits set beyond the /" + std::to_string(len) +
                           " prefix (did you mean a bare address, or the network address?)");
    }
  }
  return c;
}

bool host_allowed(const HostRules& rules, const IpAddress& peer) {
  // Longest matching prefix in each list, -1 for none.
  auto best = [&](const std::vector<Cidr>& list) {
    int longest = -1;
    for (const Cidr& c : list)
      if (c.prefix > longest && c.contains(peer)) longest = c.prefix;
    return longest;
  };
  const int allow = rules.allow ? best(*rules.allow) : -1;
  const int deny = best(rules.deny);
  if (allow < 0 && deny < 0) return !rules.allow.has_value();
  return allow > deny;
}

}  // namespace rcp::daemon
