// The daemon's bookkeeping for limits (daemon/server.h): which address a
// peer counts under, and how repeated refusals stay out of the log.
#include <doctest/doctest.h>

#include "daemon/server.h"

using namespace rcp;
using namespace std::chrono_literals;

TEST_CASE("peer_host: the address a peer counts under for max_per_host") {
  CHECK(peer_host("10.0.0.1:5555") == "10.0.0.1");
  CHECK(peer_host("::1:5555") == "::1");        // TCP listener: IPv6 without brackets
  CHECK(peer_host("[fe80::1]:7471") == "fe80::1");  // rdma_cm: with brackets
  CHECK(peer_host("10.0.0.1:1") == peer_host("10.0.0.1:2"));
}

TEST_CASE("LogLimiter: the first line per key, then one per interval with the count dropped") {
  LogLimiter l(10000ms);
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  uint64_t dropped = 99;
  CHECK(l.allow("host a", t0, dropped));
  CHECK(dropped == 0);
  for (int i = 0; i < 12; ++i) CHECK_FALSE(l.allow("host a", t0 + 1s, dropped));
  CHECK(l.allow("host b", t0 + 1s, dropped));  // another peer is its own key
  CHECK_FALSE(l.allow("host a", t0 + 9999ms, dropped));
  CHECK(l.allow("host a", t0 + 10s, dropped));
  CHECK(dropped == 13);
  CHECK_FALSE(l.allow("host a", t0 + 11s, dropped));
}

TEST_CASE("LogLimiter forgets idle keys, so a flood of addresses cannot grow it without bound") {
  LogLimiter l(1000ms);
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  uint64_t d = 0;
  for (int i = 0; i < 5000; ++i) l.allow("k" + std::to_string(i), t0 + std::chrono::milliseconds(i), d);
  CHECK(l.size() <= 1025 + 1000);
}
