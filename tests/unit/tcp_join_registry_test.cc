// The registry through which extra TCP streams (later RDMA queue pairs)
// join their session: joins capped at what the hello announced, refused
// for unknown tokens and after the session closed its entry.
#include <doctest/doctest.h>

#include <string>

#include "transport/join_registry.h"

using rcp::JoinRegistry;

TEST_CASE("joins are capped at the connections the client announced") {
  JoinRegistry<int> r;
  REQUIRE(r.open(42, 3));  // the first connection and two joins
  int a = 1, b = 2, c = 3;
  CHECK(r.join(42, a).ok());
  CHECK(r.join(42, b).ok());
  auto st = r.join(42, c);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().context.find("announced 3 connection(s)") != std::string::npos);
  CHECK(c == 3);  // a refused connection stays with the caller
  CHECK(r.take(42) == std::vector<int>{1, 2});
  CHECK(r.take(42).empty());
  CHECK_FALSE(r.join(42, c).ok());  // taking them does not make room
}

TEST_CASE("a session announcing one connection (or none) admits no join") {
  JoinRegistry<int> r;
  REQUIRE(r.open(7, 0));
  int x = 5;
  CHECK_FALSE(r.join(7, x).ok());
}

TEST_CASE("the announced count is capped at 16") {
  JoinRegistry<int> r;
  REQUIRE(r.open(9, 4000));
  int ok = 0;
  for (int i = 0; i < 100; ++i) {
    int c = i;
    if (r.join(9, c).ok()) ++ok;
  }
  CHECK(ok == static_cast<int>(rcp::kMaxJoinedConnections) - 1);
}

TEST_CASE("unknown and zero tokens are refused; a token names one session") {
  JoinRegistry<int> r;
  int x = 1;
  CHECK_FALSE(r.join(1, x).ok());
  CHECK_FALSE(r.open(0, 2));
  CHECK_FALSE(r.join(0, x).ok());
  REQUIRE(r.open(5, 2));
  CHECK_FALSE(r.open(5, 2));
}

TEST_CASE("a join after the session closed is refused; close returns what was never taken") {
  JoinRegistry<int> r;
  REQUIRE(r.open(11, 4));
  int a = 10;
  CHECK(r.join(11, a).ok());
  CHECK(r.close(11) == std::vector<int>{10});
  CHECK(r.size() == 0);
  int b = 20;
  auto st = r.join(11, b);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().context.find("no open session") != std::string::npos);
  CHECK(r.take(11).empty());
}
