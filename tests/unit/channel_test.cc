// session/channel and session/authenticate against a lying or silent peer: every
// control message must carry its MAC (auth/message_mac.h), and one without
// it, one whose length field leaves no room for it, or one altered after it
// was sealed is refused, naming what was wrong. Two real TCP transports over
// loopback; the peer bypasses its Channel (Transport::send) to send what a
// hostile one would.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "auth/handshake.h"
#include "session/authenticate.h"
#include "session/channel.h"
#include "session/loop.h"
#include "tcp_pair.h"
#include "transport/tcp/connection.h"
#include "util/fd.h"
#include "wire/auth_messages.h"
#include "wire/messages.h"
#include "scratch_dir.h"

using namespace rcp;

namespace {

struct MacPair {
  std::unique_ptr<tcp::TcpTransport> client_t, daemon_t;
  std::unique_ptr<Channel> client, daemon;
  auth::SessionKeys keys;

  MacPair() {
    Fd a, b;
    REQUIRE(test::tcp_pair(a, b));
    Negotiated n;
    n.reads_in_flight = 8;
    n.max_chunk = wire::kMaxChunk;
    client_t = std::make_unique<tcp::TcpTransport>("the daemon", n, false);
    daemon_t = std::make_unique<tcp::TcpTransport>("the client", n, false);
    REQUIRE(client_t->init(std::move(a)).ok());
    REQUIRE(daemon_t->init(std::move(b)).ok());
    client = std::make_unique<Channel>(*client_t);
    daemon = std::make_unique<Channel>(*daemon_t);
    keys.client_to_server.fill(0x11);
    keys.server_to_client.fill(0x22);
    keys.data.fill(0x33);
    client->enable_mac(auth::Role::client, keys);
    daemon->enable_mac(auth::Role::server, keys);
  }
  /// What the daemon's channel makes of the next message: the message, or the error.
  Result<wire::Message> next() {
    client->flush(5000);  // the transport writes what it queued as it is polled
    return daemon->receive(5000, nullptr);
  }
};

std::vector<uint8_t> encoded(const wire::Message& m) {
  std::vector<uint8_t> b;
  REQUIRE(wire::encode(m, b).ok());
  return b;
}

bool says(const Result<wire::Message>& r, const char* what) {
  return !r.ok() && r.error().code == EBADMSG && r.error().message().find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("channel: a sealed message passes, and each one after it too") {
  MacPair p;
  REQUIRE(p.client->send(wire::Done{1, 2, 3}).ok());
  REQUIRE(p.client->send(wire::Done{4, 5, 6}).ok());
  auto a = p.next();
  REQUIRE(a.ok());
  CHECK(std::get<wire::Done>(*a).files_ok == 1);
  auto b = p.next();
  REQUIRE(b.ok());
  CHECK(std::get<wire::Done>(*b).files_ok == 4);
}

TEST_CASE("channel: a message without its MAC on an authenticated session is refused") {
  MacPair p;
  const auto plain = encoded(wire::Done{1, 2, 3});
  REQUIRE(plain.size() < wire::kHeaderSize + 32);  // shorter than a header and a tag
  REQUIRE(p.client_t->send(plain).ok());
  auto r = p.next();
  CHECK_MESSAGE(says(r, "without its MAC"), (r.ok() ? "accepted" : r.error().message()));
}

TEST_CASE("channel: a length field leaving no room for the MAC is refused") {
  MacPair p;
  // 44 bytes or more arrive, but the wire header claims a body of 4: the
  // "tag" would cover part of the header.
  auto b = encoded(wire::Done{1, 2, 3});
  b.resize(wire::kHeaderSize + 40, 0);
  b[8] = b[9] = b[10] = 0;
  b[11] = 4;
  REQUIRE(p.client_t->send(b).ok());
  auto r = p.next();
  CHECK_MESSAGE(says(r, "without its MAC"), (r.ok() ? "accepted" : r.error().message()));
}

TEST_CASE("channel: a message altered after it was sealed, or replayed, is refused") {
  MacPair p;
  // Sealed as the client's channel would (length field counting the tag);
  // `flip`: then a bit of the body flipped in transit.
  auto sealed = [&](auth::MessageMac& mac, bool flip) {
    auto b = encoded(wire::Done{1, 2, 3});
    b[11] = static_cast<uint8_t>(b[11] + 32);
    const auth::Tag tag = mac.seal(b);
    if (flip) b.back() ^= 0x01;
    b.insert(b.end(), tag.begin(), tag.end());
    return b;
  };
  auth::MessageMac mac(auth::Role::client, p.keys);
  SUBCASE("one bit of the body") {
    REQUIRE(p.client_t->send(sealed(mac, true)).ok());
  }
  SUBCASE("the same sealed message twice") {
    const auto b = sealed(mac, false);
    REQUIRE(p.client_t->send(b).ok());
    REQUIRE(p.client_t->send(b).ok());
    CHECK(p.next().ok());
  }
  auto r = p.next();
  CHECK_MESSAGE(says(r, "failed its MAC check"), (r.ok() ? "accepted" : r.error().message()));
}

TEST_CASE("client_authenticate: a malformed AUTH_CHALLENGE from the daemon is refused, naming it") {
  MacPair p;  // (its MACs unused: authentication comes before them)
  Channel client(*p.client_t);
  Channel daemon(*p.daemon_t);
  std::vector<uint8_t> b;
  wire::AuthChallenge c;
  c.server_nonce.fill(9);
  REQUIRE(wire::encode_auth(c, b).ok());
  b.resize(b.size() - 4);  // the nonce cut short, the length field saying so
  b[11] = static_cast<uint8_t>(b[11] - 4);
  REQUIRE(p.daemon_t->send(b).ok());
  daemon.flush(5000);
  const std::string secret = "s3cret-for-this-test";
  auto r = client_authenticate(client, "alice", "vault",
                               {reinterpret_cast<const uint8_t*>(secret.data()), secret.size()}, 5000);
  REQUIRE_FALSE(r.ok());
  CHECK_MESSAGE(r.error().message().find("truncated or malformed AUTH_CHALLENGE") != std::string::npos,
                r.error().message());
}

TEST_CASE("client_secret: a password file must be a regular file of the owner's alone") {
  auto refused = [](const std::string& f, const char* why) {
    auto s = client_secret(f);
    REQUIRE_FALSE(s.ok());
    CHECK_MESSAGE(s.error().message().find(why) != std::string::npos, s.error().message());
  };
  refused("/dev/null", "not a regular file");
  const test::ScratchDir scratch;
  refused(scratch.dir, "not a regular file");
  const std::string f = scratch.at("pw");
  {
    Fd fd(::open(f.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    REQUIRE(::write(fd.get(), "pw\n", 3) == 3);
  }
  refused(f, "accessible by others");
  REQUIRE(::chmod(f.c_str(), 0600) == 0);
  auto ok = client_secret(f);
  REQUIRE(ok.ok());
  CHECK(*ok == "pw");
  REQUIRE(::truncate(f.c_str(), 0) == 0);
  refused(f, "is empty");  // not taken as "no password": that would skip authentication
}

TEST_CASE("channel: a peer that hangs up before answering is named as such") {
  MacPair p;
  p.daemon.reset();
  p.daemon_t.reset();  // its socket closes
  auto r = p.client->receive(5000, nullptr);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ECONNRESET);
  CHECK_MESSAGE(r.error().message().find("peer the daemon closed the connection") != std::string::npos,
                r.error().message());
}

TEST_CASE("channel: waiting for a silent peer ends at the timeout, or at once when cancelled") {
  MacPair p;
  auto r = p.client->receive(300, nullptr);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ETIMEDOUT);
  CHECK(r.error().message().find("no answer from the daemon") != std::string::npos);
  std::atomic<bool> cancel{true};  // Ctrl-C while waiting for the daemon
  auto c = p.client->receive(60000, &cancel);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().code == EINTR);
}

TEST_CASE("channel: a malformed answer is refused, naming the peer and what was wrong") {
  MacPair p;
  Channel client(*p.client_t);  // before authentication: no MACs
  Channel daemon(*p.daemon_t);
  auto b = encoded(wire::Done{1, 2, 3});
  b[6] = 0x03, b[7] = 0xE7;  // type 999
  REQUIRE(p.daemon_t->send(b).ok());
  daemon.flush(5000);
  auto r = client.receive(5000, nullptr);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EPROTO);
  CHECK_MESSAGE(r.error().message().find("from the daemon: unknown message type 999") != std::string::npos,
                r.error().message());
}

TEST_CASE("channel: a message too long to carry its MAC is not sent") {
  MacPair p;
  wire::Open o{wire::Op::get, wire::Checksum::xxh128, 0, "m/a", {}, {}};
  // paths up to a few bytes under the message limit: the encode takes it, the tag does not fit
  while (wire::open_size(o) + 300 < wire::kMaxMessage) o.more.push_back(std::string(200, 'p'));
  while (wire::open_size(o) + 8 < wire::kMaxMessage) o.more.push_back("p");
  std::vector<uint8_t> plain;
  REQUIRE(wire::encode(o, plain).ok());
  auto st = p.client->send(o);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == EMSGSIZE);
  CHECK_MESSAGE(st.error().message().find("OPEN too long to seal") != std::string::npos, st.error().message());
}

TEST_CASE("channel: start_sending puts a queued message on the wire; what arrives meanwhile waits for poll, opened once") {
  MacPair p;
  // The client's message is already on its way when the daemon hands out its
  // own: the daemon's transport reaps it during start_sending.
  REQUIRE(p.client->send(wire::Done{7, 0, 0}).ok());
  p.client->flush(5000);
  REQUIRE(p.daemon->send(wire::Done{1, 2, 3}).ok());  // an OPEN_OK, say, before the pool is mapped
  REQUIRE(p.daemon->start_sending().ok());
  // Out without another poll of the daemon's side (the session loop's first
  // poll comes after the pool is populated).
  auto r = p.client->receive(5000, nullptr);
  REQUIRE_MESSAGE(r.ok(), r.error().message());
  CHECK(std::get<wire::Done>(*r).files_ok == 1);
  // Kept for the loop, its MAC checked exactly once (a second check would
  // fail: the tag is stripped by the first).
  std::vector<TransportEvent> ev;
  for (int i = 0; i < 100 && ev.empty(); ++i) {
    REQUIRE(p.daemon->poll(ev).ok());
    if (ev.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(ev.size() == 1);
  REQUIRE(ev[0].kind == TransportEvent::Kind::message);
  auto m = message_of(*p.daemon_t, ev[0]);
  REQUIRE_MESSAGE(m.ok(), m.error().message());
  CHECK(std::get<wire::Done>(*m).files_ok == 7);
}
