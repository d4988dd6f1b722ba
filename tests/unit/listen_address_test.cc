#include <doctest/doctest.h>

#include "daemon/listen_address.h"

using rcp::daemon::parse_listen;
using rcp::daemon::parse_port;

namespace {
std::pair<std::string, uint16_t> ok(const std::string& v) {
  auto r = parse_listen(v);
  REQUIRE_MESSAGE(r.ok(), v);
  return r.value();
}
std::string err(const std::string& v) {
  auto r = parse_listen(v);
  REQUIRE_MESSAGE(!r.ok(), v);
  return r.error().context;
}
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("parse_listen: every address, one address, IPv6 bare or in brackets, with or without a port") {
  CHECK(ok("*") == std::make_pair(std::string(), uint16_t{0}));
  CHECK(ok("") == std::make_pair(std::string(), uint16_t{0}));
  CHECK(ok("*:7472") == std::make_pair(std::string(), uint16_t{7472}));
  CHECK(ok("127.0.0.1:7472") == std::make_pair(std::string("127.0.0.1"), uint16_t{7472}));
  CHECK(ok("host.example") == std::make_pair(std::string("host.example"), uint16_t{0}));
  CHECK(ok("::1") == std::make_pair(std::string("::1"), uint16_t{0}));  // more than one ':': all address
  CHECK(ok("[::1]") == std::make_pair(std::string("::1"), uint16_t{0}));
  CHECK(ok("[fe80::1]:65535") == std::make_pair(std::string("fe80::1"), uint16_t{65535}));
}

TEST_CASE("parse_listen: what is wrong, in words naming the value") {
  CHECK(has(err("[::1"), "--listen '[::1': unterminated '['"));
  CHECK(has(err("[::1]7472"), "expected ':PORT' after ']'"));
  CHECK(has(err("[::1]:"), "empty port after ':'"));
  CHECK(has(err("127.0.0.1:"), "empty port after ':'"));
  CHECK(has(err("h:abc"), "port 'abc' is not a number from 1 to 65535"));
  CHECK(has(err("h:0"), "port '0' is not"));
  CHECK(has(err("h:65536"), "port '65536' is not"));
  CHECK(has(err("[::1]:99999"), "port '99999' is not"));
}

TEST_CASE("parse_port: digits only, 1 to 65535") {
  CHECK(parse_port("1") == uint16_t{1});
  CHECK(parse_port("65535") == uint16_t{65535});
  CHECK(parse_port("00080") == uint16_t{80});
  CHECK(!parse_port(""));
  CHECK(!parse_port("0"));
  CHECK(!parse_port("65536"));
  CHECK(!parse_port("123456"));  // (more than five digits: never summed past a uint)
  CHECK(!parse_port("+80"));
  CHECK(!parse_port("8 0"));
  CHECK(!parse_port("1/"));  // ('/' - '0' wraps: summed blindly it would read as 9)
}
