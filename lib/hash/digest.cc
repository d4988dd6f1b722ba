#include "hash/digest.h"

#include <openssl/evp.h>
#include <xxhash.h>
#if RCP_XXH_DISPATCH
// Every XXH3_* call below becomes its XXH3_*_dispatch twin, which picks
// AVX-512, AVX2 or SSE2 at run time; the plain functions of the distribution's
// library are built for the x86-64 baseline (SSE2). xxh128 of a 1 MiB buffer
// in cache, this machine (AVX-512): 3.4-11 GB/s plain, 59-61 GB/s dispatched;
// the result is the same hash (bench/README.md).
#include <xxh_x86dispatch.h>
#endif

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
  XXH3_state_t* xxh = nullptr;
  EVP_MD_CTX* evp = nullptr;
  ~Impl() {
    if (xxh) XXH3_freeState(xxh);
    if (evp) EVP_MD_CTX_free(evp);
  }
  void reset(Checksum algo) {
    if (algo == Checksum::xxh128 && xxh) XXH3_128bits_reset(xxh);
    if (algo == Checksum::sha256 && evp) EVP_DigestInit_ex(evp, sha256_md(), nullptr);
  }
};

Hasher::Hasher(Checksum algo) : algo_(algo) {}
Hasher::~Hasher() = default;
Hasher::Hasher(Hasher&&) noexcept = default;
Hasher& Hasher::operator=(Hasher&&) noexcept = default;

Checksum Hasher::algo() const { return algo_; }

void Hasher::reset() {
  held_ = 0;
  streaming_ = false;  // (the state, if any, is reset when next used)
}

void Hasher::update(std::span<const uint8_t> data) {
  if (algo_ == Checksum::none || data.empty()) return;
  if (!streaming_) {
    if (data.size() <= kInline - held_) {
      std::memcpy(buf_.data() + held_, data.data(), data.size());
      held_ = static_cast<uint16_t>(held_ + data.size());
      return;
    }
    if (!impl_) {
      impl_ = std::make_unique<Impl>();
      if (algo_ == Checksum::xxh128) impl_->xxh = XXH3_createState();
      if (algo_ == Checksum::sha256) impl_->evp = EVP_MD_CTX_new();
    }
    impl_->reset(algo_);
    streaming_ = true;
    const uint16_t held = held_;
    held_ = 0;
    update({buf_.data(), held});
  }
  if (impl_->xxh) XXH3_128bits_update(impl_->xxh, data.data(), data.size());
  if (impl_->evp) EVP_DigestUpdate(impl_->evp, data.data(), data.size());
}

Digest Hasher::finish() {
  Digest d;
  if (!streaming_) {
    d = digest_of(algo_, {buf_.data(), held_});
  } else if (impl_->xxh) {
    d = from_xxh128(XXH3_128bits_digest(impl_->xxh));
  } else if (impl_->evp) {
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
