// Proves CIDR rules parse strictly (hostile prefixes and garbage refused), match v4, v6 and
// v4-mapped peers at every prefix edge, and that hosts_allow/hosts_deny follow rsyncd's order.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <string>

#include "daemon/access.h"

using namespace rcp;
using namespace rcp::daemon;

namespace {

IpAddress ip(const char* s) {
  auto r = parse_ip(s);
  REQUIRE_MESSAGE(r.ok(), s);
  return r.value();
}
Cidr cidr(const char* s) {
  auto r = parse_cidr(s);
  REQUIRE_MESSAGE(r.ok(), s, ": ", (r.ok() ? "" : r.error().context));
  return r.value();
}

}  // namespace

TEST_CASE("parse_ip: v4, v6 and v4-mapped normalise to one form") {
  CHECK(ip("10.1.2.3").is_v4());
  CHECK(ip("::ffff:10.1.2.3") == ip("10.1.2.3"));
  CHECK_FALSE(ip("::1").is_v4());
  CHECK(ip("10.1.2.3").to_string() == "10.1.2.3");
  CHECK(ip("2001:DB8::1").to_string() == "2001:db8::1");
  for (const char* badtext : {"", " 10.0.0.1", "10.0.0.1 ", "10.0.0", "10.0.0.256", "localhost", "fe80::1%eth0",
                              "1:2:3:4:5:6:7:8:9", "::g", "10.0.0.1\n"}) {
    auto r = parse_ip(badtext);
    CHECK_MESSAGE(!r.ok(), badtext);
    if (!r.ok()) CHECK(r.error().code == EINVAL);
  }
  CHECK_FALSE(parse_ip(std::string_view("10.0.0.1\0", 9)).ok());
}

TEST_CASE("ip_from_sockaddr: AF_INET and AF_INET6, nothing else") {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  inet_pton(AF_INET, "192.0.2.9", &in.sin_addr);
  auto a = ip_from_sockaddr(reinterpret_cast<sockaddr*>(&in), sizeof in);
  REQUIRE(a.ok());
  CHECK(a.value() == ip("192.0.2.9"));
  CHECK_FALSE(ip_from_sockaddr(reinterpret_cast<sockaddr*>(&in), sizeof in - 1).ok());

  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  inet_pton(AF_INET6, "2001:db8::7", &in6.sin6_addr);
  auto b = ip_from_sockaddr(reinterpret_cast<sockaddr*>(&in6), sizeof in6);
  REQUIRE(b.ok());
  CHECK(b.value() == ip("2001:db8::7"));
  CHECK_FALSE(ip_from_sockaddr(reinterpret_cast<sockaddr*>(&in6), sizeof in6 - 1).ok());

  sockaddr un{};
  un.sa_family = AF_UNIX;
  auto c = ip_from_sockaddr(&un, sizeof un);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().code == EAFNOSUPPORT);
  CHECK_FALSE(ip_from_sockaddr(nullptr, 0).ok());
}

TEST_CASE("parse_cidr: prefixes at the edges, bare addresses") {
  CHECK(cidr("10.0.0.0/8").prefix == 104);
  CHECK(cidr("10.0.0.0/8").v4);
  CHECK(cidr("10.0.0.7").prefix == 128);   // bare v4 = /32
  CHECK(cidr("10.0.0.7/32").prefix == 128);
  CHECK(cidr("0.0.0.0/0").prefix == 96);   // all of IPv4, not IPv6
  CHECK(cidr("::1").prefix == 128);        // bare v6 = /128
  CHECK(cidr("::/0").prefix == 0);
  CHECK(cidr("2001:db8::/32").prefix == 32);
  CHECK(cidr("::ffff:10.0.0.0/104").prefix == 104);
  CHECK_FALSE(cidr("::ffff:10.0.0.0/104").v4);
  CHECK(cidr("10.0.0.0/8").to_string() == "10.0.0.0/8");
  CHECK(cidr("2001:db8::/32").to_string() == "2001:db8::/32");
  CHECK(cidr("::ffff:10.0.0.0/104").to_string() == "::ffff:10.0.0.0/104");
  for (const char* t : {"10.0.0.0/8", "0.0.0.0/0", "1.2.3.4", "::/0", "::1", "::ffff:10.0.0.0/104", "fe80::/10"})
    CHECK_MESSAGE(cidr(cidr(t).to_string().c_str()) == cidr(t), t);  // the text parses back to the same rule
}

TEST_CASE("parse_cidr: hostile and malformed rules are refused with EINVAL naming the text") {
  for (const char* t : {"10.0.0.0/33", "::1/129", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/08",
                        "10.0.0.0/8/8", "10.0.0.0/ 8", "10.0.0.0/8 ", "10.0.0.0/1000", "10.0.0.0/4294967304",
                        "/8", "", "garbage", "10.0.0.0/x", "*", "10.0.0.*", "host.example/24",
                        "10.0.0.1/8",        // host bits set
                        "2001:db8::1/64",    // host bits set
                        "::ffff:10.0.0.1/104"}) {
    auto r = parse_cidr(t);
    CHECK_MESSAGE(!r.ok(), t);
    if (!r.ok()) {
      CHECK(r.error().code == EINVAL);
      CHECK(r.error().context.find(std::string("'") + t + "'") != std::string::npos);
    }
  }
  CHECK_FALSE(parse_cidr("10.0.0.0/0x").ok());
  CHECK_FALSE(parse_cidr(std::string_view("10.0.0.0/8\0", 11)).ok());
}

TEST_CASE("Cidr::contains: prefix boundaries, families and v4-mapped peers") {
  const Cidr ten = cidr("10.0.0.0/8");
  CHECK(ten.contains(ip("10.0.0.0")));
  CHECK(ten.contains(ip("10.255.255.255")));
  CHECK(ten.contains(ip("::ffff:10.9.8.7")));  // a v4 peer on a dual-stack socket
  CHECK_FALSE(ten.contains(ip("11.0.0.0")));
  CHECK_FALSE(ten.contains(ip("9.255.255.255")));
  CHECK_FALSE(ten.contains(ip("::a00:1")));  // v4-compatible (not mapped) is IPv6

  const Cidr odd = cidr("192.168.4.0/22");  // a prefix that is not a byte boundary
  CHECK(odd.contains(ip("192.168.7.255")));
  CHECK_FALSE(odd.contains(ip("192.168.8.0")));
  CHECK_FALSE(odd.contains(ip("192.168.3.255")));

  const Cidr host = cidr("10.0.0.7/32");
  CHECK(host.contains(ip("10.0.0.7")));
  CHECK_FALSE(host.contains(ip("10.0.0.6")));
  CHECK_FALSE(host.contains(ip("10.0.0.8")));

  const Cidr all4 = cidr("0.0.0.0/0");
  CHECK(all4.contains(ip("1.2.3.4")));
  CHECK(all4.contains(ip("::ffff:1.2.3.4")));
  CHECK_FALSE(all4.contains(ip("::1")));

  const Cidr all = cidr("::/0");
  CHECK(all.contains(ip("::1")));
  CHECK(all.contains(ip("1.2.3.4")));

  const Cidr lo6 = cidr("::1/128");
  CHECK(lo6.contains(ip("::1")));
  CHECK_FALSE(lo6.contains(ip("::2")));
  CHECK_FALSE(lo6.contains(ip("127.0.0.1")));

  const Cidr net6 = cidr("2001:db8:8000::/33");
  CHECK(net6.contains(ip("2001:db8:ffff::1")));
  CHECK_FALSE(net6.contains(ip("2001:db8:7fff::1")));

  const Cidr mapped = cidr("::ffff:10.0.0.0/104");  // IPv6 spelling of 10.0.0.0/8
  CHECK(mapped.contains(ip("10.1.1.1")));
  CHECK_FALSE(mapped.contains(ip("11.1.1.1")));
}

TEST_CASE("host_allowed: the most specific rule decides, deny wins a tie, absent allow = everyone") {
  HostRules open;
  CHECK(host_allowed(open, ip("203.0.113.5")));
  CHECK(host_allowed(open, ip("2001:db8::5")));

  HostRules only_lan;
  only_lan.allow = std::vector<Cidr>{cidr("10.0.0.0/8"), cidr("::1")};
  CHECK(host_allowed(only_lan, ip("10.1.2.3")));
  CHECK(host_allowed(only_lan, ip("::ffff:10.1.2.3")));
  CHECK(host_allowed(only_lan, ip("::1")));
  CHECK_FALSE(host_allowed(only_lan, ip("11.1.2.3")));
  CHECK_FALSE(host_allowed(only_lan, ip("127.0.0.1")));

  HostRules nobody;
  nobody.allow = std::vector<Cidr>{};
  CHECK_FALSE(host_allowed(nobody, ip("10.1.2.3")));

  HostRules deny_some;
  deny_some.deny = {cidr("192.0.2.0/24"), cidr("2001:db8::/32")};
  CHECK_FALSE(host_allowed(deny_some, ip("192.0.2.1")));
  CHECK_FALSE(host_allowed(deny_some, ip("::ffff:192.0.2.1")));
  CHECK_FALSE(host_allowed(deny_some, ip("2001:db8::1")));
  CHECK(host_allowed(deny_some, ip("198.51.100.1")));
  CHECK(host_allowed(deny_some, ip("2001:db9::1")));

  // Deny a whole network but let one host of it in: the explicit allow wins.
  HostRules exception;
  exception.allow = std::vector<Cidr>{cidr("10.0.0.7")};
  exception.deny = {cidr("10.0.0.0/8")};
  CHECK(host_allowed(exception, ip("10.0.0.7")));
  CHECK_FALSE(host_allowed(exception, ip("10.0.0.8")));
  // Neither matched and an allow list exists: refused even though deny did not match.
  CHECK_FALSE(host_allowed(exception, ip("172.16.0.1")));

  // Allow a network but deny a part of it: the narrower deny wins (rsyncd would let 10.9.x in).
  HostRules carve;
  carve.allow = std::vector<Cidr>{cidr("10.0.0.0/8")};
  carve.deny = {cidr("10.9.0.0/16")};
  CHECK(host_allowed(carve, ip("10.8.255.255")));
  CHECK_FALSE(host_allowed(carve, ip("10.9.0.1")));
  CHECK_FALSE(host_allowed(carve, ip("::ffff:10.9.0.1")));

  // The same block in both lists: deny wins the tie.
  HostRules tie;
  tie.allow = std::vector<Cidr>{cidr("192.0.2.0/24")};
  tie.deny = {cidr("192.0.2.0/24")};
  CHECK_FALSE(host_allowed(tie, ip("192.0.2.1")));

  // The most specific of several rules in each list, whatever their order.
  HostRules layered;
  layered.allow = std::vector<Cidr>{cidr("10.9.9.0/24"), cidr("10.0.0.0/8")};
  layered.deny = {cidr("10.9.0.0/16"), cidr("::/0")};
  CHECK(host_allowed(layered, ip("10.9.9.9")));      // /24 allow beats /16 deny
  CHECK_FALSE(host_allowed(layered, ip("10.9.8.9")));  // /16 deny beats /8 allow
  CHECK(host_allowed(layered, ip("10.1.1.1")));      // /104 (v4 /8) allow beats ::/0 deny
  CHECK_FALSE(host_allowed(layered, ip("2001:db8::1")));

  // /0 allow with a /128 deny.
  HostRules all_but_one;
  all_but_one.allow = std::vector<Cidr>{cidr("::/0")};
  all_but_one.deny = {cidr("2001:db8::66")};
  CHECK(host_allowed(all_but_one, ip("2001:db8::67")));
  CHECK(host_allowed(all_but_one, ip("127.0.0.1")));
  CHECK_FALSE(host_allowed(all_but_one, ip("2001:db8::66")));
}
