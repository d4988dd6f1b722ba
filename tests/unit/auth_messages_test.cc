// Proves the authentication messages round-trip, are framed like every control message, and that
// the decoder refuses truncation, trailing bytes, wrong lengths, unknown mechanisms, over-long or
// empty names and non-auth types.
#include <doctest/doctest.h>

#include <variant>
#include <vector>

#include "wire/auth_messages.h"
#include "wire/messages.h"

using namespace rcp;
using namespace rcp::wire;

namespace {

using Bytes = std::vector<uint8_t>;

Nonce nonce(uint8_t seed) {
  Nonce n{};
  for (size_t i = 0; i < n.size(); ++i) n[i] = static_cast<uint8_t>(seed + i);
  return n;
}

Bytes enc(const AuthMessage& m) {
  Bytes b;
  auto st = encode_auth(m, b);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().context));
  return b;
}

AuthRequest request() {
  AuthRequest a;
  a.user = "alice";
  a.module = "data";
  a.client_nonce = nonce(1);
  return a;
}

void set_len(Bytes& b, uint32_t len) {
  for (int i = 0; i < 4; ++i) b[8 + i] = static_cast<uint8_t>(len >> (24 - 8 * i));
}

}  // namespace

TEST_CASE("auth messages round-trip") {
  {
    auto d = decode_auth(enc(request()));
    REQUIRE(d.ok());
    const auto& a = std::get<AuthRequest>(d.value());
    CHECK(a.mechanism == kAuthHmacSha256);
    CHECK(a.user == "alice");
    CHECK(a.module == "data");
    CHECK(a.client_nonce == nonce(1));
  }
  {
    AuthChallenge c;
    c.server_nonce = nonce(7);
    auto d = decode_auth(enc(c));
    REQUIRE(d.ok());
    CHECK(std::get<AuthChallenge>(d.value()).server_nonce == nonce(7));
  }
  {
    AuthResponse r;
    r.client_proof = nonce(9);
    auto d = decode_auth(enc(r));
    REQUIRE(d.ok());
    CHECK(std::get<AuthResponse>(d.value()).client_proof == nonce(9));
  }
  {
    AuthProof p;
    p.server_proof = nonce(11);
    auto d = decode_auth(enc(p));
    REQUIRE(d.ok());
    CHECK(std::get<AuthProof>(d.value()).server_proof == nonce(11));
  }
}

TEST_CASE("auth messages: framing is the control channel's, types outside the file messages") {
  const Bytes b = enc(AuthProof{});
  REQUIRE(b.size() == kHeaderSize + kProofSize);
  CHECK(b[0] == 'R');
  CHECK(b[6] == 0x01);
  CHECK(b[7] == 0x03);
  auto len = peek_length(b);
  REQUIRE(len.ok());
  CHECK(len.value() == kProofSize);
  CHECK(is_auth_frame(b));
  CHECK_FALSE(is_auth_frame(Bytes(b.begin(), b.begin() + 7)));
  // The file-transfer decoder refuses an auth message, the auth decoder a file message.
  CHECK_FALSE(decode(b).ok());
  Bytes fin;
  REQUIRE(encode(Finish{}, fin).ok());
  CHECK_FALSE(is_auth_frame(fin));
  auto d = decode_auth(fin);
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().code == EPROTO);
  // Types just past the auth range.
  Bytes t = b;
  t[7] = 0x04;
  CHECK_FALSE(decode_auth(t).ok());
  t[6] = 0x00;
  t[7] = 0xff;
  CHECK_FALSE(decode_auth(t).ok());
}

TEST_CASE("auth messages: every truncation and any trailing byte is refused") {
  AuthChallenge c;
  c.server_nonce = nonce(3);
  for (const Bytes& good : {enc(request()), enc(c), enc(AuthResponse{}), enc(AuthProof{})}) {
    for (size_t n = 0; n < good.size(); ++n) {
      Bytes cut(good.begin(), good.begin() + n);
      CHECK_MESSAGE(!decode_auth(cut).ok(), n);
      // Truncated payload with a header that admits it (length patched).
      if (n >= kHeaderSize) {
        set_len(cut, static_cast<uint32_t>(n - kHeaderSize));
        auto d = decode_auth(cut);
        REQUIRE_FALSE(d.ok());
        CHECK_MESSAGE(d.error().context.find("truncated") != std::string::npos, n, d.error().context);
      }
    }
    Bytes longer = good;
    longer.push_back(0);
    auto disagree = decode_auth(longer);  // length field disagrees with the bytes received
    REQUIRE_FALSE(disagree.ok());
    CHECK_MESSAGE(disagree.error().context.find("does not match") != std::string::npos, disagree.error().context);
    set_len(longer, static_cast<uint32_t>(longer.size() - kHeaderSize));
    auto d = decode_auth(longer);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().context.find("trailing") != std::string::npos);
  }
}

TEST_CASE("auth messages: bad magic, version, mechanism and names") {
  Bytes b = enc(request());
  Bytes m = b;
  m[0] ^= 1;
  CHECK_FALSE(decode_auth(m).ok());
  Bytes v = b;
  v[5] ^= 0x40;
  CHECK_FALSE(decode_auth(v).ok());
  Bytes mech = b;
  mech[kHeaderSize] = 2;
  CHECK_FALSE(decode_auth(mech).ok());
  AuthChallenge c;
  Bytes cb = enc(c);
  cb[kHeaderSize] = 0;
  CHECK_FALSE(decode_auth(cb).ok());

  AuthRequest a = request();
  a.user = std::string(kMaxAuthName, 'u');
  CHECK(decode_auth(enc(a)).ok());
  a.user.push_back('u');
  Bytes out;
  CHECK_FALSE(encode_auth(a, out).ok());
  CHECK(out.empty());
  a = request();
  a.module = std::string(kMaxAuthName + 1, 'm');
  CHECK_FALSE(encode_auth(a, out).ok());
  a = request();
  a.user.clear();
  CHECK_FALSE(encode_auth(a, out).ok());
  a = request();
  a.module.clear();
  CHECK_FALSE(encode_auth(a, out).ok());
  a = request();
  a.mechanism = 9;
  CHECK_FALSE(encode_auth(a, out).ok());
  AuthChallenge badc;
  badc.mechanism = 0;
  CHECK_FALSE(encode_auth(badc, out).ok());
  CHECK(out.empty());

  // Hand-built: a user name of 65 bytes, and empty names, refused by the decoder.
  auto build = [](const std::string& user, const std::string& module) {
    Bytes body;
    body.push_back(kAuthHmacSha256);
    body.push_back(static_cast<uint8_t>(user.size() >> 8));
    body.push_back(static_cast<uint8_t>(user.size()));
    body.insert(body.end(), user.begin(), user.end());
    body.push_back(static_cast<uint8_t>(module.size() >> 8));
    body.push_back(static_cast<uint8_t>(module.size()));
    body.insert(body.end(), module.begin(), module.end());
    body.insert(body.end(), kNonceSize, 5);
    Bytes f = enc(AuthProof{});
    f.resize(kHeaderSize);
    f[7] = 0x00;  // auth_request
    set_len(f, static_cast<uint32_t>(body.size()));
    f.insert(f.end(), body.begin(), body.end());
    return f;
  };
  CHECK(decode_auth(build("alice", "data")).ok());
  CHECK_FALSE(decode_auth(build(std::string(kMaxAuthName + 1, 'u'), "data")).ok());
  CHECK_FALSE(decode_auth(build("alice", std::string(kMaxAuthName + 1, 'm'))).ok());
  CHECK_FALSE(decode_auth(build("", "data")).ok());
  CHECK_FALSE(decode_auth(build("alice", "")).ok());
}
