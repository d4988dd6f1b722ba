// rawpeer: a hostile or broken TCP peer for the integration suite. It connects to a daemon
// and sends what a fuzzing attacker would — a truncated hello, a frame announcing a huge
// length, random bytes — to prove rcpd neither crashes nor allocates what it is told to.
// extra-joins N starts a session announcing 2 streams, then joins N more with its token: exactly
// one join must be accepted and the rest refused, and a join after the session ended too.
//   rawpeer HOST PORT truncated-hello|huge-frame|huge-read|random SEED|slow-hello|extra-joins N
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "wire/codec.h"
#include "wire/messages.h"

namespace {

int dial(const char* host, const char* port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host, port, &hints, &res) != 0) return -1;
  int fd = socket(res->ai_family, SOCK_STREAM, 0);
  if (connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    freeaddrinfo(res);
    return -1;
  }
  freeaddrinfo(res);
  return fd;
}

void send_all(int fd, const std::vector<uint8_t>& b) {
  size_t off = 0;
  while (off < b.size()) {
    ssize_t n = send(fd, b.data() + off, b.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;  // the daemon hung up: that is an acceptable answer
    off += static_cast<size_t>(n);
  }
}

std::vector<uint8_t> valid_hello(uint32_t flags = 0, uint16_t streams = 0) {
  rcp::wire::Hello h;
  h.ctrl_depth = 64;
  h.rd_init = h.rd_resp = 16;
  h.max_sge_rd = 16;
  h.checksums = 7;
  h.max_chunk = 1 << 20;
  h.qps = streams;
  h.flags = flags;
  return rcp::wire::encode_hello(h);
}

bool recv_exact(int fd, uint8_t* p, size_t n) {
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  size_t got = 0;
  while (got < n) {
    ssize_t r = recv(fd, p + got, n - got, 0);
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

/// One join with `token`: true if the daemon echoed the token (accepted),
/// false if it answered 0 or hung up (refused). The socket stays open in fds.
bool join(const char* host, const char* port, uint64_t token, std::vector<int>& fds) {
  int fd = dial(host, port);
  if (fd < 0) return false;
  fds.push_back(fd);
  auto out = valid_hello(rcp::wire::kHelloJoin, 2);
  rcp::wire::Writer(out).u64(token);
  send_all(fd, out);
  uint8_t in[rcp::wire::kHelloSize + 8];
  if (!recv_exact(fd, in, sizeof in)) return false;
  return get_u64(in + rcp::wire::kHelloSize) == token;
}

/// A session announcing 2 streams, then n joins; then one more after it ended.
int extra_joins(const char* host, const char* port, int n) {
  int first = dial(host, port);
  if (first < 0) return 1;
  send_all(first, valid_hello(0, 2));
  uint8_t in[rcp::wire::kHelloSize + 8];
  if (!recv_exact(first, in, sizeof in)) {
    std::printf("rawpeer extra-joins: no hello and token from the daemon\n");
    return 1;
  }
  const uint64_t token = get_u64(in + rcp::wire::kHelloSize);
  std::vector<int> fds;
  int accepted = 0, refused = 0;
  for (int i = 0; i < n; ++i) (join(host, port, token, fds) ? accepted : refused)++;
  // End the session, give the daemon a moment to notice, then try again.
  close(first);
  for (int fd : fds) close(fd);
  fds.clear();
  usleep(1500 * 1000);
  const bool late = join(host, port, token, fds);
  for (int fd : fds) close(fd);
  std::printf("rawpeer extra-joins: announced 2 streams, %d joins: %d accepted, %d refused; join after the end %s\n",
              n, accepted, refused, late ? "ACCEPTED" : "refused");
  return accepted == 1 && refused == n - 1 && !late ? 0 : 1;
}

/// Reads until the daemon closes (or 5 s pass); returns bytes received.
size_t drain(int fd) {
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[4096];
  size_t total = 0;
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return total;
    total += static_cast<size_t>(n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: rawpeer HOST PORT MODE [SEED]\n");
    return 2;
  }
  if (std::string(argv[3]) == "extra-joins") return extra_joins(argv[1], argv[2], argc > 4 ? std::atoi(argv[4]) : 40);
  int fd = dial(argv[1], argv[2]);
  if (fd < 0) {
    std::perror("rawpeer: connect");
    return 1;
  }
  std::string mode = argv[3];
  std::vector<uint8_t> out;
  if (mode == "truncated-hello") {
    out = valid_hello();
    out.resize(13);
  } else if (mode == "huge-frame" || mode == "huge-read") {
    out = valid_hello();
    rcp::wire::Writer w(out);
    w.u8(mode == "huge-frame" ? 1 : 3);  // a control frame, or a read response nobody asked for
    w.u8(0);
    w.u16(0);
    w.u32(0xfffffff0u);  // "4 GiB follow"
    w.u64(1);
    for (int i = 0; i < 4096; ++i) out.push_back(0xab);
  } else if (mode == "random") {
    std::mt19937 rng(argc > 4 ? static_cast<unsigned>(std::atoi(argv[4])) : 1u);
    size_t n = 16 + rng() % 20000;
    for (size_t i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(rng()));
    if (rng() % 2) {  // half the time behind a valid hello, to reach the frame parser
      auto h = valid_hello();
      out.insert(out.begin(), h.begin(), h.end());
    }
  } else {
    std::fprintf(stderr, "rawpeer: unknown mode %s\n", mode.c_str());
    return 2;
  }
  send_all(fd, out);
  shutdown(fd, SHUT_WR);
  size_t got = drain(fd);
  std::printf("rawpeer %s: sent %zu bytes, daemon answered %zu bytes and closed\n", mode.c_str(), out.size(), got);
  close(fd);
  return 0;
}
