// Proves the source's slot map lends every byte of the pool at most once, splits a slot for
// small chunks and makes it whole again, refuses ids never lent or lent back twice, and keeps
// its ids below the bound the sink checks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "session/slot_map.h"

using namespace rcp;

namespace {
constexpr uint32_t kKiB = 1024, kMiB = 1u << 20;

/// No two lent ids overlap in the pool, and each lies inside it.
void check_disjoint(const SlotMap& m, const std::map<uint32_t, uint32_t>& lent, uint32_t slots, uint32_t chunk) {
  std::vector<std::pair<uint64_t, uint64_t>> r;
  for (auto [id, len] : lent) {
    const uint64_t off = m.offset(id);
    CHECK(off + len <= uint64_t{slots} * chunk);
    CHECK(m.whole(id) == off / chunk);
    r.push_back({off, off + len});
  }
  std::sort(r.begin(), r.end());
  for (size_t i = 1; i < r.size(); ++i) CHECK(r[i - 1].second <= r[i].first);
}
}  // namespace

TEST_CASE("slot map: whole slots for big chunks, sub-slots for small ones") {
  SlotMap m(16, kMiB, 64 * kKiB, 4096);
  CHECK(m.per() == 16);
  CHECK(m.ids() == 16 + 16 * 16);
  // 256 small chunks fit where 16 did before.
  std::map<uint32_t, uint32_t> lent;
  for (int i = 0; i < 256; ++i) {
    auto id = m.take(4 * kKiB);
    REQUIRE(id);
    CHECK(*id >= 16);
    CHECK(*id < m.ids());
    CHECK(lent.emplace(*id, 64 * kKiB).second);
  }
  CHECK_FALSE(m.take(4 * kKiB));
  CHECK_FALSE(m.take(kMiB));  // every slot is split
  check_disjoint(m, lent, 16, kMiB);
  // All sub-slots of one slot back: it is whole again, for a big chunk.
  const uint32_t s = m.whole(lent.begin()->first);
  for (auto it = lent.begin(); it != lent.end();) {
    if (m.whole(it->first) == s) {
      CHECK(m.give(it->first));
      it = lent.erase(it);
    } else {
      ++it;
    }
  }
  CHECK(m.whole_free() == 1);
  auto big = m.take(kMiB);
  REQUIRE(big);
  CHECK(*big == s);
  CHECK(m.offset(*big) == uint64_t{s} * kMiB);
}

TEST_CASE("slot map: a chunk just over a sub-slot takes a whole slot") {
  SlotMap m(4, kMiB, 64 * kKiB, 4096);
  auto a = m.take(64 * kKiB);
  auto b = m.take(64 * kKiB + 1);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(*a >= 4);
  CHECK(*b < 4);
  CHECK_FALSE(m.take(kMiB + 1));  // longer than a chunk: never
}

TEST_CASE("slot map: a small chunk fills the split slot before splitting another") {
  SlotMap m(4, kMiB, 64 * kKiB, 4096);
  auto a = m.take(1);
  auto b = m.take(1);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(m.whole(*a) == m.whole(*b));
  CHECK(m.whole_free() == 3);
}

TEST_CASE("slot map: ids never lent, lent back twice or out of range are refused") {
  SlotMap m(4, kMiB, 64 * kKiB, 4096);
  CHECK_FALSE(m.give(0));         // whole, never lent
  CHECK_FALSE(m.give(4));         // sub-slot of a slot not split
  CHECK_FALSE(m.give(m.ids()));   // out of range
  CHECK_FALSE(m.give(~0u));
  auto w = m.take(kMiB);
  REQUIRE(w);
  CHECK(m.give(*w));
  CHECK_FALSE(m.give(*w));        // twice
  auto a = m.take(10);
  auto b = m.take(10);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(m.give(*a));
  CHECK_FALSE(m.give(*a));        // a sub-slot twice, while its slot is still split
  CHECK(m.give(*b));
  CHECK_FALSE(m.give(*b));        // ... and after the slot became whole
  CHECK(m.whole_free() == 4);
  // A whole slot's id while it is split is not lent as a whole.
  auto c = m.take(10);
  REQUIRE(c);
  CHECK_FALSE(m.give(m.whole(*c)));
}

TEST_CASE("slot map: no split when chunks are small or ids would pass the bound") {
  CHECK(SlotMap(16, 64 * kKiB, 64 * kKiB, 4096).per() == 0);   // a chunk is a sub-slot already
  CHECK(SlotMap(16, 128 * kKiB, 64 * kKiB, 4096).per() == 2);
  CHECK(SlotMap(16, 16 * kMiB, 64 * kKiB, 4096).per() == 64);  // at most 64 per slot
  CHECK(SlotMap(4096, kMiB, 64 * kKiB, 4096).per() == 0);      // the window alone reaches kMaxSlots
  SlotMap m(1000, kMiB, 64 * kKiB, 4096);                      // 1000 + 1000 * 3 < 4096
  CHECK(m.per() == 3);
  CHECK(m.ids() <= 4096);
  SlotMap none(16, kMiB, 64 * kKiB, 16);
  CHECK(none.per() == 0);
  CHECK(none.ids() == 16);
  auto id = none.take(1);  // a small chunk takes a whole slot then
  REQUIRE(id);
  CHECK(*id < 16);
}

TEST_CASE("slot map: random take and give never lend a byte twice") {
  std::mt19937 rng(7);
  for (uint32_t chunk : {128 * kKiB, kMiB, 4 * kMiB}) {
    const uint32_t slots = 8;
    SlotMap m(slots, chunk, 64 * kKiB, 4096);
    std::map<uint32_t, uint32_t> lent;
    for (int step = 0; step < 20000; ++step) {
      if (!lent.empty() && rng() % 2) {
        auto it = lent.begin();
        std::advance(it, rng() % lent.size());
        REQUIRE(m.give(it->first));
        lent.erase(it);
      } else {
        const uint32_t len = rng() % 3 ? 1 + rng() % (64 * kKiB) : 1 + rng() % chunk;
        if (auto id = m.take(len)) {
          REQUIRE(*id < m.ids());
          REQUIRE(lent.emplace(*id, len).second);
        }
      }
      if (step % 997 == 0) check_disjoint(m, lent, slots, chunk);
    }
    for (auto [id, len] : lent) REQUIRE(m.give(id));
    CHECK(m.whole_free() == slots);
  }
}
