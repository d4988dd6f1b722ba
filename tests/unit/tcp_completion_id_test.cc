// Typed io_uring completion ids of the TCP transport: every field survives
// the round trip, nothing is truncated into another stream's id, and decode
// refuses what the transport could not have submitted.
#include <doctest/doctest.h>

#include "transport/tcp/completion_id.h"

using rcp::tcp::CompletionId;
using rcp::tcp::IoOp;

TEST_CASE("completion id round-trips every operation, stream and sequence") {
  for (IoOp op : {IoOp::recv, IoOp::recv_reply, IoOp::send})
    for (uint32_t stream : {0u, 1u, 15u, 255u, 256u, 257u, 65535u})
      for (uint64_t seq : {uint64_t{0}, uint64_t{1}, uint64_t{1} << 39, CompletionId::kSeqMask}) {
        auto ud = CompletionId{op, stream, seq}.encode();
        REQUIRE(ud.has_value());
        auto back = CompletionId::decode(*ud, 65536);
        REQUIRE(back.has_value());
        CHECK(back->op == op);
        CHECK(back->stream == stream);
        CHECK(back->seq == seq);
      }
}

TEST_CASE("stream 256 no longer aliases stream 0") {
  // The old packing kept 8 bits of the stream index.
  auto a = CompletionId{IoOp::recv, 0}.encode();
  auto b = CompletionId{IoOp::recv, 256}.encode();
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  CHECK(*a != *b);
  CHECK(CompletionId::decode(*b, 257)->stream == 256);
}

TEST_CASE("encode refuses fields that do not fit instead of truncating them") {
  CHECK_FALSE(CompletionId{IoOp::recv, CompletionId::kStreamLimit}.encode().has_value());
  CHECK_FALSE(CompletionId{IoOp::send, 0, CompletionId::kSeqMask + 1}.encode().has_value());
  CHECK_FALSE(CompletionId{static_cast<IoOp>(9), 0}.encode().has_value());
}

TEST_CASE("decode refuses unknown operations and streams the transport does not have") {
  CHECK_FALSE(CompletionId::decode(0, 4).has_value());   // op 0
  CHECK_FALSE(CompletionId::decode(0xff, 4).has_value());
  auto ud = CompletionId{IoOp::send, 4, 7}.encode();
  REQUIRE(ud.has_value());
  CHECK_FALSE(CompletionId::decode(*ud, 4).has_value());  // streams 0..3 only
  CHECK(CompletionId::decode(*ud, 5).has_value());
}

TEST_CASE("send sequences wrap inside their field") {
  CHECK(CompletionId::next_seq(CompletionId::kSeqMask) == 0);
  CHECK(CompletionId::next_seq(41) == 42);
  static_assert(CompletionId{IoOp::send, 3, 5}.encode().has_value());
}
