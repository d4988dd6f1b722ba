// --shard I/N (cli/shard.h): every listed path in exactly one shard, the
// push split within list scheduling's bound, the same split whatever the
// list's order, and I/N refused outside 0 <= I < N <= kMaxShards.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cli/shard.h"

using namespace rcp;
using namespace rcp::cli;

namespace {

std::vector<WeighedPath> random_list(size_t n, uint32_t seed, uint64_t max_size) {
  std::mt19937_64 rng(seed);
  std::vector<WeighedPath> v;
  for (size_t i = 0; i < n; ++i) {
    // Heavy-tailed: mostly small files, a few big ones (as real trees).
    uint64_t size = rng() % 4096;
    if (rng() % 50 == 0) size = rng() % max_size;
    v.push_back({"d" + std::to_string(rng() % 10) + "/f" + std::to_string(i), size});
  }
  return v;
}

}  // namespace

TEST_CASE("parse_shard: I/N with 0 <= I < N <= kMaxShards") {
  auto ok = parse_shard("0/1");
  REQUIRE(ok.ok());
  CHECK(ok->index == 0);
  CHECK(ok->count == 1);
  ok = parse_shard("3/4");
  REQUIRE(ok.ok());
  CHECK(ok->index == 3);
  CHECK(ok->count == 4);
  ok = parse_shard("65535/65536");
  REQUIRE(ok.ok());
  CHECK(ok->count == kMaxShards);

  for (const char* bad : {"", "/", "1", "1/", "/4", "4/4", "5/4", "0/0", "-1/4", "+1/4", " 1/4", "1/4 ", "1/4/2",
                          "a/4", "1/b", "0/65537", "0/4294967296", "0/99999999999", "0x1/4", "1.0/4"}) {
    auto r = parse_shard(bad);
    CHECK_MESSAGE(!r.ok(), bad);
    if (!r.ok()) CHECK(r.error().context.find("--shard") != std::string::npos);
  }
  CHECK(parse_shard("4/4").error().context.find("below N") != std::string::npos);
  CHECK(parse_shard("0/0").error().context.find("at least 1") != std::string::npos);
  CHECK(parse_shard("0/65537").error().context.find("at most 65536") != std::string::npos);
}

TEST_CASE("shard_by_name: stable values, every path in one shard in range") {
  // FNV-1a 64 test vectors ("" -> cbf29ce484222325, "a" -> af63dc4c8601ec8c):
  // runs of one job built by different versions must agree.
  CHECK(shard_by_name("", 1u << 16) == (0xcbf29ce484222325ull % (1u << 16)));
  CHECK(shard_by_name("a", 1000) == (0xaf63dc4c8601ec8cull % 1000));
  CHECK(shard_by_name("anything", 1) == 0);
  std::vector<size_t> per(7, 0);
  for (int i = 0; i < 7000; ++i) {
    const uint32_t s = shard_by_name("dir/file" + std::to_string(i), 7);
    REQUIRE(s < 7);
    ++per[s];
  }
  // Spread: each of 7 shards gets 1000 expected; the hash is no constant.
  for (size_t n : per) CHECK((n > 800 && n < 1200));
}

TEST_CASE("shard_by_size: N = 1 and the empty list") {
  CHECK(shard_by_size({}, 4).empty());
  auto one = shard_by_size({{"a", 5}, {"b", 7}}, 1);
  CHECK(one == std::vector<uint32_t>{0, 0});
}

TEST_CASE("shard_by_size: largest first into the least-loaded shard, lower shard on a tie") {
  // Sorted e(9) d(7) c(5) a(3) b(3): e to 0, d to 1, c to 1 (7 < 9: 12),
  // a to 0 (9: 12), b on a 12/12 tie to the lower shard, 0.
  std::vector<WeighedPath> v{{"a", 3}, {"b", 3}, {"c", 5}, {"d", 7}, {"e", 9}};
  auto s = shard_by_size(v, 2);
  CHECK(s == std::vector<uint32_t>{0, 0, 1, 1, 0});
  // Every shard of more shards than files: one each, the rest empty.
  auto wide = shard_by_size(v, 8);
  std::set<uint32_t> used(wide.begin(), wide.end());
  CHECK(used.size() == 5);
  CHECK(*used.rbegin() == 4);
}

TEST_CASE("shard_by_size: every file in exactly one shard, balance bound, order-independent") {
  for (uint32_t n : {2u, 3u, 4u, 7u, 16u}) {
    auto list = random_list(2000, n, 64u << 20);
    auto shards = shard_by_size(list, n);
    REQUIRE(shards.size() == list.size());
    std::vector<uint64_t> load(n, 0);
    uint64_t total = 0, largest = 0;
    for (size_t i = 0; i < list.size(); ++i) {
      REQUIRE(shards[i] < n);
      load[shards[i]] += list[i].size;
      total += list[i].size;
      largest = std::max(largest, list[i].size);
    }
    // List scheduling: the heaviest shard is at most the mean plus the largest file.
    const uint64_t max_load = *std::max_element(load.begin(), load.end());
    CHECK(max_load <= total / n + largest);
    // ... and balanced by bytes, not by count: a count split of this list
    // (every n-th file) is further off than the byte split.
    std::vector<uint64_t> by_count(n, 0);
    for (size_t i = 0; i < list.size(); ++i) by_count[i % n] += list[i].size;
    CHECK(max_load <= *std::max_element(by_count.begin(), by_count.end()));

    // The same split whatever order the list comes in (each host may list it differently).
    auto shuffled = list;
    std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(99));
    auto s2 = shard_by_size(shuffled, n);
    std::map<std::string, uint32_t> a, b;
    for (size_t i = 0; i < list.size(); ++i) a[list[i].path] = shards[i];
    for (size_t i = 0; i < shuffled.size(); ++i) b[shuffled[i].path] = s2[i];
    CHECK(a == b);
  }
}

TEST_CASE("shard_by_size: one big file and many small ones: the big one alone") {
  std::vector<WeighedPath> v{{"big", 1000}};
  for (int i = 0; i < 100; ++i) v.push_back({"s" + std::to_string(i), 10});
  auto s = shard_by_size(v, 2);
  uint64_t load[2] = {0, 0};
  for (size_t i = 0; i < v.size(); ++i) load[s[i]] += v[i].size;
  CHECK(s[0] == 0);
  CHECK(load[0] == 1000);
  CHECK(load[1] == 1000);
}

TEST_CASE("shard_by_size: a path listed twice lands once, in one shard") {
  std::vector<WeighedPath> v{{"x", 100}, {"y", 100}, {"x", 100}, {"z", 1}, {"x", 90}};
  auto s = shard_by_size(v, 2);
  CHECK(s[0] == s[2]);
  CHECK(s[0] == s[4]);
  // x counted once: x (100) to 0, y (100) to 1, z (1) to 0 — not z to 1
  // as it would be if x's duplicates had loaded shard 0 with 290.
  CHECK(s[0] == 0);
  CHECK(s[1] == 1);
  CHECK(s[3] == 0);
}

TEST_CASE("shard_by_size: sizes summing past 2^64 still split, no wrap") {
  std::vector<WeighedPath> v{{"a", UINT64_MAX}, {"b", UINT64_MAX}, {"c", UINT64_MAX}, {"d", 1}};
  auto s = shard_by_size(v, 2);
  // a to 0, b to 1, c to 0 (tie: lower); d to 1 (0 saturated at max, 1 is max too: tie -> 0)...
  // the point: every entry has a shard below N and a and b are apart.
  for (uint32_t x : s) CHECK(x < 2);
  CHECK(s[0] != s[1]);
}
