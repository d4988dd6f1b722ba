// The two ends of the bench's one-connection pipes (hashpipe, treepipe): a
// blocking client socket, and a listener on 127.0.0.1 that accepts one peer.
// Each returns -1 with errno set; the caller names what failed.
#pragma once

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

namespace bench {

inline int connect_to(const char* host, const char* port) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (::getaddrinfo(host, port, &hints, &res) != 0) return -1;
  const int s = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s >= 0 && ::connect(s, res->ai_addr, res->ai_addrlen) != 0) {
    ::close(s);
    ::freeaddrinfo(res);
    return -1;
  }
  ::freeaddrinfo(res);
  return s;
}

inline int accept_one(const char* port) {
  const int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l < 0) return -1;
  const int one = 1;
  ::setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::atoi(port)));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int s = ::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(l, 1) == 0
                    ? ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC)
                    : -1;
  ::close(l);
  return s;
}

}  // namespace bench
