#include "auth/hmac.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace rcp::auth {
namespace {

[[noreturn]] void crypto_failed(const char* what) {
  std::fprintf(stderr, "rcp: OpenSSL failed in %s (out of memory?)\n", what);
  std::abort();
}

EVP_MAC* hmac_alg() {
  static EVP_MAC* mac = [] {
    EVP_MAC* m = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    if (m == nullptr) crypto_failed("EVP_MAC_fetch(HMAC)");
    return m;
  }();
  return mac;
}

EVP_MAC_CTX* ctx(void* p) { return static_cast<EVP_MAC_CTX*>(p); }

}  // namespace

Hmac::Hmac(std::span<const uint8_t> key) {
  EVP_MAC_CTX* c = EVP_MAC_CTX_new(hmac_alg());
  if (c == nullptr) crypto_failed("EVP_MAC_CTX_new");
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0), OSSL_PARAM_construct_end()};
  // HMAC takes an empty key; OpenSSL wants a non-null pointer for it.
  static const uint8_t empty = 0;
  if (EVP_MAC_init(c, key.empty() ? &empty : key.data(), key.size(), params) != 1) crypto_failed("EVP_MAC_init");
  keyed_ = c;
  begin();
}

Hmac::~Hmac() {
  EVP_MAC_CTX_free(ctx(cur_));
  EVP_MAC_CTX_free(ctx(keyed_));
}

Hmac::Hmac(Hmac&& o) noexcept : keyed_(std::exchange(o.keyed_, nullptr)), cur_(std::exchange(o.cur_, nullptr)) {}

Hmac& Hmac::operator=(Hmac&& o) noexcept {
  if (this != &o) {
    EVP_MAC_CTX_free(ctx(cur_));
    EVP_MAC_CTX_free(ctx(keyed_));
    keyed_ = std::exchange(o.keyed_, nullptr);
    cur_ = std::exchange(o.cur_, nullptr);
  }
  return *this;
}

void Hmac::begin() {
  EVP_MAC_CTX_free(ctx(cur_));
  cur_ = EVP_MAC_CTX_dup(ctx(keyed_));
  if (cur_ == nullptr) crypto_failed("EVP_MAC_CTX_dup");
}

void Hmac::update(std::span<const uint8_t> data) {
  if (data.empty()) return;
  if (EVP_MAC_update(ctx(cur_), data.data(), data.size()) != 1) crypto_failed("EVP_MAC_update");
}

void Hmac::update_u16(uint16_t v) {
  const uint8_t b[2] = {static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
  update(b);
}
void Hmac::update_u32(uint32_t v) {
  update_u16(static_cast<uint16_t>(v >> 16));
  update_u16(static_cast<uint16_t>(v));
}
void Hmac::update_u64(uint64_t v) {
  update_u32(static_cast<uint32_t>(v >> 32));
  update_u32(static_cast<uint32_t>(v));
}
void Hmac::update_lp(std::span<const uint8_t> data) {
  update_u16(static_cast<uint16_t>(data.size()));
  update(data.first(std::min<size_t>(data.size(), 0xffff)));
}

Mac256 Hmac::finish() {
  Mac256 out{};
  size_t n = 0;
  if (EVP_MAC_final(ctx(cur_), out.data(), &n, out.size()) != 1 || n != out.size()) crypto_failed("EVP_MAC_final");
  begin();
  return out;
}

void hkdf_sha256(std::span<const uint8_t> ikm, std::span<const uint8_t> salt, std::span<const uint8_t> info,
                 std::span<uint8_t> out) {
  EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
  if (kdf == nullptr) crypto_failed("EVP_KDF_fetch(HKDF)");
  EVP_KDF_CTX* k = EVP_KDF_CTX_new(kdf);
  EVP_KDF_free(kdf);
  if (k == nullptr) crypto_failed("EVP_KDF_CTX_new");
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<uint8_t*>(ikm.data()), ikm.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, const_cast<uint8_t*>(salt.data()), salt.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, const_cast<uint8_t*>(info.data()), info.size()),
      OSSL_PARAM_construct_end()};
  const int rc = EVP_KDF_derive(k, out.data(), out.size(), params);
  EVP_KDF_CTX_free(k);
  if (rc != 1) crypto_failed("EVP_KDF_derive(HKDF)");
}

bool equal_ct(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace rcp::auth
