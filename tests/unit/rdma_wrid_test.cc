// Proves typed work-request ids round-trip for every kind up to the widest value, keep the
// kind out of reach of the value, and that a wr_id we never issue does not decode.
#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "transport/rdma/wr_id.h"

using namespace rcp::rdma;

namespace {

constexpr WrKind kAll[] = {WrKind::recv, WrKind::send, WrKind::read};

// The layout is fixed at compile time too.
static_assert(WrId{WrKind::read, 5}.encode() == ((uint64_t{3} << 56) | 5));
static_assert(WrId::decode(WrId{WrKind::send, 7}.encode()) == WrId{WrKind::send, 7});
static_assert(!WrId::decode(0).has_value());

}  // namespace

TEST_CASE("wr_id: every kind round-trips, from 0 to the largest value") {
  for (WrKind k : kAll) {
    for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{63}, uint64_t{1} << 32, WrId::kMaxValue}) {
      CHECK(WrId::fits(v));
      const std::optional<WrId> back = WrId::decode(WrId{k, v}.encode());
      REQUIRE(back.has_value());
      CHECK(back->kind == k);
      CHECK(back->value == v);
    }
  }
}

TEST_CASE("wr_id: kinds are distinct for the same value") {
  const uint64_t v = 42;
  CHECK(WrId{WrKind::recv, v}.encode() != WrId{WrKind::send, v}.encode());
  CHECK(WrId{WrKind::send, v}.encode() != WrId{WrKind::read, v}.encode());
  CHECK(WrId{WrKind::recv, v}.encode() != WrId{WrKind::read, v}.encode());
}

TEST_CASE("wr_id: a value too wide does not fit and cannot change the kind") {
  CHECK_FALSE(WrId::fits(WrId::kMaxValue + 1));
  CHECK_FALSE(WrId::fits(~uint64_t{0}));
  const std::optional<WrId> back = WrId::decode(WrId{WrKind::recv, ~uint64_t{0}}.encode());
  REQUIRE(back.has_value());
  CHECK(back->kind == WrKind::recv);
  CHECK(back->value == WrId::kMaxValue);
}

TEST_CASE("wr_id: an id we never issue is rejected") {
  CHECK_FALSE(WrId::decode(0).has_value());                               // kind 0: a zeroed wr_id
  CHECK_FALSE(WrId::decode(42).has_value());                              // a bare index, no kind
  CHECK_FALSE(WrId::decode(uint64_t{4} << WrId::kValueBits).has_value());  // the first kind after read
  CHECK_FALSE(WrId::decode(~uint64_t{0}).has_value());                    // all ones
  for (uint64_t k = 4; k < 256; ++k) CHECK_FALSE(WrId::decode((k << WrId::kValueBits) | 9).has_value());
}

TEST_CASE("wr_id: names for messages") {
  CHECK(std::string(wr_kind_name(WrKind::recv)) == "RECV");
  CHECK(std::string(wr_kind_name(WrKind::send)) == "SEND");
  CHECK(std::string(wr_kind_name(WrKind::read)) == "RDMA READ");
}
