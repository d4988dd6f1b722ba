#include "wire/auth_messages.h"

#include <fmt/core.h>

#include "util/overloaded.h"
#include "wire/codec.h"
#include "wire/messages.h"

namespace rcp::wire {
namespace {

Error proto(std::string what) { return make_error(EPROTO, std::move(what)); }

bool name_ok(const std::string& s) { return !s.empty() && s.size() <= kMaxAuthName; }

}  // namespace

AuthType auth_type_of(const AuthMessage& m) {
  return std::visit(overloaded{
                        [](const AuthRequest&) { return AuthType::auth_request; },
                        [](const AuthChallenge&) { return AuthType::auth_challenge; },
                        [](const AuthResponse&) { return AuthType::auth_response; },
                        [](const AuthProof&) { return AuthType::auth_proof; },
                    },
                    m);
}

const char* auth_type_name(AuthType t) {
  switch (t) {
    case AuthType::auth_request: return "AUTH_REQUEST";
    case AuthType::auth_challenge: return "AUTH_CHALLENGE";
    case AuthType::auth_response: return "AUTH_RESPONSE";
    case AuthType::auth_proof: return "AUTH_PROOF";
  }
  return "UNKNOWN";
}

bool is_auth_frame(std::span<const uint8_t> header) {
  if (header.size() < kHeaderSize) return false;
  const uint16_t t = static_cast<uint16_t>((header[6] << 8) | header[7]);
  return t >= static_cast<uint16_t>(AuthType::auth_request) && t <= static_cast<uint16_t>(AuthType::auth_proof);
}

Status encode_auth(const AuthMessage& m, std::vector<uint8_t>& out) {
  Status st;
  std::vector<uint8_t> body;
  Writer w(body);
  std::visit(overloaded{
                 [&](const AuthRequest& a) {
                   if (a.mechanism != kAuthHmacSha256) st = proto("AUTH_REQUEST with unknown mechanism");
                   if (!name_ok(a.user)) st = proto(fmt::format("user name must be 1 to {} bytes", kMaxAuthName));
                   if (!name_ok(a.module)) st = proto(fmt::format("module name must be 1 to {} bytes", kMaxAuthName));
                   w.u8(a.mechanism);
                   w.str(a.user);
                   w.str(a.module);
                   w.bytes(a.client_nonce);
                 },
                 [&](const AuthChallenge& c) {
                   if (c.mechanism != kAuthHmacSha256) st = proto("AUTH_CHALLENGE with unknown mechanism");
                   w.u8(c.mechanism);
                   w.bytes(c.server_nonce);
                 },
                 [&](const AuthResponse& r) { w.bytes(r.client_proof); },
                 [&](const AuthProof& p) { w.bytes(p.server_proof); },
             },
             m);
  if (!st.ok()) return st;
  Writer h(out);
  h.u32(kMagic);
  h.u16(protocol_version());
  h.u16(static_cast<uint16_t>(auth_type_of(m)));
  h.u32(static_cast<uint32_t>(body.size()));
  h.bytes(body);
  return {};
}

Result<AuthMessage> decode_auth(std::span<const uint8_t> buf) {
  RCP_ASSIGN(uint32_t len, peek_length(buf));
  if (buf.size() != kHeaderSize + len)
    return proto(fmt::format("message length {} does not match {} bytes received", len, buf.size() - kHeaderSize));
  if (!is_auth_frame(buf)) return proto(fmt::format("message type {} is not an authentication message", (buf[6] << 8) | buf[7]));
  const auto type = static_cast<AuthType>((buf[6] << 8) | buf[7]);
  Reader r(buf.subspan(kHeaderSize));
  AuthMessage m;
  switch (type) {
    case AuthType::auth_request: {
      AuthRequest a;
      a.mechanism = r.u8();
      a.user = r.str(kMaxAuthName);
      a.module = r.str(kMaxAuthName);
      r.bytes(a.client_nonce.data(), a.client_nonce.size());
      if (r.ok() && a.mechanism != kAuthHmacSha256)
        return proto(fmt::format("AUTH_REQUEST with unknown mechanism {}", a.mechanism));
      if (r.ok() && (a.user.empty() || a.module.empty())) return proto("AUTH_REQUEST with an empty user or module");
      m = std::move(a);
      break;
    }
    case AuthType::auth_challenge: {
      AuthChallenge c;
      c.mechanism = r.u8();
      r.bytes(c.server_nonce.data(), c.server_nonce.size());
      if (r.ok() && c.mechanism != kAuthHmacSha256)
        return proto(fmt::format("AUTH_CHALLENGE with unknown mechanism {}", c.mechanism));
      m = c;
      break;
    }
    case AuthType::auth_response: {
      AuthResponse a;
      r.bytes(a.client_proof.data(), a.client_proof.size());
      m = a;
      break;
    }
    case AuthType::auth_proof: {
      AuthProof p;
      r.bytes(p.server_proof.data(), p.server_proof.size());
      m = p;
      break;
    }
  }
  if (!r.ok()) return proto(fmt::format("truncated or malformed {}", auth_type_name(type)));
  if (!r.at_end()) return proto(fmt::format("{} has {} trailing bytes", auth_type_name(type), r.remaining()));
  return m;
}

}  // namespace rcp::wire
