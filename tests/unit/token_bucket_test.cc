// --bwlimit's pacing (util/token_bucket.h): the time is passed in, so these
// check the arithmetic, never a clock.
#include <doctest/doctest.h>

#include "util/token_bucket.h"

using namespace rcp;

namespace {
constexpr int64_t kSec = 1000000000;
}

TEST_CASE("token bucket: a full bucket lets the burst go, then the rate holds") {
  TokenBucket b(1000, 500, 0);  // 1000 B/s, 500 B burst
  CHECK(b.take(400, 0));
  CHECK(b.take(400, 0));  // balance was 100 >= 0: goes, debt 300
  CHECK_FALSE(b.take(1, 0));
  const auto near = [](int64_t x, int64_t y) { return x - y <= 1 && y - x <= 1; };  // (ns, rounding)
  CHECK(near(b.wait_ns(0), 300 * kSec / 1000));  // the debt at 1000 B/s: 0.3 s
  CHECK_FALSE(b.take(1, kSec / 10));
  CHECK(near(b.wait_ns(kSec / 10), 200 * kSec / 1000));
  CHECK(b.take(1000, 31 * kSec / 100));  // debt paid at 0.3 s
  CHECK(near(b.wait_ns(31 * kSec / 100), 990 * kSec / 1000));
}

TEST_CASE("token bucket: over a long run no more than burst + rate x time + one chunk goes") {
  TokenBucket b(1 << 20, 64 << 10, 0);  // 1 MiB/s
  uint64_t sent = 0;
  int64_t t = 0;
  const uint64_t chunk = 256 << 10;
  while (t < 10 * kSec) {
    if (b.take(chunk, t)) sent += chunk;
    else t += std::max<int64_t>(b.wait_ns(t), 1);
  }
  CHECK(sent <= (64u << 10) + 10 * (1u << 20) + chunk);
  CHECK(sent >= 10 * (1u << 20) - chunk);  // and the rate is reached
}

TEST_CASE("token bucket: an idle spell fills it up to the burst, no more") {
  TokenBucket b(1000, 500, 0);
  CHECK(b.take(500, 0));
  CHECK(b.take(10, 100 * kSec));
  CHECK(b.take(490, 100 * kSec));  // 500 after 100 s idle, not 100,000
  CHECK(b.take(1, 100 * kSec));    // (the balance was 0: not negative)
  CHECK_FALSE(b.take(1, 100 * kSec));
  // Time going backwards (never, with a steady clock) takes nothing away.
  CHECK(b.wait_ns(50 * kSec) > 0);
}

TEST_CASE("parse_rate: rsync's units") {
  CHECK(parse_rate("100").value() == 100u * 1024);
  CHECK(parse_rate("1.5m").value() == 3u * 512 * 1024);
  CHECK(parse_rate("2M").value() == 2u << 20);
  CHECK(parse_rate("1G").value() == 1u << 30);
  CHECK(parse_rate("1GiB").value() == 1u << 30);
  CHECK(parse_rate("5KB").value() == 5000u);
  CHECK(parse_rate("2mb").value() == 2000000u);
  CHECK(parse_rate("4096b").value() == 4096u);
  CHECK(parse_rate("0").value() == 0u);  // no limit
  for (const char* s : {"", "x", "-1", "10q", "1kk", "100b", "0.5", "1e30G", "nan", "inf"}) {
    CAPTURE(s);
    CHECK_FALSE(parse_rate(s).ok());
  }
  // Too small for a double: strtod says ERANGE and gives 0, which must not
  // pass for "0" (no limit).
  const auto tiny = parse_rate("1e-400");
  REQUIRE_FALSE(tiny.ok());
  CHECK(tiny.error().context.find("not a rate") != std::string::npos);
}
