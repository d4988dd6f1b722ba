// The hello of a TCP connection, both sides, and tcp_connect (handshake.h).
#include "transport/tcp/handshake.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fmt/core.h>

#include "hash/digest.h"
#include "transport/tcp/tls.h"
#include "util/log.h"
#include "wire/codec.h"

namespace rcp::tcp {
namespace {

using wire::kHelloJoin;
using wire::kHelloTls;
using wire::kHelloToken;

/// Blocking exact read/write for the hello only, bounded by one deadline for
/// the whole exchange — not per byte, so a peer sending one byte every few
/// seconds is cut when the deadline passes, however many bytes it sent.
/// (wait_io, tls.h: the deadline, the eviction flag, the poll.)
Status io_exact(int fd, uint8_t* p, size_t n, bool writing, const Deadline& dl, const std::string& peer) {
  size_t done = 0;
  while (done < n) {
    RCP_TRY(wait_io(fd, writing, dl, peer));
    ssize_t r = writing ? ::send(fd, p + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT)
                        : ::recv(fd, p + done, n - done, MSG_DONTWAIT);
    if (r == 0) return make_error(ECONNRESET, "peer " + peer + " closed the connection during the hello");
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return sys_error("hello with " + peer);
    }
    done += static_cast<size_t>(r);
  }
  return {};
}

/// Our hello; `connections` is the streams this client will open (the
/// daemon admits no more joins than that).
wire::Hello local_hello(const TcpOptions& opt, uint32_t flags, uint32_t connections) {
  wire::Hello h;
  h.ctrl_depth = 64;  // unused on TCP (the stream has its own flow control), but must be valid
  h.rd_init = static_cast<uint16_t>(opt.reads_in_flight);
  h.rd_resp = static_cast<uint16_t>(opt.reads_in_flight);
  h.max_sge_rd = 64;
  h.checksums = supported_checksums();
  h.max_chunk = opt.max_chunk;
  h.qps = static_cast<uint16_t>(std::clamp<uint32_t>(connections, 1, kMaxJoinedConnections));
  h.flags = flags;
  return h;
}

Negotiated negotiate(const TcpOptions& opt, const wire::Hello& peer) {
  Negotiated n;
  n.reads_in_flight = std::max<uint32_t>(1, std::min<uint32_t>(opt.reads_in_flight, peer.rd_resp));
  n.max_sge = 64;
  n.max_chunk = peer.max_chunk;
  n.checksums = static_cast<uint16_t>(peer.checksums & supported_checksums());
  return n;
}

/// A token or an acknowledgement: inside TLS when the stream has it.
Status send_u64(int fd, TlsStream* tls, uint64_t v, const Deadline& dl, const std::string& peer) {
  std::vector<uint8_t> b;
  wire::Writer(b).u64(v);
  if (tls) return tls->write_exact(b, dl);
  return io_exact(fd, b.data(), b.size(), true, dl, peer);
}

Result<uint64_t> recv_u64(int fd, TlsStream* tls, const Deadline& dl, const std::string& peer) {
  uint8_t b[8];
  if (tls) {
    RCP_TRY(tls->read_exact(b, dl));
  } else {
    RCP_TRY(io_exact(fd, b, 8, false, dl, peer));
  }
  wire::Reader r({b, 8});
  return r.u64();
}

/// Sends our hello, reads and checks the peer's; with --encrypt, refuses a
/// daemon that does not offer TLS.
Result<wire::Hello> exchange_hello(int fd, const std::string& peer, const TcpOptions& opt, uint32_t flags,
                                   uint32_t streams, const Deadline& dl) {
  if (opt.encrypt) flags |= kHelloTls;
  auto mine = wire::encode_hello(local_hello(opt, flags, streams));
  RCP_TRY(io_exact(fd, mine.data(), mine.size(), true, dl, peer));
  std::vector<uint8_t> theirs(wire::kHelloSize);
  RCP_TRY(io_exact(fd, theirs.data(), theirs.size(), false, dl, peer));
  auto h = wire::decode_hello(theirs);
  if (!h.ok()) return make_error(h.error().code, "hello from " + peer + ": " + h.error().context);
  if (opt.encrypt && !(h->flags & kHelloTls))
    return make_error(ENOPROTOOPT, "--encrypt: the daemon at " + peer + " does not offer encryption");
  return h;
}

/// The daemon's half of a join: the session must be encrypted exactly when
/// this stream is, and the acknowledgement goes out under the registry's
/// lock, before the session can pick the stream up (nothing else may write
/// to it, or use its TLS session, meanwhile).
Status join_session(StreamJoins& joins, uint64_t want, JoinedStream& js, const Deadline& dl, const std::string& peer) {
  return joins.join(want, js, [&](bool& encrypted, JoinedStream& c, JoinSeat) -> Status {
    if (encrypted && !c.tls) return make_error(EPERM, "its session is encrypted and this stream did not start TLS");
    if (!encrypted && c.tls) return make_error(EPERM, "its session is not encrypted and this stream started TLS");
    return send_u64(c.sock.get(), c.tls.get(), want, dl, peer);
  });
}

}  // namespace

Result<Fd> dial(const std::string& host, uint16_t port, std::string& peer, const std::string& bind) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = AF_UNSPEC;
  addrinfo* res = nullptr;
  std::string ps = std::to_string(port);
  int gai = ::getaddrinfo(host.c_str(), ps.c_str(), &hints, &res);
  // Code 0: the resolver's own words are the reason; an errno would add a wrong one.
  if (gai != 0) return make_error(0, fmt::format("cannot resolve host '{}': {}", host, gai_strerror(gai)));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  Error last = make_error(EHOSTUNREACH, "connect to " + host);
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    Fd s(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
    if (!s.valid()) {
      last = sys_error("socket");
      continue;
    }
    peer = sockaddr_string(ai->ai_addr);
    if (!bind.empty()) {
      // The local address in the peer's family (port 0: the kernel picks).
      addrinfo bh{};
      bh.ai_socktype = SOCK_STREAM;
      bh.ai_family = ai->ai_family;
      bh.ai_flags = AI_PASSIVE;
      addrinfo* br = nullptr;
      if (int g = ::getaddrinfo(bind.c_str(), "0", &bh, &br); g != 0) {
        last = make_error(0, fmt::format("--bind {}: no {} address to connect to {} from ({})", bind,
                                         ai->ai_family == AF_INET6 ? "IPv6" : "IPv4", peer, gai_strerror(g)));
        continue;
      }
      std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> bguard(br, freeaddrinfo);
      if (::bind(s.get(), br->ai_addr, br->ai_addrlen) != 0) {
        last = sys_error(fmt::format("--bind {}: cannot connect from {}", bind, sockaddr_string(br->ai_addr)));
        continue;
      }
    }
    if (::connect(s.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      last = sys_error("tcp connect to " + peer);
      continue;
    }
    return s;
  }
  return last;
}

Result<std::unique_ptr<Transport>> accept_hello(Fd sock, const std::string& peer, const TcpOptions& opt,
                                                std::shared_ptr<StreamJoins> joins, const std::atomic<bool>* cancel) {
  // One deadline for everything the peer must send and acknowledge.
  const Deadline dl = Deadline::in(opt.timeout_ms, cancel);
  // Our hello goes first (it only offers a token); the client's says
  // whether it starts a session or joins one.
  std::vector<uint8_t> theirs(wire::kHelloSize);
  auto mine = wire::encode_hello(local_hello(opt, kHelloToken | (opt.tls ? kHelloTls : 0), 1));
  RCP_TRY(io_exact(sock.get(), mine.data(), mine.size(), true, dl, peer));
  RCP_TRY(io_exact(sock.get(), theirs.data(), theirs.size(), false, dl, peer));
  auto h = wire::decode_hello(theirs);
  if (!h.ok()) return make_error(h.error().code, "hello from " + peer + ": " + h.error().context);
  // TLS, when the client asks for it, within the same deadline.
  std::unique_ptr<TlsStream> tls;
  if (h->flags & kHelloTls) {
    if (!opt.tls) return make_error(ENOPROTOOPT, "hello from " + peer + " asks for TLS, which this daemon does not offer");
    RCP_ASSIGN(tls, TlsStream::handshake(*opt.tls, sock.get(), dl, peer));
  }
  if (h->flags & kHelloJoin) {
    RCP_ASSIGN(uint64_t want, recv_u64(sock.get(), tls.get(), dl, peer));
    JoinedStream js;
    js.sock.reset(::dup(sock.get()));  // the session owns this one from the join on
    if (!js.sock.valid()) return sys_error("dup (stream join)");
    js.tls = std::move(tls);
    if (Status st = join_session(*joins, want, js, dl, peer); !st.ok()) {
      (void)send_u64(sock.get(), js.tls.get(), 0, dl, peer);  // "refused", so the client can say so
      return make_error(st.error().code, "stream join refused: " + st.error().context);
    }
    return std::unique_ptr<Transport>();
  }
  // Open for joins before the client learns the token, so its joins always
  // find the session; the transport's destructor closes it.
  RCP_ASSIGN(uint64_t token, wire::new_session_token());
  if (!joins->open(token, h->qps, tls != nullptr)) return make_error(EEXIST, "session token collision");
  auto t = std::make_unique<TcpTransport>(peer, negotiate(opt, h.value()), opt.zerocopy, token, std::move(joins));
  RCP_TRY(send_u64(sock.get(), tls.get(), token, dl, peer));
  RCP_TRY(t->init(std::move(sock), std::move(tls)));
  return std::unique_ptr<Transport>(std::move(t));
}

}  // namespace rcp::tcp

namespace rcp {

Result<std::unique_ptr<Transport>> tcp_connect(const std::string& host, uint16_t port, const TcpOptions& opt) {
  using namespace tcp;
  std::string peer;
  std::shared_ptr<TlsContext> ctx;
  if (opt.encrypt) {
    RCP_ASSIGN(ctx, TlsContext::client());
  }
  RCP_ASSIGN(Fd first, dial(host, port, peer, opt.bind));
  const uint32_t streams =
      opt.streams != 0 ? std::clamp<uint32_t>(opt.streams, 1, kMaxJoinedConnections)
                       : is_local_peer(first.get()) ? kLocalTcpStreams : kDefaultTcpStreams;
  const Deadline dl = Deadline::in(opt.timeout_ms);
  RCP_ASSIGN(wire::Hello h, exchange_hello(first.get(), peer, opt, 0, streams, dl));
  std::unique_ptr<TlsStream> tls;
  if (ctx) {
    RCP_ASSIGN(tls, TlsStream::handshake(*ctx, first.get(), dl, peer));
  }
  // Extra streams must reach the daemon that holds this stream's key.
  const std::vector<uint8_t> pin = tls ? tls->peer_key() : std::vector<uint8_t>{};
  uint64_t token = 0;
  if (h.flags & kHelloToken) {
    RCP_ASSIGN(token, recv_u64(first.get(), tls.get(), dl, peer));
  }
  auto t = std::make_unique<TcpTransport>(peer, negotiate(opt, h), opt.zerocopy);
  RCP_TRY(t->init(std::move(first), std::move(tls)));
  // Extra streams join the session with its token; a daemon that offers no
  // token gets one stream.
  for (uint32_t i = 1; token != 0 && i < streams; ++i) {
    std::string p2;
    RCP_ASSIGN(Fd s, dial(host, port, p2, opt.bind));
    const Deadline jdl = Deadline::in(opt.timeout_ms);
    RCP_TRY(exchange_hello(s.get(), p2, opt, kHelloJoin, streams, jdl));
    std::unique_ptr<TlsStream> stls;
    if (ctx) {
      RCP_ASSIGN(stls, TlsStream::handshake(*ctx, s.get(), jdl, p2, pin));
    }
    RCP_TRY(send_u64(s.get(), stls.get(), token, jdl, p2));
    // The daemon confirms the join only once the stream belongs to the session.
    RCP_ASSIGN(uint64_t ack, recv_u64(s.get(), stls.get(), jdl, p2));
    if (ack != token) return make_error(EPROTO, "stream join refused by " + p2);
    t->add_stream(std::move(s), std::move(stls));
  }
  return std::unique_ptr<Transport>(std::move(t));
}

}  // namespace rcp
