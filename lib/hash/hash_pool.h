/// Worker threads that compute chunk digests off the session's loop, so the
/// loop keeps posting reads and writes while chunks are being hashed, and
/// several chunks are hashed at once (xxh128 runs near memory speed per core,
/// SHA-256 at 0.5–2 GB/s: at 100 Gb/s one core is not enough for either).
#pragma once

#include <array>
#include <optional>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "hash/digest.h"
#include "util/fd.h"
#include "util/result.h"

namespace rcp {

class HashPool {
 public:
  struct Job {
    uint64_t id = 0;
    std::vector<std::span<const uint8_t>> pieces;  ///< hashed in order, as one stream
    uint32_t file_id = 0;  ///< keyed pools: the chunk's position, bound into its MAC
    uint64_t offset = 0;
  };
  struct Done {
    uint64_t id = 0;
    Digest digest;
  };

  /// threads ≥ 1. The memory a job names must stay valid until its Done is taken.
  static Result<std::unique_ptr<HashPool>> create(Checksum algo, unsigned threads);
  /// A pool computing chunk MACs (auth/chunk_mac.h) under `key` instead.
  static Result<std::unique_ptr<HashPool>> create_keyed(const std::array<uint8_t, 32>& key, unsigned threads);
  ~HashPool();  ///< stops the workers after the jobs already queued
  HashPool(const HashPool&) = delete;
  HashPool& operator=(const HashPool&) = delete;

  void submit(Job job);
  /// Readable when results are waiting.
  int event_fd() const { return efd_.get(); }
  /// Moves finished digests into out without blocking.
  void take(std::vector<Done>& out);
  size_t in_flight() const;

 private:
  HashPool(Checksum algo) : algo_(algo) {}
  /// Its eventfd and worker threads.
  static Result<std::unique_ptr<HashPool>> start(std::unique_ptr<HashPool> p, unsigned threads);
  void work();

  Checksum algo_;
  std::optional<std::array<uint8_t, 32>> key_;
  Fd efd_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::vector<Done> done_;
  size_t in_flight_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace rcp
