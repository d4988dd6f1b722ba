/// The engine's inputs and outputs: SessionOptions, what one session runs
/// with (computed from the user's settings and the negotiated limits by
/// session/config.h — nowhere else), and TransferStats, what it reports.
#pragma once

#include <array>
#include <atomic>
#include <optional>
#include <cstdint>
#include <string>
#include <vector>

#include "hash/digest.h"

namespace rcp {

struct SessionOptions {
  Checksum checksum = Checksum::xxh128;
  uint32_t chunk_size = 1u << 20;  ///< source: bytes per chunk (and per slot)
  uint32_t slots = 16;             ///< source: slots in its pool (chunks announced at once)
  uint32_t block_size = 64u << 10; ///< sink: bytes per block; a chunk scatters over several
  uint32_t blocks = 256;           ///< sink: blocks in its pool
  bool fsync = false;
  /// Digest workers off the loop; 0 hashes on the loop itself. 1 by default:
  /// on the 2-core test hosts 2 workers per side measured slower than 1
  /// (both ends share the cores); raise it on hosts with cores to spare.
  unsigned hash_threads = 1;
  int idle_timeout_ms = 30000;
  const std::atomic<bool>* cancel = nullptr;  ///< set by a signal handler to abort
  /// Authenticated session: every chunk digest is HMAC-SHA256 under this key
  /// over (file id, offset, length, bytes) (auth/chunk_mac.h), whatever
  /// `checksum` says, so a byte changed on the wire cannot be hidden by
  /// recomputing an unkeyed digest. The file digest folds these MACs.
  std::optional<std::array<uint8_t, 32>> chunk_key;
};

struct TransferStats {
  uint64_t bytes = 0;
  uint32_t files_ok = 0;
  uint32_t files_failed = 0;
  std::vector<std::string> errors;  ///< one line per failed file
};

}  // namespace rcp
