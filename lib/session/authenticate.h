/// The authentication exchange of a session, on its Channel, between the
/// transport hello and the OPEN (see auth/handshake.h for the cryptography and
/// wire/auth_messages.h for the frames):
///
///     client                                   daemon
///     AUTH_REQUEST {user, module, nonce}  ->
///                   <-  AUTH_CHALLENGE {nonce}      (or ERROR: unknown module, host refused, no auth)
///     AUTH_RESPONSE {client proof}        ->        daemon checks it
///                   <-  AUTH_PROOF {daemon proof}   (or ERROR EKEYREJECTED)
///     client checks the daemon's proof; from here on every control message
///     both ways carries a MAC (session/channel.h), and chunk digests are
///     keyed with the session's data key (SessionOptions::chunk_key).
///
/// A client without a secret sends OPEN first; a daemon whose module lists
/// auth_users refuses it (EKEYREJECTED). A client with a secret accepts
/// nothing from a daemon but a correct AUTH_PROOF: a daemon that answers with
/// anything else skipped authentication and is refused as an impostor.
#pragma once

#include <atomic>
#include <span>
#include <string>

#include "auth/handshake.h"
#include "session/channel.h"
#include "util/result.h"
#include "wire/auth_messages.h"

namespace rcp {

/// Runs the client's side; on success the channel is sealed and the keys
/// returned (their `data` key goes into SessionOptions::chunk_key). Errors:
/// EKEYREJECTED for anything that means "not authenticated" (the daemon
/// refused the proof, an impostor's proof, a daemon that skipped the
/// exchange), EACCES/ENOENT as the daemon sent them, others as they came.
Result<auth::SessionKeys> client_authenticate(Channel& ch, const std::string& user, const std::string& module,
                                              std::span<const uint8_t> secret, int timeout_ms,
                                              const std::atomic<bool>* cancel = nullptr);

/// The daemon's side after it received `req` (the first frame, decoded with
/// wire::decode_auth) and decided the module needs authentication. secret:
/// the user's secret, or nullptr when the user is unknown or not in the
/// module's auth_users (the exchange then fails as a wrong secret does, so
/// user names cannot be probed). A wrong proof gives EKEYREJECTED, whose
/// message the caller sends to the client as its ERROR. On success the
/// channel is sealed.
Result<auth::SessionKeys> server_authenticate(Channel& ch, const wire::AuthRequest& req, const std::string* secret,
                                              int timeout_ms, const std::atomic<bool>* cancel = nullptr);

/// The client's secret: the first line of `password_file` if given (refused
/// when others can read it), else $RCP_PASSWORD, else "" (no secret).
Result<std::string> client_secret(const std::string& password_file);

}  // namespace rcp
