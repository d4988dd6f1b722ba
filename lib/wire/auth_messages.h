/// The authentication exchange that opens a session with an authenticated
/// module (see auth/handshake.h for what is computed). Framed like every
/// control message (lib/wire/messages.h): magic, version, type, payload
/// length, all big-endian, so peek_length() frames them on a stream; their
/// types are 0x0100 and up, a range the file-transfer messages never use, and
/// wire::decode refuses them as it refuses any unknown type.
///
///     client                                  daemon
///     AUTH_REQUEST {user, module, client nonce}  ->
///                  <-  AUTH_CHALLENGE {server nonce}
///     AUTH_RESPONSE {client proof}               ->   daemon checks it
///                  <-  AUTH_PROOF {server proof}       client checks it
///
/// A refusal is the ordinary ERROR message. Every length is fixed or bounded
/// and a decoder refuses a short, long or trailing-byte message.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "util/result.h"

namespace rcp::wire {

enum class AuthType : uint16_t {
  auth_request = 0x0100,
  auth_challenge = 0x0101,
  auth_response = 0x0102,
  auth_proof = 0x0103,
};

/// The only mechanism so far: HMAC-SHA256 proofs, HKDF-SHA256 session keys.
constexpr uint8_t kAuthHmacSha256 = 1;
constexpr size_t kNonceSize = 32;
constexpr size_t kProofSize = 32;
/// Longest user and module names on the wire (as daemon/config.h allows).
constexpr size_t kMaxAuthName = 64;

using Nonce = std::array<uint8_t, kNonceSize>;
using Proof = std::array<uint8_t, kProofSize>;

/// Client -> daemon: who is asking, for which module, and the client's nonce.
struct AuthRequest {
  uint8_t mechanism = kAuthHmacSha256;
  std::string user;
  std::string module;
  Nonce client_nonce{};
};

/// Daemon -> client: the daemon's nonce.
struct AuthChallenge {
  uint8_t mechanism = kAuthHmacSha256;
  Nonce server_nonce{};
};

/// Client -> daemon: HMAC proving the client knows the secret.
struct AuthResponse {
  Proof client_proof{};
};

/// Daemon -> client: HMAC proving the daemon knows it too.
struct AuthProof {
  Proof server_proof{};
};

using AuthMessage = std::variant<AuthRequest, AuthChallenge, AuthResponse, AuthProof>;

AuthType auth_type_of(const AuthMessage& m);
const char* auth_type_name(AuthType t);
/// True if a frame's type field (big-endian bytes 6..7 of the header) is an auth type.
bool is_auth_frame(std::span<const uint8_t> header);

/// Appends the framed message. Fails (EPROTO) on a name longer than
/// kMaxAuthName or an unknown mechanism.
Status encode_auth(const AuthMessage& m, std::vector<uint8_t>& out);
/// Decodes exactly one framed auth message occupying all of buf; refuses a
/// wrong magic or version, a non-auth type, a length field that disagrees with
/// the buffer, an unknown mechanism, an over-long name and trailing bytes.
Result<AuthMessage> decode_auth(std::span<const uint8_t> buf);

}  // namespace rcp::wire
