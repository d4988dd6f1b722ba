#include "auth/handshake.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <algorithm>

#include "auth/hmac.h"
#include "daemon/config.h"

namespace rcp::auth {
namespace {

std::span<const uint8_t> bytes(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

void wipe(std::vector<uint8_t>& v) {
  if (!v.empty()) OPENSSL_cleanse(v.data(), v.size());
  v.clear();
}

Error out_of_order(const char* what) { return make_error(EPROTO, std::string("authentication: ") + what + " out of order"); }

}  // namespace

SessionKeys::~SessionKeys() {
  OPENSSL_cleanse(client_to_server.data(), client_to_server.size());
  OPENSSL_cleanse(server_to_client.data(), server_to_client.size());
  OPENSSL_cleanse(data.data(), data.size());
}

Result<Nonce> fresh_nonce() {
  Nonce n{};
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1) return make_error(EIO, "cannot draw a random nonce");
  return n;
}

Status check_nonce(const Nonce& n, std::string_view whose) {
  if (std::all_of(n.begin(), n.end(), [](uint8_t b) { return b == 0; }))
    return make_error(EPROTO, "authentication: the " + std::string(whose) + " nonce is all zero");
  return {};
}

Proof compute_proof(Role role, std::span<const uint8_t> secret, const Nonce& client_nonce, const Nonce& server_nonce,
                    std::string_view user, std::string_view module, std::span<const uint8_t> binding) {
  Hmac h(secret);
  h.update_lp(bytes(role == Role::client ? "rcp-auth-v1 client proof" : "rcp-auth-v1 server proof"));
  h.update(client_nonce);
  h.update(server_nonce);
  h.update_lp(bytes(user));
  h.update_lp(bytes(module));
  if (!binding.empty()) h.update_lp(binding);
  return h.finish();
}

Result<SessionKeys> derive_session_keys(std::span<const uint8_t> secret, const Nonce& client_nonce,
                                        const Nonce& server_nonce, std::string_view user, std::string_view module,
                                        std::span<const uint8_t> binding) {
  if (secret.empty()) return make_error(EINVAL, "authentication: empty secret");
  std::array<uint8_t, 2 * wire::kNonceSize> salt{};
  std::copy(client_nonce.begin(), client_nonce.end(), salt.begin());
  std::copy(server_nonce.begin(), server_nonce.end(), salt.begin() + wire::kNonceSize);
  std::vector<uint8_t> info;
  auto lp = [&](std::string_view s) {
    info.push_back(static_cast<uint8_t>(s.size() >> 8));
    info.push_back(static_cast<uint8_t>(s.size()));
    info.insert(info.end(), s.begin(), s.end());
  };
  lp("rcp-auth-v1 session keys");
  lp(user);
  lp(module);
  if (!binding.empty()) lp({reinterpret_cast<const char*>(binding.data()), binding.size()});
  std::array<uint8_t, 3 * kKeySize> okm{};
  hkdf_sha256(secret, salt, info, okm);
  SessionKeys k;
  std::copy_n(okm.begin(), kKeySize, k.client_to_server.begin());
  std::copy_n(okm.begin() + kKeySize, kKeySize, k.server_to_client.begin());
  std::copy_n(okm.begin() + 2 * kKeySize, kKeySize, k.data.begin());
  OPENSSL_cleanse(okm.data(), okm.size());
  return k;
}

// ---- client ----

ClientHandshake::~ClientHandshake() { wipe(secret_); }

Result<ClientHandshake> ClientHandshake::start(std::string user, std::string module, std::span<const uint8_t> secret,
                                               std::span<const uint8_t> binding) {
  if (!daemon::valid_user_name(user)) return make_error(EINVAL, "authentication: '" + user + "' is not a valid user name");
  if (!daemon::valid_module_name(module))
    return make_error(EINVAL, "authentication: '" + module + "' is not a valid module name");
  if (secret.empty()) return make_error(EINVAL, "authentication: empty secret for user " + user);
  ClientHandshake h;
  RCP_ASSIGN(h.request_.client_nonce, fresh_nonce());
  h.request_.user = std::move(user);
  h.request_.module = std::move(module);
  h.secret_.assign(secret.begin(), secret.end());
  h.binding_.assign(binding.begin(), binding.end());
  h.state_ = State::requested;
  return h;
}

Result<wire::AuthResponse> ClientHandshake::on_challenge(const wire::AuthChallenge& c) {
  if (state_ != State::requested) return out_of_order("challenge");
  state_ = State::failed;
  RCP_TRY(check_nonce(c.server_nonce, "daemon's"));
  if (equal_ct(c.server_nonce, request_.client_nonce))
    return make_error(EPROTO, "authentication: the daemon's nonce repeats the client's (a reflected challenge)");
  server_nonce_ = c.server_nonce;
  wire::AuthResponse r;
  r.client_proof =
      compute_proof(Role::client, secret_, request_.client_nonce, server_nonce_, request_.user, request_.module, binding_);
  state_ = State::responded;
  return r;
}

Result<SessionKeys> ClientHandshake::on_proof(const wire::AuthProof& p) {
  if (state_ != State::responded) return out_of_order("daemon proof");
  state_ = State::failed;
  const Proof expected =
      compute_proof(Role::server, secret_, request_.client_nonce, server_nonce_, request_.user, request_.module, binding_);
  if (!equal_ct(expected, p.server_proof)) {
    return make_error(EKEYREJECTED, "authentication: the daemon could not prove it knows the secret of user " +
                                        request_.user + " for module " + request_.module +
                                        " (an impostor, or a different secret on the daemon)");
  }
  RCP_ASSIGN(SessionKeys k,
             derive_session_keys(secret_, request_.client_nonce, server_nonce_, request_.user, request_.module,
                                 binding_));
  wipe(secret_);
  state_ = State::done;
  return k;
}

// ---- server ----

ServerHandshake::~ServerHandshake() { wipe(secret_); }

Result<ServerHandshake> ServerHandshake::start(const wire::AuthRequest& req, const std::string* secret,
                                               std::span<const uint8_t> binding) {
  if (!daemon::valid_user_name(req.user)) return make_error(EPROTO, "authentication: invalid user name");
  if (!daemon::valid_module_name(req.module)) return make_error(EPROTO, "authentication: invalid module name");
  RCP_TRY(check_nonce(req.client_nonce, "client's"));
  ServerHandshake h;
  h.request_ = req;
  h.binding_.assign(binding.begin(), binding.end());
  RCP_ASSIGN(h.challenge_.server_nonce, fresh_nonce());
  if (secret != nullptr && !secret->empty()) {
    h.secret_.assign(secret->begin(), secret->end());
  } else {
    // No client knows 32 fresh random bytes: the proof check below fails for
    // certain, after the same work as for a known user with a wrong secret.
    RCP_ASSIGN(Nonce dummy, fresh_nonce());
    h.secret_.assign(dummy.begin(), dummy.end());
  }
  h.state_ = State::challenged;
  return h;
}

Result<ServerHandshake::Accepted> ServerHandshake::on_response(const wire::AuthResponse& r) {
  if (state_ != State::challenged) return out_of_order("client response");
  state_ = State::failed;
  const Proof expected = compute_proof(Role::client, secret_, request_.client_nonce, challenge_.server_nonce,
                                       request_.user, request_.module, binding_);
  if (!equal_ct(expected, r.client_proof)) {
    return make_error(EACCES, "authentication failed for user " + request_.user + " on module " + request_.module);
  }
  Accepted a;
  a.proof.server_proof = compute_proof(Role::server, secret_, request_.client_nonce, challenge_.server_nonce,
                                       request_.user, request_.module, binding_);
  RCP_ASSIGN(a.keys, derive_session_keys(secret_, request_.client_nonce, challenge_.server_nonce, request_.user,
                                         request_.module, binding_));
  wipe(secret_);
  state_ = State::done;
  return a;
}

}  // namespace rcp::auth
