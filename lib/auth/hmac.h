/// HMAC-SHA256 and HKDF-SHA256 through OpenSSL 3's EVP_MAC / EVP_KDF (the EVP
/// path uses the SHA-NI code where the CPU has it). A keyed Hmac holds an
/// initialised context and copies it per message, so the key schedule runs
/// once per key, not per message. OpenSSL fails these only when it cannot
/// allocate; that aborts with a message (as an allocation failure would)
/// rather than pretend a MAC was computed.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace rcp::auth {

using Mac256 = std::array<uint8_t, 32>;

class Hmac {
 public:
  explicit Hmac(std::span<const uint8_t> key);
  ~Hmac();
  Hmac(Hmac&& o) noexcept;
  Hmac& operator=(Hmac&& o) noexcept;
  Hmac(const Hmac&) = delete;
  Hmac& operator=(const Hmac&) = delete;

  /// Starts a new message under the same key.
  void begin();
  void update(std::span<const uint8_t> data);
  void update_u16(uint16_t v);
  void update_u32(uint32_t v);
  void update_u64(uint64_t v);
  /// L(x): a u16 big-endian length, then the bytes (x at most 65535 bytes).
  void update_lp(std::span<const uint8_t> data);
  Mac256 finish();

 private:
  void* keyed_ = nullptr;  // EVP_MAC_CTX with the key set
  void* cur_ = nullptr;    // the message in progress
};

/// HKDF-SHA256 (RFC 5869) extract-then-expand into out (at most 255*32 bytes).
void hkdf_sha256(std::span<const uint8_t> ikm, std::span<const uint8_t> salt, std::span<const uint8_t> info,
                 std::span<uint8_t> out);

/// Constant-time equality of two equally long byte strings (CRYPTO_memcmp);
/// false for different lengths.
bool equal_ct(std::span<const uint8_t> a, std::span<const uint8_t> b);

}  // namespace rcp::auth
