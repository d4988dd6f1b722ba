/// --bwlimit: a token bucket that paces the file data a client moves, and
/// rsync's RATE syntax. Pure logic (the caller passes the time), unit tested
/// in tests/unit/token_bucket_test.cc; the engine asks it before each chunk
/// it pulls (a sink: session/sink.cc) or announces (a source: session/source.cc),
/// so RDMA READs and TCP reads are paced alike.
#pragma once

#include <cstdint>
#include <string_view>

#include "util/result.h"

namespace rcp {

class TokenBucket {
 public:
  /// rate: bytes per second (> 0); burst: the most that may go at once
  /// after an idle spell (the bucket starts full).
  TokenBucket(uint64_t rate, uint64_t burst, int64_t now_ns);

  /// May n bytes go now? Yes while the balance is not negative; they are
  /// then taken, even past it (a chunk larger than the burst still goes,
  /// and the next one waits until the debt is paid): over any span the bytes
  /// taken are at most burst + rate × span + the last chunk.
  bool take(uint64_t n, int64_t now_ns);
  /// Nanoseconds until take() can succeed (0: now).
  int64_t wait_ns(int64_t now_ns) const;

 private:
  double balance(int64_t now_ns) const;
  double rate_;   // bytes per ns
  double burst_;  // bytes
  double tokens_;
  int64_t last_ns_;
};

/// rsync's --bwlimit RATE: a number (fractions allowed) of KiB/s, or with a
/// suffix K, M, G (powers of 1024; "KiB" etc. too), KB, MB, GB (powers of
/// 1000) or B (bytes), case-insensitive. Bytes per second; 0: no limit.
/// A limit below 1024 bytes per second is refused (rsync's minimum is 512;
/// a 4 KiB chunk, the smallest, would wait 4 s).
Result<uint64_t> parse_rate(std::string_view s);

}  // namespace rcp
