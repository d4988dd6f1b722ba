// tlspeer: the peers tls_suite.sh needs around rcp --encrypt.
//   tlspeer relay LPORT TPORT CAPTURE [flip-s2c|flip-c2s OFFSET]
//     listens on 127.0.0.1:LPORT and forwards every connection to 127.0.0.1:TPORT unchanged,
//     appending every byte of both directions to CAPTURE (what a wire tap sees). With flip-*, the
//     byte at OFFSET of the first connection's daemon->client (s2c) or client->daemon (c2s)
//     direction is inverted once: a corrupted TLS record.
//   tlspeer mitm LPORT TPORT
//     a man in the middle that terminates TLS itself: relays the plain hellos, then runs TLS as
//     the server towards the client (its own key) and as a client towards the daemon, and relays
//     the plaintext between the two.
//   tlspeer mitm-close LPORT TPORT BYTES
//     as mitm, but once it has passed BYTES from the daemon to the client it ends TLS towards
//     the client with a close_notify alert (a clean TLS end in the middle of a session).
//   tlspeer mitm-joins LPORT TPORT
//     relays the first connection untouched and terminates TLS on every later one (the joined
//     streams): the client must notice that they present another key than the first.
//   tlspeer join-plain PORT | join-tls PORT
//     starts a session (encrypted / plain), then joins it with its token on a stream that is
//     plain / encrypted: the daemon must refuse. Exit 0 (prints "refused") when it does.
//   tlspeer stall PORT
//     a hello that asks for TLS, then silence: prints "closed" and exits 0 when the daemon hangs up.
// relay and mitm print "listening" once ready and run until killed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hash/digest.h"
#include "transport/tcp/tls.h"
#include "wire/codec.h"
#include "wire/messages.h"

using namespace rcp;

namespace {

int dial(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::perror("connect");
    std::exit(2);
  }
  return fd;
}

int listen_on(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0) {
    std::perror("listen");
    std::exit(2);
  }
  return fd;
}

bool io_all(int fd, uint8_t* p, size_t n, bool writing) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = writing ? ::send(fd, p + done, n - done, MSG_NOSIGNAL) : ::recv(fd, p + done, n - done, 0);
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

std::vector<uint8_t> hello(uint32_t flags) {
  wire::Hello h;
  h.ctrl_depth = 64;
  h.rd_init = h.rd_resp = 32;
  h.max_sge_rd = 64;
  h.checksums = supported_checksums();
  h.max_chunk = 1u << 20;
  h.qps = 2;
  h.flags = flags;
  return wire::encode_hello(h);
}

// ---- relay ----

std::mutex g_cap_mu;
FILE* g_cap = nullptr;
std::atomic<bool> g_first{true};

void relay_conn(int c, uint16_t tport, bool flip_this, bool flip_s2c, uint64_t flip_at) {
  int d = dial(tport);
  uint64_t seen[2] = {0, 0};  // 0: c2s, 1: s2c
  std::vector<uint8_t> buf(1 << 16);
  pollfd p[2] = {{c, POLLIN, 0}, {d, POLLIN, 0}};
  for (;;) {
    if (::poll(p, 2, -1) <= 0) break;
    bool over = false;
    for (int k = 0; k < 2 && !over; ++k) {
      if (!p[k].revents) continue;
      ssize_t n = ::recv(p[k].fd, buf.data(), buf.size(), 0);
      if (n <= 0) {
        over = true;
        break;
      }
      const int dir = k;  // k == 0: from the client
      if (flip_this && (dir == 1) == flip_s2c && flip_at >= seen[dir] && flip_at < seen[dir] + n) {
        buf[flip_at - seen[dir]] ^= 0xff;
        flip_this = false;
      }
      seen[dir] += static_cast<uint64_t>(n);
      {
        std::lock_guard lk(g_cap_mu);
        if (g_cap) {
          std::fwrite(buf.data(), 1, static_cast<size_t>(n), g_cap);
          std::fflush(g_cap);
        }
      }
      if (!io_all(p[1 - k].fd, buf.data(), static_cast<size_t>(n), true)) over = true;
    }
    if (over) break;
  }
  ::shutdown(c, SHUT_RDWR);
  ::shutdown(d, SHUT_RDWR);
  ::close(c);
  ::close(d);
}

// ---- man in the middle ----

void mitm_conn(int c, uint16_t tport, std::shared_ptr<tcp::TlsContext> sctx, std::shared_ptr<tcp::TlsContext> cctx,
               uint64_t close_after) {
  int d = dial(tport);
  uint8_t h[wire::kHelloSize];
  if (!io_all(d, h, sizeof h, false) || !io_all(c, h, sizeof h, true)) return;  // the daemon's hello
  if (!io_all(c, h, sizeof h, false) || !io_all(d, h, sizeof h, true)) return;  // the client's
  SSL* cs = SSL_new(sctx->get());
  SSL* ds = SSL_new(cctx->get());
  SSL_set_fd(cs, c);
  SSL_set_fd(ds, d);
  if (SSL_accept(cs) != 1 || SSL_connect(ds) != 1) {
    std::fprintf(stderr, "mitm: TLS handshake failed\n");
  } else {
    std::fprintf(stderr, "mitm: terminating TLS on a connection\n");
    std::vector<uint8_t> buf(1 << 16);
    SSL* from[2] = {cs, ds};
    uint64_t to_client = 0;
    for (bool over = false; !over;) {
      pollfd p[2] = {{c, POLLIN, 0}, {d, POLLIN, 0}};
      if (SSL_pending(cs) == 0 && SSL_pending(ds) == 0 && ::poll(p, 2, -1) <= 0) break;
      for (int k = 0; k < 2 && !over; ++k) {
        if (!p[k].revents && SSL_pending(from[k]) == 0) continue;
        int n = SSL_read(from[k], buf.data(), static_cast<int>(buf.size()));
        if (n <= 0 || SSL_write(from[1 - k], buf.data(), n) != n) over = true;
        if (k == 1 && n > 0) to_client += static_cast<uint64_t>(n);
      }
      if (close_after && to_client >= close_after && !over) {
        std::fprintf(stderr, "mitm: close_notify to the client after %llu bytes\n",
                     static_cast<unsigned long long>(to_client));
        SSL_shutdown(cs);
        ::sleep(2);  // the alert reaches the client before the connection goes
        over = true;
      }
    }
  }
  ::shutdown(c, SHUT_RDWR);
  ::shutdown(d, SHUT_RDWR);
  SSL_free(cs);
  SSL_free(ds);
  ::close(c);
  ::close(d);
}

// ---- joins that do not match their session ----

int join_mismatch(uint16_t port, bool session_tls) {
  auto ctx = tcp::TlsContext::client();
  if (!ctx.ok()) return 2;
  const tcp::Deadline dl = tcp::Deadline::in(10000);
  int s = dial(port);
  uint8_t dh[wire::kHelloSize];
  auto h1 = hello(session_tls ? wire::kHelloTls : 0);
  if (!io_all(s, dh, sizeof dh, false) || !io_all(s, h1.data(), h1.size(), true)) return 2;
  uint8_t tok[8];
  std::unique_ptr<tcp::TlsStream> t1;
  if (session_tls) {
    auto t = tcp::TlsStream::handshake(*ctx.value(), s, dl, "daemon");
    if (!t.ok()) return std::fprintf(stderr, "%s\n", t.error().message().c_str()), 2;
    t1 = std::move(t.value());
    if (!t1->read_exact(tok, dl).ok()) return 2;
  } else if (!io_all(s, tok, 8, false)) {
    return 2;
  }
  int j = dial(port);
  auto h2 = hello(wire::kHelloJoin | (session_tls ? 0 : wire::kHelloTls));
  if (!io_all(j, dh, sizeof dh, false) || !io_all(j, h2.data(), h2.size(), true)) return 2;
  uint8_t ack[8] = {};
  bool got = false;
  if (session_tls) {  // a plain join, with the token the session got inside TLS
    got = io_all(j, tok, 8, true) && io_all(j, ack, 8, false);
  } else {  // an encrypted join into a plain session
    auto t = tcp::TlsStream::handshake(*ctx.value(), j, dl, "daemon");
    if (!t.ok()) return std::fprintf(stderr, "%s\n", t.error().message().c_str()), 2;
    got = t.value()->write_exact(tok, dl).ok() && t.value()->read_exact(ack, dl).ok();
  }
  if (got && std::memcmp(ack, tok, 8) == 0) {
    std::printf("joined\n");
    return 1;
  }
  std::printf("refused\n");
  return 0;
}

int stall(uint16_t port) {
  int s = dial(port);
  uint8_t dh[wire::kHelloSize];
  auto h = hello(wire::kHelloTls);
  if (!io_all(s, dh, sizeof dh, false) || !io_all(s, h.data(), h.size(), true)) return 2;
  uint8_t b;
  while (::recv(s, &b, 1, 0) > 0) {
  }
  std::printf("closed\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: see the top of tests/tools/tlspeer.cc\n");
    return 2;
  }
  const std::string mode = argv[1];
  const auto port = static_cast<uint16_t>(std::atoi(argv[2]));
  if (mode == "join-plain") return join_mismatch(port, true);
  if (mode == "join-tls") return join_mismatch(port, false);
  if (mode == "stall") return stall(port);
  if (argc < 4) return 2;
  const auto tport = static_cast<uint16_t>(std::atoi(argv[3]));
  int l = listen_on(port);
  if (mode == "relay") {
    if (argc < 5) return 2;
    g_cap = std::fopen(argv[4], "ab");
    if (!g_cap) return 2;
    bool flip = argc >= 7, s2c = flip && std::string(argv[5]) == "flip-s2c";
    uint64_t at = flip ? std::strtoull(argv[6], nullptr, 10) : 0;
    std::printf("listening\n");
    std::fflush(stdout);
    for (;;) {
      int c = ::accept(l, nullptr, nullptr);
      if (c < 0) continue;
      std::thread(relay_conn, c, tport, flip && g_first.exchange(false), s2c, at).detach();
    }
  }
  if (mode == "mitm" || mode == "mitm-joins" || mode == "mitm-close") {
    const uint64_t close_after = mode == "mitm-close" && argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 0;
    auto sctx = tcp::TlsContext::server();
    auto cctx = tcp::TlsContext::client();
    if (!sctx.ok() || !cctx.ok()) return 2;
    std::printf("listening\n");
    std::fflush(stdout);
    for (;;) {
      int c = ::accept(l, nullptr, nullptr);
      if (c < 0) continue;
      if (mode == "mitm-joins" && g_first.exchange(false)) {
        std::thread(relay_conn, c, tport, false, false, 0).detach();
      } else {
        std::thread(mitm_conn, c, tport, sctx.value(), cctx.value(), close_after).detach();
      }
    }
  }
  return 2;
}
