/// Chunk and file digests behind one small interface. xxh128 comes from the
/// distribution's libxxhash (the default rsync uses; ~30 GB/s per core, so it
/// never bounds the wire), SHA-256 from OpenSSL's EVP API (EVP so the SHA-NI
/// dispatch is used; the fetched MD is reused, not fetched per chunk). The
/// file digest is the same algorithm over the ordered chunk digests, a
/// two-level tree that lets chunks be hashed in parallel and re-fetched alone.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "wire/messages.h"

namespace rcp {

using wire::Checksum;
using wire::Digest;

/// Parses "xxh128" / "sha256" / "none".
std::optional<Checksum> parse_checksum(std::string_view name);
const char* checksum_name(Checksum c);
/// Bitmask of algorithms this build supports (for the hello).
uint16_t supported_checksums();

/// One-shot digest of a buffer.
Digest digest_of(Checksum algo, std::span<const uint8_t> data);

/// Streaming digest: a chunk scattered over several buffers is hashed piece
/// by piece, and the file digest is a Hasher fed the ordered chunk digests.
/// Input up to kInline bytes is kept here and digested in one shot by
/// finish(); the streaming state (xxh128's is 576 bytes, aligned, from the
/// heap) is set up only past that. Most files are one chunk, so their file
/// digest is one 16-byte input: a 10,000-file tree paid a state's
/// allocation, reset and release per file on each end (perf: XXH3 streaming
/// and malloc ≈ 5 % of the sending rcp's samples).
class Hasher {
 public:
  explicit Hasher(Checksum algo);
  ~Hasher();
  Hasher(Hasher&&) noexcept;
  Hasher& operator=(Hasher&&) noexcept;
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  void reset();
  void update(std::span<const uint8_t> data);
  void add_chunk(const Digest& d) { update({d.bytes.data(), d.len}); }
  Digest finish();
  Checksum algo() const;

 private:
  static constexpr size_t kInline = 192;  // 12 xxh128 chunk digests, 6 SHA-256 ones
  struct Impl;
  Checksum algo_;
  bool streaming_ = false;  // this digest's input went to impl_, none is in buf_
  uint16_t held_ = 0;       // else: its bytes so far, in buf_
  std::array<uint8_t, kInline> buf_;
  std::unique_ptr<Impl> impl_;  // the streaming state, past kInline bytes
};

/// Lower-case hex, for messages.
std::string to_hex(const Digest& d);

}  // namespace rcp
