#include "session/authenticate.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fmt/core.h>

#include "util/fd.h"
#include "util/log.h"
#include "util/test_faults.h"

namespace rcp {
namespace {

/// The next frame as an auth message of type T. An ERROR is returned as the
/// error it carries (with `refused_code` instead when the peer's code is not
/// an access or auth code); anything else is a protocol violation `what`.
template <typename T>
Result<T> expect(Channel& ch, int timeout_ms, const std::atomic<bool>* cancel, int wrong_code, const char* what) {
  RCP_ASSIGN(std::vector<uint8_t> frame, ch.receive_frame(timeout_ms, cancel));
  if (wire::is_auth_frame(frame)) {
    auto m = wire::decode_auth(frame);
    if (!m.ok()) return make_error(m.error().code, ch.transport().peer() + ": " + m.error().context);
    if (auto* t = std::get_if<T>(&m.value())) return *t;
    return make_error(wrong_code, fmt::format("{}: {} (got {})", ch.transport().peer(), what,
                                              wire::auth_type_name(wire::auth_type_of(m.value()))));
  }
  auto m = wire::decode(frame);
  if (m.ok()) {
    if (auto* em = std::get_if<wire::ErrorMsg>(&m.value())) return make_error(em->err, ch.transport().peer() + ": " + em->message);
    return make_error(wrong_code, fmt::format("{}: {} (got {})", ch.transport().peer(), what,
                                              wire::type_name(wire::type_of(m.value()))));
  }
  return make_error(wrong_code, fmt::format("{}: {} (got an undecodable message)", ch.transport().peer(), what));
}

}  // namespace

Result<auth::SessionKeys> client_authenticate(Channel& ch, const std::string& user, const std::string& module,
                                              std::span<const uint8_t> secret, int timeout_ms,
                                              const std::atomic<bool>* cancel) {
  RCP_ASSIGN(auth::ClientHandshake hs, auth::ClientHandshake::start(user, module, secret, ch.transport().channel_binding()));
  RCP_TRY(ch.send_auth(hs.request()));
  auto challenge = expect<wire::AuthChallenge>(
      ch, timeout_ms, cancel, EKEYREJECTED,
      "refusing the daemon: it did not authenticate itself (a password was given, so an rcpd that skips "
      "authentication is treated as an impostor)");
  if (!challenge.ok()) {
    // A daemon that refuses with ENOTSUP/EPROTO has no authentication for this module: also not trusted.
    const int c = challenge.error().code;
    // ENOPROTOOPT: the module requires encryption this session lacks (the copy stops either way).
    if (c == EACCES || c == ENOENT || c == EKEYREJECTED || c == ETIMEDOUT || c == EINTR || c == ENOPROTOOPT)
      return challenge.error();
    return make_error(EKEYREJECTED, "refusing the daemon: " + challenge.error().context);
  }
  RCP_ASSIGN(wire::AuthResponse resp, hs.on_challenge(challenge.value()));
  RCP_TRY(ch.send_auth(resp));
  RCP_ASSIGN(wire::AuthProof proof,
             expect<wire::AuthProof>(ch, timeout_ms, cancel, EKEYREJECTED,
                                     "refusing the daemon: it answered the proof without proving itself"));
  auto keys = hs.on_proof(proof);
  if (!keys.ok()) return make_error(EKEYREJECTED, ch.transport().peer() + ": " + keys.error().context + " (impostor?)");
  ch.enable_mac(auth::Role::client, keys.value());
  return keys;
}

Result<auth::SessionKeys> server_authenticate(Channel& ch, const wire::AuthRequest& req, const std::string* secret,
                                              int timeout_ms, const std::atomic<bool>* cancel) {
  RCP_ASSIGN(auth::ServerHandshake hs, auth::ServerHandshake::start(req, secret, ch.transport().channel_binding()));
  RCP_TRY(ch.send_auth(hs.challenge()));
  RCP_ASSIGN(wire::AuthResponse resp,
             expect<wire::AuthResponse>(ch, timeout_ms, cancel, EPROTO, "expected AUTH_RESPONSE"));
  auto ok = hs.on_response(resp);
  if (!ok.ok())  // the caller sends this to the client as its ERROR
    return make_error(EKEYREJECTED, "authentication failed for user " + req.user + " on module " + req.module +
                                        (ch.transport().encrypted()
                                             ? " (unknown user, wrong password, or a man in the middle terminating TLS)"
                                             : " (unknown user or wrong password)"));
  wire::AuthProof proof = ok->proof;
  if (test_faults().auth_bad_proof) proof.server_proof[0] ^= 0x01;
  RCP_TRY(ch.send_auth(proof));
  ch.enable_mac(auth::Role::server, ok->keys);
  return std::move(ok->keys);
}

Result<std::string> client_secret(const std::string& password_file) {
  std::string s;
  if (!password_file.empty()) {
    Fd fd(::open(password_file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd.valid()) return sys_error("cannot open password file " + password_file);
    struct stat st {};
    if (fstat(fd.get(), &st) != 0) return sys_error("cannot stat password file " + password_file);
    if (!S_ISREG(st.st_mode)) return make_error(EKEYREJECTED, password_file + ": not a regular file");
    if (st.st_mode & 0077)
      return make_error(EKEYREJECTED, fmt::format("password file {} is accessible by others (mode {:o}); chmod 600 it",
                                                  password_file, st.st_mode & 07777));
    char buf[1025];
    ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
    if (n < 0) return sys_error("cannot read password file " + password_file);
    s.assign(buf, static_cast<size_t>(n));
  } else if (const char* env = std::getenv("RCP_PASSWORD")) {
    s = env;
  }
  if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  if (!s.empty() && s.back() == '\r') s.pop_back();
  if (!password_file.empty() && s.empty()) return make_error(EKEYREJECTED, "password file " + password_file + " is empty");
  return s;
}

}  // namespace rcp
