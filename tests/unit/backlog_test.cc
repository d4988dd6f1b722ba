// transport/backlog.h against a peer that stops reading: what a transport
// holds for it is bounded (kMaxUnsent), the send that would pass the bound is
// refused naming the peer, and an honest peer that reads gets every message
// however many there are. Real TCP over loopback; the RDMA control channel's
// queue without a device (its queue is plain memory until flushed).
#include <doctest/doctest.h>

#include <future>
#include <string>
#include <vector>

#include "tcp_pair.h"
#include "transport/backlog.h"
#include "transport/rdma/control_channel.h"
#include "transport/tcp/connection.h"
#include "transport/tcp/framing.h"
#include "transport/tcp/tls.h"
#include "util/fd.h"
#include "wire/messages.h"

using namespace rcp;

namespace {

struct Pair {
  std::unique_ptr<tcp::TcpTransport> client, daemon;
  /// encrypted: TLS 1.3 on the stream (in user space where the kernel has no kTLS).
  explicit Pair(bool encrypted = false) {
    Fd a, b;
    REQUIRE(test::tcp_pair(a, b));
    std::unique_ptr<tcp::TlsStream> ta, tb;
    if (encrypted) {
      auto sctx = tcp::TlsContext::server();
      auto cctx = tcp::TlsContext::client();
      REQUIRE(sctx.ok());
      REQUIRE(cctx.ok());
      auto server = std::async(std::launch::async, [&] {
        return tcp::TlsStream::handshake(**sctx, b.get(), tcp::Deadline::in(10000), "the client");
      });
      auto c = tcp::TlsStream::handshake(**cctx, a.get(), tcp::Deadline::in(10000), "the daemon");
      auto s = server.get();
      REQUIRE(c.ok());
      REQUIRE(s.ok());
      ta = std::move(c.value());
      tb = std::move(s.value());
    }
    Negotiated n;
    n.reads_in_flight = 8;
    n.max_chunk = wire::kMaxChunk;
    client = std::make_unique<tcp::TcpTransport>("the daemon", n, false);
    daemon = std::make_unique<tcp::TcpTransport>("the client", n, false);
    REQUIRE(client->init(std::move(a), std::move(ta)).ok());
    REQUIRE(daemon->init(std::move(b), std::move(tb)).ok());
  }
};

/// What a sink answers for each empty file a pushing client announces.
std::vector<uint8_t> file_result(uint32_t id) {
  std::vector<uint8_t> b;
  if (!wire::encode(wire::FileResult{id, 0, 0, 0, 0, "", 0}, b).ok()) FAIL("encode FILE_RESULT");
  return b;
}

size_t poll_messages(Transport& t) {
  std::vector<TransportEvent> ev;
  if (Status st = t.poll(ev); !st.ok()) FAIL(st.error().message());
  size_t n = 0;
  for (auto& e : ev) n += e.kind == TransportEvent::Kind::message;
  return n;
}

}  // namespace

TEST_CASE("tcp: answers to a peer that never reads end at kMaxUnsent, naming the peer") {
  Pair p;
  const size_t cost = unsent_cost(file_result(1).size() + tcp::kFrameHeader);
  // The bound, and what the kernel's socket buffers take first: never as
  // much again as the bound itself.
  const size_t most = 2 * kMaxUnsent / cost;
  size_t sent = 0;
  Status refused;
  for (uint32_t id = 1; sent < most; ++id) {
    Status st = p.daemon->send(file_result(id));
    if (!st.ok()) {
      refused = st;
      break;
    }
    ++sent;
    if (sent % 256 == 0) (void)poll_messages(*p.daemon);  // the kernel takes what fits
  }
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ENOBUFS);
  INFO(refused.error().message());
  CHECK(refused.error().message().find("the client does not read") != std::string::npos);
  CHECK(p.daemon->unsent_bytes() <= kMaxUnsent);
  CHECK(p.daemon->unsent_bytes() + cost > kMaxUnsent);  // refused at the bound, not before
  MESSAGE(sent, " answers queued before the refusal (", p.daemon->unsent_bytes() >> 20, " MiB held)");
}

namespace {
/// A peer that reads as it goes gets every one of 2 x kMaxUnsent worth of
/// messages, and nothing stays counted once all are sent.
void reader_gets_everything(bool encrypted) {
  Pair p(encrypted);
  CHECK(p.daemon->encrypted() == encrypted);
  const size_t total = 2 * kMaxUnsent / unsent_cost(file_result(1).size() + tcp::kFrameHeader);
  size_t got = 0;
  for (uint32_t id = 1; id <= total; ++id) {
    if (Status st = p.daemon->send(file_result(id)); !st.ok()) FAIL("message ", id, " of ", total, ": ", st.error().message());
    if (id % 256 == 0) {
      (void)poll_messages(*p.daemon);
      got += poll_messages(*p.client);
    }
  }
  for (int i = 0; i < 100000 && got < total; ++i) {
    (void)poll_messages(*p.daemon);
    got += poll_messages(*p.client);
  }
  CHECK(got == total);
  for (int i = 0; i < 1000 && p.daemon->unsent_bytes() != 0; ++i) (void)poll_messages(*p.daemon);
  CHECK(p.daemon->unsent_bytes() == 0);
}
}  // namespace

TEST_CASE("tcp: a peer that reads gets every message, past kMaxUnsent in all, and nothing stays held") {
  reader_gets_everything(false);
}

TEST_CASE("tcp + TLS: the same through the encrypted path (user-space TLS where the kernel has no kTLS)") {
  reader_gets_everything(true);
}

TEST_CASE("rdma control channel: a peer granting no credits leaves at most kMaxUnsent queued") {
  rdma::ControlChannel ch;  // never set up: nothing is posted, as when the peer returns no credits
  ch.set_peer(64, wire::kMaxMessage, "peer 10.0.0.2");
  const std::vector<uint8_t> msg(wire::kMaxMessage, 0x5a);
  size_t queued = 0;
  Status refused;
  for (; queued < 2 * kMaxUnsent / msg.size(); ++queued) {
    Status st = ch.queue(msg);
    if (!st.ok()) {
      refused = st;
      break;
    }
  }
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ENOBUFS);
  CHECK(refused.error().message().find("peer 10.0.0.2 does not read") != std::string::npos);
  CHECK(queued == kMaxUnsent / unsent_cost(msg.size()));
  CHECK(ch.unsent() == queued * unsent_cost(msg.size()));
  // Control moving to another rail takes the queue along and leaves nothing counted here.
  CHECK(ch.stop().size() == queued);
  CHECK(ch.unsent() == 0);
}
