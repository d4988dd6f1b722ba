// Proves mutual authentication (right secret both ways; wrong secret, impostor daemon, tampered
// names and nonces, zero and reflected nonces all fail on the right side), the derived keys, the
// control-message MAC (tampering, replay, reorder, reflection, cross-session) and the chunk MAC.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "auth/chunk_mac.h"
#include "auth/handshake.h"
#include "auth/hmac.h"
#include "auth/message_mac.h"

using namespace rcp;
using namespace rcp::auth;

namespace {

using Bytes = std::vector<uint8_t>;

std::span<const uint8_t> sp(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }
Bytes bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

const std::string kSecret = "correct horse battery staple";

struct Run {
  Result<SessionKeys> client = make_error(0, "not run");
  Result<ServerHandshake::Accepted> server = make_error(0, "not run");
};

/// A whole exchange in memory; tamper hooks let a test play the man in the middle.
Run run_exchange(const std::string& client_secret, const std::string* server_secret, const char* user = "alice",
             const char* module = "data") {
  Run run;
  auto c = ClientHandshake::start(user, module, sp(client_secret));
  REQUIRE(c.ok());
  auto s = ServerHandshake::start(c.value().request(), server_secret);
  REQUIRE(s.ok());
  auto resp = c.value().on_challenge(s.value().challenge());
  REQUIRE(resp.ok());
  run.server = s.value().on_response(resp.value());
  if (run.server.ok()) run.client = c.value().on_proof(run.server.value().proof);
  return run;
}

bool same_keys(const SessionKeys& a, const SessionKeys& b) {
  return a.client_to_server == b.client_to_server && a.server_to_client == b.server_to_client && a.data == b.data;
}

std::pair<SessionKeys, SessionKeys> keys_pair() {
  Run r = run_exchange(kSecret, &kSecret);
  REQUIRE(r.server.ok());
  REQUIRE(r.client.ok());
  return {r.client.value(), r.server.value().keys};
}

}  // namespace

TEST_CASE("hmac: RFC 4231 test case 2 and HKDF RFC 5869 test case 1") {
  Hmac h(sp("Jefe"));
  h.update(sp("what do ya want "));
  h.update(sp("for nothing?"));
  const Mac256 m = h.finish();
  const Bytes want = {0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24, 0x26, 0x08, 0x95, 0x75, 0xc7,
                      0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27, 0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43};
  CHECK(Bytes(m.begin(), m.end()) == want);
  // finish() starts the next message under the same key.
  h.update(sp("what do ya want for nothing?"));
  CHECK(h.finish() == m);

  const Bytes ikm(22, 0x0b);
  const Bytes salt = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const Bytes info = {0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9};
  Bytes okm(42);
  hkdf_sha256(ikm, salt, info, okm);
  const Bytes okm_want = {0x3c, 0xb2, 0x5f, 0x25, 0xfa, 0xac, 0xd5, 0x7a, 0x90, 0x43, 0x4f, 0x64, 0xd0, 0x36,
                          0x2f, 0x2a, 0x2d, 0x2d, 0x0a, 0x90, 0xcf, 0x1a, 0x5a, 0x4c, 0x5d, 0xb0, 0x2d, 0x56,
                          0xec, 0xc4, 0xc5, 0xbf, 0x34, 0x00, 0x72, 0x08, 0xd5, 0xb8, 0x87, 0x18, 0x58, 0x65};
  CHECK(okm == okm_want);
  CHECK(equal_ct(Bytes{1, 2}, Bytes{1, 2}));
  CHECK_FALSE(equal_ct(Bytes{1, 2}, Bytes{1, 3}));
  CHECK_FALSE(equal_ct(Bytes{1, 2}, Bytes{1, 2, 3}));
}

TEST_CASE("auth: the right secret authenticates both sides and both derive the same keys") {
  Run r = run_exchange(kSecret, &kSecret);
  REQUIRE_MESSAGE(r.server.ok(), r.server.error().context);
  REQUIRE_MESSAGE(r.client.ok(), r.client.error().context);
  CHECK(same_keys(r.client.value(), r.server.value().keys));
  const SessionKeys& k = r.client.value();
  CHECK(k.client_to_server != k.server_to_client);
  CHECK(k.client_to_server != k.data);
  // Fresh nonces: a second session has other keys.
  Run again = run_exchange(kSecret, &kSecret);
  REQUIRE(again.client.ok());
  CHECK_FALSE(same_keys(again.client.value(), k));
}

TEST_CASE("auth: a client with the wrong secret is refused by the daemon") {
  const std::string other = "not the secret at all";
  Run r = run_exchange(other, &kSecret);
  REQUIRE_FALSE(r.server.ok());
  CHECK(r.server.error().code == EACCES);
  CHECK(r.server.error().context == "authentication failed for user alice on module data");
}

TEST_CASE("auth: an unknown user is refused the same way, after the same exchange") {
  Run r = run_exchange(kSecret, nullptr);
  REQUIRE_FALSE(r.server.ok());
  CHECK(r.server.error().code == EACCES);
  CHECK(r.server.error().context == "authentication failed for user alice on module data");
  // An empty secret on the daemon's side is "no secret", not an empty HMAC key that a hand-made
  // client (ours refuses empty secrets) could use.
  const std::string empty;
  wire::AuthRequest req;
  req.user = "alice";
  req.module = "data";
  req.client_nonce[3] = 7;
  auto s = ServerHandshake::start(req, &empty);
  REQUIRE(s.ok());
  wire::AuthResponse forged;
  forged.client_proof = compute_proof(Role::client, {}, req.client_nonce, s.value().challenge().server_nonce,
                                      "alice", "data");
  auto e = s.value().on_response(forged);
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().code == EACCES);
}

TEST_CASE("auth: an impostor daemon (wrong or no secret) is detected by the client") {
  auto c = ClientHandshake::start("alice", "data", sp(kSecret));
  REQUIRE(c.ok());
  // The impostor answers with its own nonce and a proof computed with a guessed secret.
  const std::string guess = "guessed secret value";
  auto imp = ServerHandshake::start(c.value().request(), &guess);
  REQUIRE(imp.ok());
  auto resp = c.value().on_challenge(imp.value().challenge());
  REQUIRE(resp.ok());
  wire::AuthProof forged;
  forged.server_proof = compute_proof(Role::server, sp(guess), c.value().request().client_nonce,
                                      imp.value().challenge().server_nonce, "alice", "data");
  auto k = c.value().on_proof(forged);
  REQUIRE_FALSE(k.ok());
  CHECK(k.error().code == EKEYREJECTED);
  CHECK(k.error().context.find("could not prove") != std::string::npos);
  // The handshake is dead after a failure: the right proof now is refused too.
  auto later = c.value().on_proof(forged);
  REQUIRE_FALSE(later.ok());
  CHECK(later.error().code == EPROTO);
}

TEST_CASE("auth: the impostor cannot reuse the client's proof or replay an old daemon proof") {
  // Record a genuine session.
  auto c1 = ClientHandshake::start("alice", "data", sp(kSecret));
  REQUIRE(c1.ok());
  auto s1 = ServerHandshake::start(c1.value().request(), &kSecret);
  REQUIRE(s1.ok());
  auto r1 = c1.value().on_challenge(s1.value().challenge());
  REQUIRE(r1.ok());
  auto a1 = s1.value().on_response(r1.value());
  REQUIRE(a1.ok());
  REQUIRE(c1.value().on_proof(a1.value().proof).ok());

  // A new client; the impostor replays the old challenge and the old daemon proof.
  auto c2 = ClientHandshake::start("alice", "data", sp(kSecret));
  REQUIRE(c2.ok());
  auto r2 = c2.value().on_challenge(s1.value().challenge());
  REQUIRE(r2.ok());
  auto k2 = c2.value().on_proof(a1.value().proof);
  REQUIRE_FALSE(k2.ok());
  CHECK(k2.error().code == EKEYREJECTED);

  // The client's own proof echoed back as the daemon's (reflection) fails: different role label.
  auto c3 = ClientHandshake::start("alice", "data", sp(kSecret));
  REQUIRE(c3.ok());
  auto s3 = ServerHandshake::start(c3.value().request(), &kSecret);
  REQUIRE(s3.ok());
  auto r3 = c3.value().on_challenge(s3.value().challenge());
  REQUIRE(r3.ok());
  wire::AuthProof echo;
  echo.server_proof = r3.value().client_proof;
  CHECK_FALSE(c3.value().on_proof(echo).ok());

  // A replayed client response does not authenticate a new daemon session either.
  auto s4 = ServerHandshake::start(c1.value().request(), &kSecret);
  REQUIRE(s4.ok());
  auto a4 = s4.value().on_response(r1.value());
  REQUIRE_FALSE(a4.ok());
  CHECK(a4.error().code == EACCES);
}

TEST_CASE("auth: a man in the middle changing the user, module or a nonce is caught") {
  for (int what = 0; what < 4; ++what) {
    CAPTURE(what);
    auto c = ClientHandshake::start("alice", "data", sp(kSecret));
    REQUIRE(c.ok());
    wire::AuthRequest req = c.value().request();
    if (what == 0) req.module = "other";   // steer the client to another module
    if (what == 1) req.user = "bob";       // bob has the same secret on the daemon
    if (what == 2) req.client_nonce[0] ^= 1;
    auto s = ServerHandshake::start(req, &kSecret);
    REQUIRE(s.ok());
    wire::AuthChallenge ch = s.value().challenge();
    if (what == 3) ch.server_nonce[5] ^= 0x80;
    auto resp = c.value().on_challenge(ch);
    REQUIRE(resp.ok());
    auto acc = s.value().on_response(resp.value());
    REQUIRE_FALSE(acc.ok());  // the daemon sees a proof over other values
    CHECK(acc.error().code == EACCES);
    // And if the middle man lets the daemon's (honest) proof through for its altered values,
    // the client refuses it too.
    wire::AuthProof p;
    p.server_proof = compute_proof(Role::server, sp(kSecret), req.client_nonce, s.value().challenge().server_nonce,
                                   req.user, req.module);
    auto k = c.value().on_proof(p);
    REQUIRE_FALSE(k.ok());
    CHECK(k.error().code == EKEYREJECTED);
  }
}

TEST_CASE("auth: proofs separate roles and length-prefix the names") {
  const wire::Nonce cn{1}, sn{2};
  const Proof a = compute_proof(Role::client, sp(kSecret), cn, sn, "ab", "c");
  CHECK(a != compute_proof(Role::client, sp(kSecret), cn, sn, "a", "bc"));
  CHECK(a != compute_proof(Role::server, sp(kSecret), cn, sn, "ab", "c"));
  CHECK(a != compute_proof(Role::client, sp(kSecret), sn, cn, "ab", "c"));
  CHECK(a == compute_proof(Role::client, sp(kSecret), cn, sn, "ab", "c"));
  auto k1 = derive_session_keys(sp(kSecret), cn, sn, "ab", "c");
  auto k2 = derive_session_keys(sp(kSecret), cn, sn, "a", "bc");
  REQUIRE(k1.ok());
  REQUIRE(k2.ok());
  CHECK_FALSE(same_keys(k1.value(), k2.value()));
  CHECK_FALSE(derive_session_keys({}, cn, sn, "a", "b").ok());
}

TEST_CASE("auth: all-zero and reflected nonces are refused") {
  wire::AuthRequest req;
  req.user = "alice";
  req.module = "data";
  auto s = ServerHandshake::start(req, &kSecret);  // client nonce all zero
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().code == EPROTO);
  CHECK(s.error().context.find("all zero") != std::string::npos);

  auto c = ClientHandshake::start("alice", "data", sp(kSecret));
  REQUIRE(c.ok());
  CHECK(check_nonce(c.value().request().client_nonce, "client's").ok());
  wire::AuthChallenge zero;
  auto r = c.value().on_challenge(zero);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().context.find("all zero") != std::string::npos);

  auto c2 = ClientHandshake::start("alice", "data", sp(kSecret));
  REQUIRE(c2.ok());
  wire::AuthChallenge reflected;
  reflected.server_nonce = c2.value().request().client_nonce;
  auto r2 = c2.value().on_challenge(reflected);
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.error().context.find("reflected") != std::string::npos);

  auto n1 = fresh_nonce(), n2 = fresh_nonce();
  REQUIRE(n1.ok());
  REQUIRE(n2.ok());
  CHECK(n1.value() != n2.value());
}

TEST_CASE("auth: bad arguments and calls out of order") {
  CHECK_FALSE(ClientHandshake::start("alice", "data", {}).ok());
  CHECK_FALSE(ClientHandshake::start("al ice", "data", sp(kSecret)).ok());
  CHECK_FALSE(ClientHandshake::start("alice", "a/b", sp(kSecret)).ok());
  wire::AuthRequest req;
  req.client_nonce[0] = 1;
  req.user = "alice";
  req.module = "../etc";
  CHECK_FALSE(ServerHandshake::start(req, &kSecret).ok());
  req.module = "data";
  req.user = "bad\nuser";
  CHECK_FALSE(ServerHandshake::start(req, &kSecret).ok());

  auto c = ClientHandshake::start("alice", "data", sp(kSecret));
  REQUIRE(c.ok());
  auto early = c.value().on_proof(wire::AuthProof{});  // proof before challenge
  REQUIRE_FALSE(early.ok());
  CHECK(early.error().code == EPROTO);
  auto c2 = ClientHandshake::start("alice", "data", sp(kSecret));
  REQUIRE(c2.ok());
  wire::AuthChallenge ch;
  ch.server_nonce[0] = 9;
  REQUIRE(c2.value().on_challenge(ch).ok());
  CHECK_FALSE(c2.value().on_challenge(ch).ok());  // a second challenge

  req.user = "alice";
  auto s = ServerHandshake::start(req, &kSecret);
  REQUIRE(s.ok());
  CHECK_FALSE(s.value().on_response(wire::AuthResponse{}).ok());
  auto twice = s.value().on_response(wire::AuthResponse{});  // no second guess on one challenge
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().code == EPROTO);
}

TEST_CASE("MessageMac: messages in order pass both ways") {
  auto [ck, sk] = keys_pair();
  MessageMac client(Role::client, ck), server(Role::server, sk);
  for (int i = 0; i < 5; ++i) {
    const Bytes m = bytes("client message " + std::to_string(i));
    const Tag t = client.seal(m);
    REQUIRE(server.open(m, t).ok());
    const Bytes r = bytes("server reply " + std::to_string(i));
    REQUIRE(client.open(r, server.seal(r)).ok());
  }
  CHECK(client.sent() == 5);
  CHECK(server.received() == 5);
  const Tag empty = client.seal({});
  CHECK(server.open({}, empty).ok());
}

TEST_CASE("MessageMac: an altered byte, a wrong or short tag is detected, and the channel stays failed") {
  auto [ck, sk] = keys_pair();
  for (size_t pos : {size_t{0}, size_t{7}, size_t{15}}) {
    MessageMac client(Role::client, ck), server(Role::server, sk);
    Bytes m = bytes("FILE_BEGIN name.t");
    const Tag t = client.seal(m);
    m[pos] ^= 1;
    auto st = server.open(m, t);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == EBADMSG);
  }
  {
    MessageMac client(Role::client, ck), server(Role::server, sk);
    const Bytes m = bytes("CHUNK_READY");
    Tag t = client.seal(m);
    t[31] ^= 1;
    CHECK_FALSE(server.open(m, t).ok());
    CHECK(server.failed());
    // The genuine tag after a failure is refused too: one guess per session.
    t[31] ^= 1;
    auto st = server.open(m, t);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().context.find("earlier") != std::string::npos);
  }
  {
    MessageMac client(Role::client, ck), server(Role::server, sk);
    const Bytes m = bytes("CHUNK_READY");
    const Tag t = client.seal(m);
    CHECK_FALSE(server.open(m, std::span<const uint8_t>(t).first(16)).ok());  // truncated tag
  }
  {
    MessageMac client(Role::client, ck), server(Role::server, sk);
    const Bytes m = bytes("msg");
    const Tag t = client.seal(m);
    Bytes longer = m;
    longer.push_back(0);  // appended byte
    CHECK_FALSE(server.open(longer, t).ok());
  }
}

TEST_CASE("MessageMac: replayed, reordered, dropped and reflected messages are detected") {
  auto [ck, sk] = keys_pair();
  const Bytes a = bytes("first"), b = bytes("second");
  {
    MessageMac client(Role::client, ck), server(Role::server, sk);
    const Tag ta = client.seal(a);
    REQUIRE(server.open(a, ta).ok());
    CHECK_FALSE(server.open(a, ta).ok());  // replay
  }
  {
    MessageMac client(Role::client, ck), server(Role::server, sk);
    const Tag ta = client.seal(a);
    const Tag tb = client.seal(b);
    CHECK_FALSE(server.open(b, tb).ok());  // reordered (or a dropped)
    (void)ta;
  }
  {
    MessageMac client(Role::client, ck), server(Role::server, sk);
    const Tag ta = client.seal(a);
    CHECK_FALSE(client.open(a, ta).ok());  // reflected back to its sender
  }
  {
    // A message from another session (other keys) with the right sequence number.
    auto [ck2, sk2] = keys_pair();
    MessageMac other(Role::client, ck2), server(Role::server, sk);
    CHECK_FALSE(server.open(a, other.seal(a)).ok());
  }
}

TEST_CASE("ChunkMac: keyed, bound to the position, streaming equals one-shot") {
  auto [ck, sk] = keys_pair();
  Bytes data(100000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31);
  const wire::Digest d = chunk_mac(ck.data, 3, 1 << 20, data);
  CHECK(d.len == 32);
  CHECK(digest_equal(d, chunk_mac(sk.data, 3, 1 << 20, data)));  // both sides agree

  ChunkMac s(ck.data);
  s.begin(3, 1 << 20, static_cast<uint32_t>(data.size()));
  s.update(std::span<const uint8_t>(data).first(1000));
  s.update(std::span<const uint8_t>(data).subspan(1000));
  CHECK(digest_equal(s.finish(), d));

  Bytes changed = data;
  changed[54321] ^= 4;
  CHECK_FALSE(digest_equal(chunk_mac(ck.data, 3, 1 << 20, changed), d));  // a byte changed
  CHECK_FALSE(digest_equal(chunk_mac(ck.data, 4, 1 << 20, data), d));     // another file
  CHECK_FALSE(digest_equal(chunk_mac(ck.data, 3, 2 << 20, data), d));     // another offset
  CHECK_FALSE(digest_equal(chunk_mac(ck.data, 3, 1 << 20, std::span<const uint8_t>(data).first(99999)), d));
  auto [ck2, sk2] = keys_pair();
  CHECK_FALSE(digest_equal(chunk_mac(ck2.data, 3, 1 << 20, data), d));  // another session's key

  wire::Digest shorter = d;
  shorter.len = 16;
  CHECK_FALSE(digest_equal(shorter, d));
  wire::Digest bogus = d;
  bogus.len = 200;
  CHECK_FALSE(digest_equal(bogus, bogus));
}

TEST_CASE("auth: the channel binding (TLS exporter) must be the same on both sides") {
  const std::vector<uint8_t> chan_a(32, 0xa1), chan_b(32, 0xb2);
  auto exchange = [&](const std::vector<uint8_t>& cb, const std::vector<uint8_t>& sb) {
    Run run;
    auto c = ClientHandshake::start("alice", "data", sp(kSecret), cb);
    REQUIRE(c.ok());
    auto s = ServerHandshake::start(c.value().request(), &kSecret, sb);
    REQUIRE(s.ok());
    auto resp = c.value().on_challenge(s.value().challenge());
    REQUIRE(resp.ok());
    run.server = s.value().on_response(resp.value());
    if (run.server.ok()) run.client = c.value().on_proof(run.server.value().proof);
    return run;
  };
  // One channel end to end: both sides bound to it, keys agree and differ from an unbound session's.
  Run same = exchange(chan_a, chan_a);
  REQUIRE(same.server.ok());
  REQUIRE(same.client.ok());
  CHECK(same_keys(same.client.value(), same.server.value().keys));
  auto [plain_c, plain_s] = keys_pair();
  CHECK_FALSE(same_keys(same.client.value(), plain_c));
  // A man in the middle terminating TLS towards each side: two channels, two exporters.
  Run mitm = exchange(chan_a, chan_b);
  CHECK_FALSE(mitm.server.ok());
  CHECK_FALSE(mitm.client.ok());
  // Encrypted on one side only (a relay that strips TLS towards the daemon): refused too.
  CHECK_FALSE(exchange(chan_a, {}).server.ok());
  CHECK_FALSE(exchange({}, chan_b).server.ok());
  // The binding is part of the proof, and length-prefixed.
  const Nonce cn{1}, sn{2};
  CHECK(compute_proof(Role::client, sp(kSecret), cn, sn, "a", "b", chan_a) !=
        compute_proof(Role::client, sp(kSecret), cn, sn, "a", "b", chan_b));
  CHECK(compute_proof(Role::client, sp(kSecret), cn, sn, "a", "b", chan_a) !=
        compute_proof(Role::client, sp(kSecret), cn, sn, "a", "b"));
}
