// Proves ControlLog, what lets control move to another rail and lose nothing:
// the peer's credits trim what it is known to have, and at a move exactly the
// messages from the peer's count on are sent again — a count the peer could
// not honestly give is refused.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "transport/control_log.h"

using namespace rcp;

namespace {
std::vector<uint8_t> msg(const std::string& s) { return {s.begin(), s.end()}; }
std::vector<std::string> texts(const std::vector<std::vector<uint8_t>>& v) {
  std::vector<std::string> out;
  for (const auto& m : v) out.emplace_back(m.begin(), m.end());
  return out;
}
}  // namespace

TEST_CASE("ControlLog: sends counted, credits trim, a move sends again from the peer's count") {
  ControlLog log;
  log.on_send(msg("a"));  // send 0
  log.on_send({});        // send 1: credit-only
  log.on_send(msg("b"));  // send 2
  log.on_send(msg("c"));  // send 3
  CHECK(log.sent() == 4);
  CHECK(log.acked() == 0);
  CHECK(texts(log.since(0).value()) == std::vector<std::string>{"a", "b", "c"});
  CHECK(texts(log.since(2).value()) == std::vector<std::string>{"b", "c"});
  CHECK(texts(log.since(4).value()).empty());
  log.on_granted(2);  // the peer re-posted two receives: sends 0 and 1 arrived
  CHECK(log.acked() == 2);
  CHECK(texts(log.since(2).value()) == std::vector<std::string>{"b", "c"});
  CHECK(texts(log.since(3).value()) == std::vector<std::string>{"c"});
  log.on_send(msg("d"));
  CHECK(texts(log.since(3).value()) == std::vector<std::string>{"c", "d"});
}

TEST_CASE("ControlLog: a peer's count below what it acknowledged, or above what was sent, is refused") {
  ControlLog log;
  for (const char* m : {"a", "b", "c"}) log.on_send(msg(m));
  log.on_granted(2);
  auto low = log.since(1);  // it granted 2, so it took at least 2
  REQUIRE_FALSE(low.ok());
  CHECK(low.error().code == EPROTO);
  CHECK(low.error().context.find("took 1 of our control sends: 3 were sent, 2 acknowledged") != std::string::npos);
  CHECK_FALSE(log.since(4).ok());  // more than was ever sent
  CHECK(log.since(3).ok());
}

TEST_CASE("ControlLog: a peer granting more than was sent trims what there is, no more") {
  ControlLog log;
  log.on_send(msg("a"));
  log.on_granted(5);
  CHECK(log.acked() == 1);
  CHECK(log.sent() == 1);
  log.on_send(msg("b"));
  CHECK(texts(log.since(1).value()) == std::vector<std::string>{"b"});
}
