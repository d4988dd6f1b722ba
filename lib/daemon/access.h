/// Host access rules for rcpd modules: CIDR blocks for IPv4 and IPv6 and the
/// rsyncd decision between hosts_allow and hosts_deny. Every address is kept in
/// the 16-byte IPv6 form, IPv4 as the v4-mapped ::ffff:a.b.c.d (a v4 rule
/// "10.0.0.0/8" is ::ffff:10.0.0.0/104), so a v4 rule matches a v4 peer that
/// arrives on a dual-stack socket as ::ffff:10.1.2.3 exactly as one that
/// arrives on an AF_INET socket. Pure logic, no DNS: a name is never a rule.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace rcp::daemon {

/// One peer address, normalised to 16 bytes (IPv4 as v4-mapped IPv6).
struct IpAddress {
  std::array<uint8_t, 16> bytes{};
  /// True when the address is IPv4 or v4-mapped IPv6.
  bool is_v4() const;
  /// "10.1.2.3" for v4 and v4-mapped, "2001:db8::1" otherwise.
  std::string to_string() const;
  bool operator==(const IpAddress&) const = default;
};

/// A literal address: "192.0.2.7", "2001:db8::1", "::ffff:192.0.2.7". No
/// names, no scope ids ("fe80::1%eth0"), no surrounding blanks.
Result<IpAddress> parse_ip(std::string_view text);
/// The address of an accepted socket's peer (AF_INET or AF_INET6; EAFNOSUPPORT otherwise).
Result<IpAddress> ip_from_sockaddr(const sockaddr* sa, socklen_t len);

/// A block of addresses: "10.0.0.0/8", "2001:db8::/32", or a bare address
/// (/32 for IPv4, /128 for IPv6). The prefix is stored in the 16-byte form
/// (an IPv4 /8 is 104).
struct Cidr {
  IpAddress base;
  uint8_t prefix = 128;
  /// True for a rule written in IPv4 notation.
  bool v4 = false;
  bool contains(const IpAddress& a) const;
  /// The rule as written in canonical form ("10.0.0.0/8", "::1/128").
  std::string to_string() const;
  bool operator==(const Cidr&) const = default;
};

/// Parses a rule. Refused (EINVAL, naming the text): a prefix past the family's
/// width (10.0.0.0/33, ::1/129), a prefix with a sign, blanks or leading zeros
/// beyond one digit ("/08"), an empty prefix ("10.0.0.0/"), host bits set
/// beyond the prefix ("10.0.0.1/8": almost always a typo for /32 or
/// 10.0.0.0/8), and anything that is not a literal address.
Result<Cidr> parse_cidr(std::string_view text);

/// The access rules of one module, as in rsyncd.conf.
struct HostRules {
  /// Absent: every host may connect (subject to deny). Present: only hosts
  /// matching it are certain to be let in; an empty list lets no one in.
  std::optional<std::vector<Cidr>> allow;
  std::vector<Cidr> deny;
};

/// The decision for one peer. The most specific matching rule decides: of
/// the rules in allow and deny that contain the peer, the one with the
/// longest prefix wins, and deny wins a tie. No rule matches: admitted when
/// there is no allow list, refused when there is one (an empty list included).
///
/// rsyncd checks allow first and lets a peer matching it in whatever deny
/// says, so "allow 10.0.0.0/8, deny 10.9.0.0/16" admits 10.9.1.1 there. Here
/// it is refused (the deny is more specific), while "deny 10.0.0.0/8, allow
/// 10.0.0.7" still lets that one host in as in rsyncd. The two agree except
/// when a peer matches both lists; a deny is never silently ignored.
bool host_allowed(const HostRules& rules, const IpAddress& peer);

}  // namespace rcp::daemon
