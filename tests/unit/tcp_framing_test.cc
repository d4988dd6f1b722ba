// transport/tcp framing against a lying peer: the TCP transport plays the
// RNIC's part, so a READ_REQ is served only from memory registered for
// remote reading (the rkey check), and a frame that breaks the framing
// rules ends the connection with a message naming what was wrong. The
// peer here is a raw socket writing hand-made frames.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "transport/tcp/connection.h"
#include "transport/tcp/framing.h"
#include "tcp_pair.h"
#include "util/fd.h"
#include "wire/codec.h"
#include "wire/messages.h"

using namespace rcp;
using rcp::test::tcp_pair;
using namespace rcp::tcp;

namespace {

std::vector<uint8_t> frame(uint8_t kind, uint32_t len, uint64_t cookie, std::span<const uint8_t> payload = {}) {
  std::vector<uint8_t> f;
  put_frame_header(f, kind, len, cookie);
  f.insert(f.end(), payload.begin(), payload.end());
  return f;
}

std::vector<uint8_t> read_req(uint64_t cookie, uint64_t addr, uint32_t key, uint32_t len) {
  std::vector<uint8_t> p;
  wire::Writer w(p);
  w.u64(addr);
  w.u32(key);
  w.u32(len);
  return frame(kReadReq, kReadReqPayload, cookie, p);
}

/// The transport under test (this side) and the hostile peer's raw sockets.
struct Rig {
  Fd peer, peer2;  // the hostile side of stream 0 (and of stream 1, if added)
  std::unique_ptr<TcpTransport> t;
  std::vector<TransportEvent> events;

  explicit Rig(bool two_streams = false) {
    Fd mine;
    REQUIRE(tcp_pair(peer, mine));
    Negotiated n;
    n.reads_in_flight = 8;
    n.max_chunk = wire::kMaxChunk;
    t = std::make_unique<TcpTransport>("the hostile peer", n, false);
    REQUIRE(t->init(std::move(mine)).ok());
    if (two_streams) {
      Fd mine2;
      REQUIRE(tcp_pair(peer2, mine2));
      t->add_stream(std::move(mine2));
    }
  }
  void write(int fd, std::span<const uint8_t> b) {
    size_t off = 0;
    while (off < b.size()) {
      ssize_t n = ::send(fd, b.data() + off, b.size() - off, MSG_NOSIGNAL);
      REQUIRE(n > 0);
      off += static_cast<size_t>(n);
    }
  }
  /// Polls the transport until `done` holds (or 5 s pass).
  bool until(const std::function<bool()>& done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < end) {
      REQUIRE(t->poll(events).ok());
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return false;
  }
  /// Exactly n bytes the transport sends to the peer, polling it meanwhile.
  std::vector<uint8_t> take(size_t n) {
    std::vector<uint8_t> got;
    got.reserve(n);
    bool ok = until([&] {
      uint8_t buf[65536];
      for (;;) {
        const size_t want = std::min(sizeof buf, n - got.size());
        if (want == 0) return true;
        ssize_t r = ::recv(peer.get(), buf, want, MSG_DONTWAIT);
        if (r <= 0) return false;
        got.insert(got.end(), buf, buf + r);
      }
    });
    REQUIRE(ok);
    return got;
  }
  const TransportEvent* closed() const {
    for (const auto& e : events)
      if (e.kind == TransportEvent::Kind::closed) return &e;
    return nullptr;
  }
};

}  // namespace

TEST_CASE("tcp: a READ_REQ is served only inside memory registered for remote reading") {
  Rig rig;
  // One byte past a chunk's limit, so the length bound is tested apart from the region's.
  std::vector<uint8_t> pool(wire::kMaxChunk + 4096);
  for (size_t i = 0; i < pool.size(); i += 997) pool[i] = static_cast<uint8_t>(i >> 3);
  for (size_t i = 0; i < 2 << 20; ++i) pool[i] = static_cast<uint8_t>(i * 131 + 7);
  std::vector<uint8_t> local(4096, 0x5a);
  auto key = rig.t->register_memory(pool.data(), pool.size(), true);
  auto key_local = rig.t->register_memory(local.data(), local.size(), false);
  REQUIRE(key.ok());
  REQUIRE(key_local.ok());
  const uint64_t base = reinterpret_cast<uint64_t>(pool.data());
  const uint64_t end = base + pool.size();
  struct Case {
    const char* what;
    uint64_t addr;
    uint32_t key;
    uint32_t len;
    bool served;
  };
  const Case cases[] = {
      {"inside", base + 100, *key, 50, true},
      {"1 MiB from the start", base, *key, 1 << 20, true},
      {"ending exactly at the region's end", end - 10, *key, 10, true},
      {"key 0", base, 0, 10, false},
      {"a key never given", base, 99, 10, false},
      {"memory registered for local use only", reinterpret_cast<uint64_t>(local.data()), *key_local, 10, false},
      {"one byte before the region", base - 1, *key, 10, false},
      {"one byte past its end", end - 10, *key, 11, false},
      {"starting at its end", end, *key, 1, false},
      {"length 0", base, *key, 0, false},
      {"one byte longer than a chunk may be", base, *key, wire::kMaxChunk + 1, false},
      {"an address whose range wraps around", UINT64_MAX - 4, *key, 10, false},
  };
  uint64_t cookie = 1000;
  for (const Case& c : cases) {
    CAPTURE(c.what);
    ++cookie;
    rig.write(rig.peer.get(), read_req(cookie, c.addr, c.key, c.len));
    const auto head = rig.take(kFrameHeader);
    const FrameHeader h = get_frame_header(head);
    CHECK(h.cookie == cookie);
    if (c.served) {
      REQUIRE(h.kind == kReadResp);
      REQUIRE(h.len == c.len);
      const auto data = rig.take(c.len);
      CHECK(std::memcmp(data.data(), reinterpret_cast<const void*>(c.addr), c.len) == 0);
    } else {
      CHECK(h.kind == kReadErr);
      CHECK(h.len == 0);
    }
    CHECK(rig.closed() == nullptr);  // a refused read is answered, not a reason to hang up
  }
}

TEST_CASE("tcp: a read's reply lands in its scatter list; a refusal fails only that read") {
  Rig rig;
  std::vector<uint8_t> sink(64, 0);
  auto key = rig.t->register_memory(sink.data(), sink.size(), false);
  REQUIRE(key.ok());
  ReadWr wr;
  wr.remote_addr = 0x1000;
  wr.length = 24;
  wr.sges = {{reinterpret_cast<uint64_t>(sink.data()), 10}, {reinterpret_cast<uint64_t>(sink.data() + 32), 14}};
  REQUIRE(rig.t->read(7, 5, {&wr, 1}).ok());
  const FrameHeader req = get_frame_header(rig.take(kFrameHeader));
  CHECK(req.kind == kReadReq);
  CHECK(req.cookie == 7);
  rig.take(kReadReqPayload);
  std::vector<uint8_t> data(24);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i + 1);
  rig.write(rig.peer.get(), frame(kReadResp, 24, 7, data));
  auto done = [&](uint64_t c) {
    for (const auto& e : rig.events)
      if (e.kind == TransportEvent::Kind::read_done && e.cookie == c) return &e;
    return static_cast<const TransportEvent*>(nullptr);
  };
  REQUIRE(rig.until([&] { return done(7) != nullptr; }));
  CHECK(done(7)->status == 0);
  CHECK(std::memcmp(sink.data(), data.data(), 10) == 0);
  CHECK(std::memcmp(sink.data() + 32, data.data() + 10, 14) == 0);
  CHECK(sink[10] == 0);  // nothing between the two SGEs
  // The peer refuses the next one: that read fails, the connection stays.
  REQUIRE(rig.t->read(8, 5, {&wr, 1}).ok());
  rig.take(kFrameHeader + kReadReqPayload);
  rig.write(rig.peer.get(), frame(kReadErr, 0, 8));
  REQUIRE(rig.until([&] { return done(8) != nullptr; }));
  CHECK(done(8)->status == EACCES);
  CHECK(rig.closed() == nullptr);
  // And a control message still arrives whole.
  std::vector<uint8_t> msg(wire::kHeaderSize + 3, 0x42);
  rig.write(rig.peer.get(), frame(kMsg, static_cast<uint32_t>(msg.size()), 0, msg));
  REQUIRE(rig.until([&] {
    for (const auto& e : rig.events)
      if (e.kind == TransportEvent::Kind::message) return e.message == msg;
    return false;
  }));
}

TEST_CASE("tcp: a frame that breaks the rules ends the connection, naming what was wrong") {
  struct Case {
    const char* what;
    bool second_stream;  // the frame comes on stream 1
    bool pending_read;   // this side has read cookie 7 (24 bytes) outstanding, on stream 0
    std::vector<uint8_t> bytes;
    const char* says;
  };
  std::vector<uint8_t> small(wire::kHeaderSize - 1, 1), big(wire::kMaxLargeMessage + 1, 1), ok_msg(wire::kHeaderSize, 1);
  std::vector<uint8_t> reply25(25, 3), reply24(24, 3);
  const Case cases[] = {
      {"a control frame shorter than a message header", false, false,
       frame(kMsg, static_cast<uint32_t>(small.size()), 0, small), "sent a control frame of 11 bytes"},
      {"a control frame longer than a message may be", false, false, frame(kMsg, static_cast<uint32_t>(big.size()), 0),
       "sent a control frame of 8321 bytes"},  // (kMaxLargeMessage + 1: decode() holds each type to its own)
      {"a control frame on a data stream", true, false, frame(kMsg, static_cast<uint32_t>(ok_msg.size()), 0, ok_msg),
       "sent a control frame on a data stream"},
      {"a read request of the wrong size", false, false, frame(kReadReq, 15, 1, reply24),
       "sent a read request of 15 bytes"},
      {"a reply to a read never asked for", false, false, frame(kReadResp, 24, 99, reply24),
       "sent 24 bytes for a read that was not asked for"},
      {"a reply of another length than asked", false, true, frame(kReadResp, 25, 7, reply25),
       "sent 25 bytes for a read that was not asked for"},
      {"a reply on another stream than the request's", true, true, frame(kReadResp, 24, 7, reply24),
       "sent 24 bytes for a read that was not asked for"},
      {"a refusal of a read never asked for", false, false, frame(kReadErr, 0, 99), "refused a read that was not asked for"},
      {"a refusal on another stream than the request's", true, true, frame(kReadErr, 0, 7),
       "refused a read that was not asked for"},
      {"an unknown frame kind", false, false, frame(9, 0, 0), "sent an unknown frame kind 9"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    Rig rig(c.second_stream);
    std::vector<uint8_t> sink(64);
    auto key = rig.t->register_memory(sink.data(), sink.size(), false);
    REQUIRE(key.ok());
    if (c.pending_read) {
      ReadWr wr;
      wr.remote_addr = 0x1000;
      wr.length = 24;
      wr.sges = {{reinterpret_cast<uint64_t>(sink.data()), 24}};
      REQUIRE(rig.t->read(7, 5, {&wr, 1}).ok());  // the first read goes on stream 0
      rig.take(kFrameHeader + kReadReqPayload);
    }
    rig.write(c.second_stream ? rig.peer2.get() : rig.peer.get(), c.bytes);
    REQUIRE(rig.until([&] { return rig.closed() != nullptr; }));
    CHECK(rig.closed()->detail.find(c.says) != std::string::npos);
    CHECK(rig.closed()->detail.find("the hostile peer") != std::string::npos);
    if (c.pending_read) {  // the read outstanding fails with the connection
      bool failed = false;
      for (const auto& e : rig.events)
        failed = failed || (e.kind == TransportEvent::Kind::read_done && e.cookie == 7 && e.status != 0);
      CHECK(failed);
    }
    for (const auto& e : rig.events) CHECK(e.kind != TransportEvent::Kind::message);
  }
}

TEST_CASE("tcp: a read with nothing to read, or on a connection already ended, is refused at once") {
  Rig rig;
  std::vector<uint8_t> sink(64, 0);
  REQUIRE(rig.t->register_memory(sink.data(), sink.size(), false).ok());
  const Status empty = rig.t->read(1, 5, {});
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().code == EINVAL);
  // Ended by a frame that breaks the rules: the socket is still open, so
  // without the check a read request would go out and never be answered.
  rig.write(rig.peer.get(), frame(99, 0, 0, {}));
  REQUIRE(rig.until([&] { return rig.closed() != nullptr; }));
  ReadWr wr;
  wr.remote_addr = 0x1000;
  wr.length = 8;
  wr.sges = {{reinterpret_cast<uint64_t>(sink.data()), 8}};
  const Status late = rig.t->read(2, 5, {&wr, 1});
  REQUIRE_FALSE(late.ok());
  CHECK(late.error().code == ENOTCONN);
  CHECK(late.error().context == "read on a closed connection to the hostile peer");
}
