// rawpeer: a hostile or broken TCP peer for the integration suite. It connects to a daemon
// and sends what a fuzzing attacker would — a truncated hello, a frame announcing a huge
// length, random bytes — to prove rcpd neither crashes nor allocates what it is told to.
//   rawpeer HOST PORT truncated-hello|huge-frame|huge-read|random SEED|slow-hello
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

std::vector<uint8_t> valid_hello() {
  rcp::wire::Hello h;
  h.ctrl_depth = 64;
  h.rd_init = h.rd_resp = 16;
  h.max_sge_rd = 16;
  h.checksums = 7;
  h.max_chunk = 1 << 20;
  return rcp::wire::encode_hello(h);
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
