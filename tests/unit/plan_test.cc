// Proves chunking covers every file exactly, READ plans scatter a chunk correctly within the SGE limit, IndexPool never hands out an index twice, and Credits cannot deadlock two peers.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <set>
#include <vector>

#include "session/plan.h"
#include "wire/messages.h"

using namespace rcp;

namespace {

constexpr uint32_t kMiB = 1u << 20;

/// Walks every chunk: contiguous from 0, all full but the last, covering exactly file_size.
void check_cover(uint64_t file_size, uint32_t chunk) {
  CAPTURE(file_size);
  CAPTURE(chunk);
  const uint64_t n = chunk_count(file_size, chunk);
  const uint64_t expect = (file_size + chunk - 1) / chunk;  // no overflow for the sizes used here
  REQUIRE(n == expect);
  uint64_t next = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const ChunkSpan c = chunk_at(file_size, chunk, i);
    if (c.offset != next || c.length == 0 || c.length > chunk || (i + 1 < n && c.length != chunk)) {
      FAIL_CHECK("chunk " << i << " is [" << c.offset << ", +" << c.length << "), expected offset " << next);
      return;
    }
    next += c.length;
  }
  CHECK(next == file_size);
  CHECK(chunk_at(file_size, chunk, n).length == 0);
}

/// Verifies a READ plan against its contract.
void check_plan(uint64_t remote, uint32_t length, const std::vector<uint64_t>& blocks, uint32_t bs,
                uint32_t max_sge) {
  CAPTURE(remote);
  CAPTURE(length);
  CAPTURE(bs);
  CAPTURE(max_sge);
  const auto wrs = plan_reads(remote, length, blocks, bs, max_sge);
  const uint32_t nblocks = blocks_for(length, bs);
  REQUIRE(!wrs.empty());
  CHECK(wrs.size() == (nblocks + max_sge - 1) / max_sge);
  uint64_t total = 0;
  uint64_t expect_remote = remote;
  size_t k = 0;  // SGE index over the whole plan = block index
  for (size_t w = 0; w < wrs.size(); ++w) {
    CAPTURE(w);
    const ReadWr& wr = wrs[w];
    CHECK(wr.remote_addr == expect_remote);
    REQUIRE(!wr.sges.empty());
    CHECK(wr.sges.size() <= max_sge);
    if (w + 1 < wrs.size()) CHECK(wr.sges.size() == max_sge);  // no needlessly short WRs
    uint64_t wr_sum = 0;
    for (const Sge& s : wr.sges) {
      REQUIRE(k < blocks.size());
      CHECK(s.addr == blocks[k]);
      const bool last = (k + 1 == nblocks);
      CHECK(s.length == (last ? length - uint64_t{nblocks - 1} * bs : bs));
      wr_sum += s.length;
      ++k;
    }
    CHECK(wr_sum == wr.length);
    total += wr.length;
    expect_remote += wr.length;
  }
  CHECK(k == nblocks);
  CHECK(total == length);
}

std::vector<uint64_t> scattered_blocks(size_t n, uint32_t bs) {
  // Deliberately not contiguous nor ascending, so order mistakes show.
  std::vector<uint64_t> v;
  for (size_t i = 0; i < n; ++i) v.push_back(0x7f0000000000ull + ((i * 7919) % 1031) * uint64_t{bs} * 2);
  return v;
}

}  // namespace

TEST_CASE("chunk_count and chunk_at at edge sizes") {
  for (uint32_t chunk : {1u, 3u, 4096u, kMiB, 4 * kMiB, rcp::wire::kMaxChunk}) {
    for (uint64_t size : {uint64_t{0}, uint64_t{1}, uint64_t{chunk} - 1, uint64_t{chunk}, uint64_t{chunk} + 1,
                          uint64_t{4095}, uint64_t{kMiB} + 1, uint64_t{48} * kMiB}) {
      if (chunk < 4096 && size > 100000) continue;  // keeps the walk short; covered by larger chunks
      check_cover(size, chunk);
    }
  }
  CHECK(chunk_count(0, 4096) == 0);
  CHECK(chunk_count(1, 4096) == 1);
  CHECK(chunk_count(4095, 4096) == 1);
  CHECK(chunk_count(4096, 4096) == 1);
  CHECK(chunk_count(4097, 4096) == 2);
  CHECK(chunk_count(48ull * kMiB, 4 * kMiB) == 12);
  CHECK(chunk_count(kMiB + 1, kMiB) == 2);
  CHECK(chunk_count(100, 0) == 0);  // no division by zero
  const ChunkSpan last = chunk_at(kMiB + 1, kMiB, 1);
  CHECK(last.offset == kMiB);
  CHECK(last.length == 1);
}

TEST_CASE("chunking a huge file") {
  const uint64_t size = (uint64_t{1} << 40) + 7;
  check_cover(size, 64 * kMiB);  // 16385 chunks
  check_cover(size, kMiB);       // 1048577 chunks
  CHECK(chunk_count(size, 4096) == (uint64_t{1} << 28) + 1);
  const ChunkSpan last = chunk_at(size, 4096, uint64_t{1} << 28);
  CHECK(last.offset == uint64_t{1} << 40);
  CHECK(last.length == 7);
  const ChunkSpan before = chunk_at(size, 4096, (uint64_t{1} << 28) - 1);
  CHECK(before.offset == (uint64_t{1} << 40) - 4096);
  CHECK(before.length == 4096);
  CHECK(chunk_count(std::numeric_limits<uint64_t>::max(), 0xFFFFFFFFu) == 0x100000001ull);
}

TEST_CASE("blocks_for") {
  CHECK(blocks_for(0, 4096) == 0);
  CHECK(blocks_for(1, 4096) == 1);
  CHECK(blocks_for(4096, 4096) == 1);
  CHECK(blocks_for(4097, 4096) == 2);
  CHECK(blocks_for(rcp::wire::kMaxChunk, kMiB) == 64);
  CHECK(blocks_for(rcp::wire::kMaxChunk, 4096) == 16384);
}

TEST_CASE("plan_reads splits a chunk into WRs of at most max_sge SGEs") {
  const uint32_t bs = 4096;
  const auto blocks = scattered_blocks(64, bs);
  SUBCASE("single partial block") { check_plan(0x1000, 1, blocks, bs, 4); }
  SUBCASE("single full block") { check_plan(0x1000, bs, blocks, bs, 4); }
  SUBCASE("last SGE partial") { check_plan(0xABCDEF00, 3 * bs + 1, blocks, bs, 2); }
  SUBCASE("exact multiple of max_sge") {
    check_plan(0, 8 * bs, blocks, bs, 4);
    CHECK(plan_reads(0, 8 * bs, blocks, bs, 4).size() == 2);
  }
  SUBCASE("one past a multiple of max_sge") {
    check_plan(0, 8 * bs + 1, blocks, bs, 4);
    const auto wrs = plan_reads(0, 8 * bs + 1, blocks, bs, 4);
    REQUIRE(wrs.size() == 3);
    CHECK(wrs[2].sges.size() == 1);
    CHECK(wrs[2].length == 1);
    CHECK(wrs[2].remote_addr == 8 * bs);
  }
  SUBCASE("max_sge 1: one WR per block") {
    check_plan(0x5000, 5 * bs - 100, blocks, bs, 1);
    CHECK(plan_reads(0x5000, 5 * bs - 100, blocks, bs, 1).size() == 5);
  }
  SUBCASE("max_sge larger than the block count: one WR") {
    check_plan(0x5000, 10 * bs, blocks, bs, 30);
    CHECK(plan_reads(0x5000, 10 * bs, blocks, bs, 30).size() == 1);
  }
  SUBCASE("all 64 blocks, odd max_sge") { check_plan(0xFFFF000000000000ull, 64 * bs, blocks, bs, 3); }
  SUBCASE("more blocks than needed: the extra ones are unused") { check_plan(0, 2 * bs, blocks, bs, 16); }
  SUBCASE("a 64 MiB chunk in 1 MiB blocks") {
    check_plan(0x10000000, rcp::wire::kMaxChunk, scattered_blocks(64, kMiB), kMiB, 30);
  }
}

TEST_CASE("plan_reads refuses invalid input with an empty plan") {
  const uint32_t bs = 4096;
  const auto blocks = scattered_blocks(4, bs);
  CHECK(plan_reads(0, 4 * bs + 1, blocks, bs, 4).empty());  // too few blocks
  CHECK(plan_reads(0, 1, {}, bs, 4).empty());
  CHECK(plan_reads(0, 100, blocks, 0, 4).empty());
  CHECK(plan_reads(0, 100, blocks, bs, 0).empty());
  CHECK(plan_reads(0, 0, blocks, bs, 4).empty());
  CHECK_FALSE(plan_reads(0, 4 * bs, blocks, bs, 4).empty());  // the boundary is accepted
}

TEST_CASE("IndexPool hands out each index once") {
  IndexPool p(8);
  CHECK(p.capacity() == 8);
  CHECK(p.available() == 8);
  std::set<uint32_t> got;
  uint32_t x = 0;
  for (int i = 0; i < 8; ++i) {
    REQUIRE(p.take_one(x));
    CHECK(x < 8);
    CHECK_FALSE(p.is_free(x));
    got.insert(x);
  }
  CHECK(got.size() == 8);
  CHECK(p.available() == 0);
  x = 12345;
  CHECK_FALSE(p.take_one(x));
  CHECK(x == 12345);
  for (uint32_t i : got) CHECK(p.give(i));
  CHECK(p.available() == 8);
}

TEST_CASE("IndexPool refuses double, never-taken and out-of-range gives") {
  IndexPool p(4);
  uint32_t x = 0;
  REQUIRE(p.take_one(x));
  CHECK(p.give(x));
  CHECK_FALSE(p.give(x));  // double give
  CHECK(p.available() == 4);
  CHECK_FALSE(p.give(3));  // never taken
  CHECK_FALSE(p.give(4));
  CHECK_FALSE(p.give(std::numeric_limits<uint32_t>::max()));
  CHECK(p.available() == 4);
  CHECK_FALSE(p.is_free(4));
  CHECK(p.is_free(3));

  IndexPool empty(0);
  CHECK_FALSE(empty.take_one(x));
  CHECK_FALSE(empty.give(0));
}

TEST_CASE("IndexPool is LIFO") {
  IndexPool p(16);
  std::vector<uint32_t> all;
  REQUIRE(p.take(16, all));
  REQUIRE(all.size() == 16);
  CHECK(p.give(all[5]));
  CHECK(p.give(all[9]));
  CHECK(p.give(all[2]));
  uint32_t x = 0;
  REQUIRE(p.take_one(x));
  CHECK(x == all[2]);
  REQUIRE(p.take_one(x));
  CHECK(x == all[9]);
  CHECK(p.give(all[9]));
  REQUIRE(p.take_one(x));
  CHECK(x == all[9]);
  REQUIRE(p.take_one(x));
  CHECK(x == all[5]);
}

TEST_CASE("IndexPool::take is all or nothing") {
  IndexPool p(5);
  std::vector<uint32_t> out{999};
  REQUIRE(p.take(2, out));
  CHECK(out.size() == 3);
  CHECK(out[0] == 999);
  CHECK(out[1] != out[2]);
  const std::vector<uint32_t> before = out;
  CHECK_FALSE(p.take(4, out));  // only 3 left
  CHECK(out == before);
  CHECK(p.available() == 3);
  for (uint32_t i = 0; i < 5; ++i) CHECK(p.is_free(i) == (i != out[1] && i != out[2]));
  CHECK(p.take(0, out));
  CHECK(out == before);
  CHECK(p.take(3, out));
  CHECK(p.available() == 0);
  CHECK(std::set<uint32_t>(out.begin() + 1, out.end()).size() == 5);
}

TEST_CASE("Credits keep the last credit for a grant") {
  Credits c(4);
  CHECK(c.peer_credits() == 4);
  CHECK(c.pending_grants() == 0);
  CHECK(c.can_send_data());
  CHECK_FALSE(c.can_send_grant());  // nothing to grant
  CHECK(c.on_send() == 0);
  CHECK(c.on_send() == 0);
  CHECK(c.can_send_data());  // 2 left
  CHECK(c.on_send() == 0);
  CHECK(c.peer_credits() == 1);
  CHECK_FALSE(c.can_send_data());  // the last one is reserved
  CHECK_FALSE(c.can_send_grant());
  c.on_repost();
  c.on_repost();
  c.on_repost();
  CHECK(c.pending_grants() == 3);
  CHECK_FALSE(c.can_send_data());
  CHECK(c.can_send_grant());
  CHECK(c.grant_due(3));
  CHECK_FALSE(c.grant_due(4));
  CHECK(c.on_send() == 3);  // carries every pending grant and clears them
  CHECK(c.pending_grants() == 0);
  CHECK(c.peer_credits() == 0);
  CHECK_FALSE(c.can_send_grant());
  c.on_repost();
  CHECK_FALSE(c.can_send_grant());  // no credit at all
  c.on_grant(2);
  CHECK(c.peer_credits() == 2);
  CHECK(c.can_send_data());
  CHECK(c.can_send_grant());
  CHECK(c.on_send() == 1);

  Credits one(1);
  CHECK_FALSE(one.can_send_data());
  Credits two(2);
  CHECK(two.can_send_data());
}

namespace {

/// Two endpoints exchanging messages over a reliable in-order channel; each
/// has `depth` posted receives. Mirrors the RDMA transport's flush policy:
/// data while can_send_data(), else a credit-only message once grant_due(depth/2).
struct Peer {
  explicit Peer(uint32_t depth) : credits(depth), posted(depth) {}
  Credits credits;
  uint32_t posted;            // receive buffers posted
  uint32_t consumed = 0;      // received, not yet re-posted
  bool wants_data = true;
  uint64_t data_sent = 0, data_received = 0, grant_only_sent = 0;
};

struct Msg {
  bool data;
  uint32_t grants;
};

struct Lcg {
  uint64_t s;
  uint32_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s >> 33);
  }
};

/// Runs the simulation with a seeded random schedule; fails the test if both
/// sides get stuck, a receive buffer would overflow, or credits leak.
void simulate(uint64_t seed, uint32_t depth, bool b_wants_data, int steps) {
  CAPTURE(seed);
  CAPTURE(depth);
  CAPTURE(b_wants_data);
  Peer p[2]{Peer(depth), Peer(depth)};
  p[1].wants_data = b_wants_data;
  std::deque<Msg> wire[2];  // wire[i]: messages from i to 1 - i
  Lcg rng{seed};
  const uint32_t threshold = std::max<uint32_t>(1, depth / 2);

  for (int step = 0; step < steps; ++step) {
    // Invariant: each side's receive buffers are accounted for exactly once:
    // as the sender's credit, a message in flight, a buffer being processed,
    // a pending grant, or a grant travelling back.
    for (int r = 0; r < 2; ++r) {
      const int s = 1 - r;
      uint64_t grants_back = 0;
      for (const Msg& m : wire[r]) grants_back += m.grants;
      const uint64_t total = uint64_t{p[s].credits.peer_credits()} + wire[s].size() + p[r].consumed +
                             p[r].credits.pending_grants() + grants_back;
      if (total != depth) {
        FAIL_CHECK("credit accounting broken at step " << step << " for receiver " << r << ": " << total);
        return;
      }
    }
    // Enabled actions: 0/1 send by side i, 2/3 deliver to side i, 4/5 repost at side i.
    int enabled[6];
    int n = 0;
    for (int i = 0; i < 2; ++i) {
      const Credits& c = p[i].credits;
      if ((p[i].wants_data && c.can_send_data()) || (c.grant_due(threshold) && c.can_send_grant())) enabled[n++] = i;
      if (!wire[1 - i].empty()) enabled[n++] = 2 + i;
      if (p[i].consumed > 0) enabled[n++] = 4 + i;
    }
    if (n == 0) {
      FAIL_CHECK("deadlock at step " << step << ": A has " << p[0].credits.peer_credits() << " credits, "
                                     << p[0].credits.pending_grants() << " pending; B has "
                                     << p[1].credits.peer_credits() << " credits, "
                                     << p[1].credits.pending_grants() << " pending");
      return;
    }
    const int a = enabled[rng.next() % n];
    const int i = a % 2;
    Peer& me = p[i];
    if (a < 2) {
      const bool data = me.wants_data && me.credits.can_send_data();
      wire[i].push_back({data, me.credits.on_send()});
      if (data) ++me.data_sent;
      else ++me.grant_only_sent;
    } else if (a < 4) {
      if (me.posted == 0) {
        FAIL_CHECK("receiver " << i << " overflowed its receive queue at step " << step);
        return;
      }
      const Msg m = wire[1 - i].front();
      wire[1 - i].pop_front();
      --me.posted;
      ++me.consumed;
      me.credits.on_grant(m.grants);
      if (m.data) ++me.data_received;
    } else {
      --me.consumed;
      ++me.posted;
      me.credits.on_repost();
    }
  }
  // Progress, not just absence of a stuck state: data flowed the whole time.
  CHECK(p[0].data_sent > static_cast<uint64_t>(steps) / 20);
  if (b_wants_data) CHECK(p[1].data_sent > static_cast<uint64_t>(steps) / 20);
  else CHECK(p[1].data_sent == 0);
  CHECK(p[1].data_received + wire[0].size() >= p[0].data_sent);
}

}  // namespace

TEST_CASE("two peers exchanging messages with receive depth 4 never deadlock") {
  for (uint64_t seed = 1; seed <= 20; ++seed) simulate(seed, 4, true, 5000);
}

TEST_CASE("a one-way transfer keeps flowing on credit-only messages") {
  for (uint64_t seed = 1; seed <= 10; ++seed) simulate(seed * 7919, 4, false, 5000);
  simulate(42, 2, true, 3000);
  simulate(43, 64, true, 3000);
}

TEST_CASE("blocks_for neither wraps nor divides by zero") {
  CHECK(blocks_for(0xFFFFFFFFu, 4096) == 1048576u);
  CHECK(blocks_for(0xFFFFFFFFu, 1) == 0xFFFFFFFFu);
  CHECK(blocks_for(100, 0) == 0u);
}
