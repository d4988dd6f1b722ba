/// Chunk reuse: when the destination already has a file of that name, the
/// sink hashes each chunk of it the source announces, at the same offset and
/// the same way the session hashes chunks (session/loop.h: xxh128, SHA-256,
/// or the keyed MAC of an authenticated session); a chunk whose digest equals
/// the announced one is taken from the old file instead of being pulled.
/// The bytes written to the temp file are exactly the bytes hashed (read
/// into memory once, hashed, written from there), so a reused chunk is as
/// verified as a pulled one, and the whole file is still checked against
/// the source's file digest before it is renamed into place.
#pragma once

#include <cstdint>
#include <vector>

#include "session/options.h"
#include "util/result.h"

namespace rcp {

class ChunkReuse {
 public:
  /// True when [offset, offset + length) of basis_fd hashes to `want`; the
  /// bytes are then written at offset to out_fd. False when the old file
  /// lacks the range, cannot be read there, or differs: pull the chunk.
  /// out_fd < 0: the bytes are already in place (basis_fd is the partial
  /// file being completed), nothing is written.
  /// Fails only when writing the temp file fails.
  Result<bool> try_reuse(const SessionOptions& opt, int basis_fd, uint64_t basis_size, int out_fd, uint32_t file_id,
                         uint64_t offset, uint32_t length, const wire::Digest& want);

 private:
  std::vector<uint8_t> buf_;  // one chunk, allocated on first use
};

/// Whether a session's chunk digests can identify content (not with
/// --digest none on an unauthenticated session: they are empty).
bool can_reuse_chunks(const SessionOptions& opt);

}  // namespace rcp
