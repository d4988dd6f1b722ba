// A connected TCP pair on loopback, for tests that need a real socket (the
// ring's wakeups, the TCP transport's frames).
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "util/fd.h"

namespace rcp::test {

inline bool tcp_pair(Fd& a, Fd& b) {
  Fd l(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  if (!l.valid() || ::bind(l.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(l.get(), 1) != 0 ||
      ::getsockname(l.get(), reinterpret_cast<sockaddr*>(&sa), &len) != 0)
    return false;
  a.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!a.valid() || ::connect(a.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return false;
  b.reset(::accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC));
  int one = 1;
  ::setsockopt(a.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return b.valid();
}

}  // namespace rcp::test
