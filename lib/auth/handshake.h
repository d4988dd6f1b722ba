/// Mutual challenge-response authentication between rcp and rcpd for a module
/// that lists auth_users, and the session keys it yields. Both sides know a
/// shared secret (the daemon from its secrets file, the client from
/// --password-file or RCP_PASSWORD); it never crosses the wire.
///
///   client nonce cn, server nonce sn: 32 bytes each from OpenSSL's CSPRNG,
///     fresh per attempt; an all-zero nonce, or a server nonce equal to the
///     client's (a reflected challenge), is refused.
///   proof(role) = HMAC-SHA256(secret, L("rcp-auth-v1 <role> proof") || cn || sn || L(user) || L(module)
///                             [|| L(binding)])
///     where L(x) is a u16 big-endian length then x, so no two (user, module)
///     pairs give the same input ("ab","c" vs "a","bc"). binding is the
///     encrypted channel's exporter value (Transport::channel_binding(), TLS
///     on TCP; absent on a plain channel): each side uses its own, so a man
///     in the middle that terminates TLS towards both (two channels, two
///     different exporters) makes both proofs fail.
///   The client proves first; the daemon checks in constant time
///   (CRYPTO_memcmp) and only then proves itself, so an unauthenticated
///   stranger never gets a value computed from the secret. The client checks
///   the daemon's proof before it sends or accepts any file: an impostor
///   daemon, or a man in the middle changing user, module or a nonce, fails.
///   keys = HKDF-SHA256(ikm = secret, salt = cn || sn,
///                      info = L("rcp-auth-v1 session keys") || L(user) || L(module) [|| L(binding)]), 96 bytes:
///     client->server MAC key | server->client MAC key | data (chunk MAC) key.
///
/// Not defended: a peer that sees one exchange (a man in the middle, or an
/// impostor daemon a client was pointed at) can test guesses of a weak secret
/// offline against a proof. Secrets should be long and random (rcpd.conf(5)).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"
#include "wire/auth_messages.h"

namespace rcp::auth {

using wire::Nonce;
using wire::Proof;

enum class Role : uint8_t { client, server };

constexpr size_t kKeySize = 32;
using Key = std::array<uint8_t, kKeySize>;

/// The keys one authenticated session uses; wiped when destroyed.
struct SessionKeys {
  Key client_to_server{};  ///< MACs control messages the client sends
  Key server_to_client{};  ///< MACs control messages the daemon sends
  Key data{};              ///< keys the chunk MAC (auth/chunk_mac.h)
  SessionKeys() = default;
  SessionKeys(const SessionKeys&) = default;
  SessionKeys& operator=(const SessionKeys&) = default;
  ~SessionKeys();
};

/// 32 bytes from OpenSSL's CSPRNG (RAND_bytes, seeded by getrandom).
Result<Nonce> fresh_nonce();
/// Refuses (EPROTO) an all-zero nonce: what a broken generator or a lazy attacker sends.
Status check_nonce(const Nonce& n, std::string_view whose);

/// `binding` (empty: none) is the channel binding described above.
Proof compute_proof(Role role, std::span<const uint8_t> secret, const Nonce& client_nonce, const Nonce& server_nonce,
                    std::string_view user, std::string_view module, std::span<const uint8_t> binding = {});
Result<SessionKeys> derive_session_keys(std::span<const uint8_t> secret, const Nonce& client_nonce,
                                        const Nonce& server_nonce, std::string_view user, std::string_view module,
                                        std::span<const uint8_t> binding = {});

/// The client's side: start() -> send request(); on AUTH_CHALLENGE call
/// on_challenge() and send its AUTH_RESPONSE; on AUTH_PROOF call on_proof(),
/// which yields the keys only if the daemon proved it knows the secret.
/// A call out of order, or any call after a failure, is refused (EPROTO).
class ClientHandshake {
 public:
  static Result<ClientHandshake> start(std::string user, std::string module, std::span<const uint8_t> secret,
                                       std::span<const uint8_t> binding = {});
  ClientHandshake(ClientHandshake&&) noexcept = default;
  ClientHandshake& operator=(ClientHandshake&&) noexcept = default;
  ~ClientHandshake();

  const wire::AuthRequest& request() const { return request_; }
  Result<wire::AuthResponse> on_challenge(const wire::AuthChallenge& c);
  /// EKEYREJECTED when the daemon's proof is wrong: an impostor, or a daemon
  /// whose secret for this user differs.
  Result<SessionKeys> on_proof(const wire::AuthProof& p);

 private:
  ClientHandshake() = default;
  enum class State : uint8_t { requested, responded, done, failed };
  State state_ = State::failed;
  wire::AuthRequest request_;
  Nonce server_nonce_{};
  std::vector<uint8_t> secret_;
  std::vector<uint8_t> binding_;
};

/// The daemon's side: start() with the client's AUTH_REQUEST and the user's
/// secret -> send challenge(); on AUTH_RESPONSE call on_response(), which
/// checks the client's proof and yields the daemon's AUTH_PROOF and the keys.
/// Pass secret = nullptr when the user is unknown or not in the module's
/// auth_users: the exchange goes on with a random secret and fails at
/// on_response exactly as a wrong secret does, so user names cannot be probed.
class ServerHandshake {
 public:
  static Result<ServerHandshake> start(const wire::AuthRequest& req, const std::string* secret,
                                       std::span<const uint8_t> binding = {});
  ServerHandshake(ServerHandshake&&) noexcept = default;
  ServerHandshake& operator=(ServerHandshake&&) noexcept = default;
  ~ServerHandshake();

  const wire::AuthChallenge& challenge() const { return challenge_; }
  struct Accepted {
    wire::AuthProof proof;
    SessionKeys keys;
  };
  /// EACCES naming user and module when the proof is wrong (or the user unknown).
  Result<Accepted> on_response(const wire::AuthResponse& r);

 private:
  ServerHandshake() = default;
  enum class State : uint8_t { challenged, done, failed };
  State state_ = State::failed;
  wire::AuthRequest request_;
  wire::AuthChallenge challenge_;
  std::vector<uint8_t> secret_;
  std::vector<uint8_t> binding_;
};

}  // namespace rcp::auth
