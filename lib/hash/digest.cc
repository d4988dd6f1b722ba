#include "hash/digest.h"

#include <openssl/evp.h>
#include <xxhash.h>

#include <cstring>
#include <vector>

namespace rcp {
namespace {

const EVP_MD* sha256_md() {
  // Fetched once: EVP_MD_fetch per call costs a lookup and an allocation.
  static const EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

Digest from_xxh128(XXH128_hash_t h) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  Digest d;
  d.len = 16;
  std::memcpy(d.bytes.data(), c.digest, 16);
  return d;
}

}  // namespace

std::optional<Checksum> parse_checksum(std::string_view name) {
  if (name == "xxh128") return Checksum::xxh128;
  if (name == "sha256") return Checksum::sha256;
  if (name == "none") return Checksum::none;
  return std::nullopt;
}

const char* checksum_name(Checksum c) {
  switch (c) {
    case Checksum::none: return "none";
    case Checksum::xxh128: return "xxh128";
    case Checksum::sha256: return "sha256";
  }
  return "?";
}

uint16_t supported_checksums() {
  return (1u << static_cast<int>(Checksum::none)) | (1u << static_cast<int>(Checksum::xxh128)) |
         (1u << static_cast<int>(Checksum::sha256));
}

Digest digest_of(Checksum algo, std::span<const uint8_t> data) {
  switch (algo) {
    case Checksum::none: return {};
    case Checksum::xxh128: return from_xxh128(XXH3_128bits(data.data(), data.size()));
    case Checksum::sha256: {
      Digest d;
      unsigned int n = 0;
      EVP_Digest(data.data(), data.size(), d.bytes.data(), &n, sha256_md(), nullptr);
      d.len = static_cast<uint8_t>(n);
      return d;
    }
  }
  return {};
}

struct Hasher::Impl {
  Checksum algo;
  XXH3_state_t* xxh = nullptr;
  EVP_MD_CTX* evp = nullptr;
  ~Impl() {
    if (xxh) XXH3_freeState(xxh);
    if (evp) EVP_MD_CTX_free(evp);
  }
};

Hasher::Hasher(Checksum algo) : impl_(std::make_unique<Impl>()) {
  impl_->algo = algo;
  if (algo == Checksum::xxh128) impl_->xxh = XXH3_createState();
  if (algo == Checksum::sha256) impl_->evp = EVP_MD_CTX_new();
  reset();
}
Hasher::~Hasher() = default;
Hasher::Hasher(Hasher&&) noexcept = default;
Hasher& Hasher::operator=(Hasher&&) noexcept = default;

Checksum Hasher::algo() const { return impl_->algo; }

void Hasher::reset() {
  if (impl_->xxh) XXH3_128bits_reset(impl_->xxh);
  if (impl_->evp) EVP_DigestInit_ex(impl_->evp, sha256_md(), nullptr);
}

void Hasher::update(std::span<const uint8_t> data) {
  if (impl_->xxh) XXH3_128bits_update(impl_->xxh, data.data(), data.size());
  if (impl_->evp) EVP_DigestUpdate(impl_->evp, data.data(), data.size());
}

Digest Hasher::finish() {
  Digest d;
  if (impl_->xxh) d = from_xxh128(XXH3_128bits_digest(impl_->xxh));
  if (impl_->evp) {
    unsigned int n = 0;
    EVP_DigestFinal_ex(impl_->evp, d.bytes.data(), &n);
    d.len = static_cast<uint8_t>(n);
  }
  reset();
  return d;
}

std::string to_hex(const Digest& d) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < d.len; ++i) {
    s += hex[d.bytes[i] >> 4];
    s += hex[d.bytes[i] & 15];
  }
  return s;
}

}  // namespace rcp
