// hash/hash_pool: digests computed by the workers match digest_of, keyed
// pools differ from plain ones, and a pool that cannot get its eventfd says so.
#include <doctest/doctest.h>

#include <poll.h>

#include <array>
#include <vector>

#include "fd_limit.h"
#include "hash/digest.h"
#include "hash/hash_pool.h"

using namespace rcp;

namespace {

std::vector<HashPool::Done> wait_for(HashPool& p, size_t n) {
  std::vector<HashPool::Done> out;
  while (out.size() < n) {
    pollfd f{p.event_fd(), POLLIN, 0};
    REQUIRE(::poll(&f, 1, 5000) == 1);
    p.take(out);
  }
  return out;
}

}  // namespace

TEST_CASE("hash pool: each job's digest is digest_of its pieces, taken in one stream") {
  auto p = HashPool::create(Checksum::xxh128, 2);
  REQUIRE(p.ok());
  std::vector<uint8_t> a(100000), b(3000);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i * 7);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 13);
  std::vector<uint8_t> ab(a);
  ab.insert(ab.end(), b.begin(), b.end());
  (*p)->submit({1, {a}, 0, 0});
  (*p)->submit({2, {a, b}, 0, 0});
  auto done = wait_for(**p, 2);
  CHECK((*p)->in_flight() == 0);
  for (const auto& d : done) {
    CAPTURE(d.id);
    CHECK(d.digest == digest_of(Checksum::xxh128, d.id == 1 ? std::span<const uint8_t>(a) : std::span<const uint8_t>(ab)));
  }
}

TEST_CASE("hash pool: a keyed pool's MAC is not the plain digest, and depends on the key") {
  std::array<uint8_t, 32> k1{}, k2{};
  k2[0] = 1;
  auto p1 = HashPool::create_keyed(k1, 1);
  auto p2 = HashPool::create_keyed(k2, 1);
  REQUIRE(p1.ok());
  REQUIRE(p2.ok());
  const std::vector<uint8_t> data(4096, 0x5a);
  (*p1)->submit({1, {data}, 3, 0});
  (*p2)->submit({1, {data}, 3, 0});
  const Digest m1 = wait_for(**p1, 1)[0].digest;
  const Digest m2 = wait_for(**p2, 1)[0].digest;
  CHECK_FALSE(m1 == m2);
  CHECK_FALSE(m1 == digest_of(Checksum::sha256, data));
}

TEST_CASE("hash pool: no descriptor left for its eventfd is an error naming eventfd, plain or keyed") {
  Result<std::unique_ptr<HashPool>> plain = make_error(0, "not run"), keyed = make_error(0, "not run");
  {
    const test::FdsTaken all(0);
    plain = HashPool::create(Checksum::xxh128, 1);
    keyed = HashPool::create_keyed({}, 1);
  }
  for (auto* r : {&plain, &keyed}) {
    REQUIRE_FALSE(r->ok());
    CHECK(r->error().code == EMFILE);
    CHECK(r->error().context == "eventfd");
  }
}
