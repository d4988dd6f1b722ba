#include "transport/sockaddr_string.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <fmt/core.h>

namespace rcp {

std::string sockaddr_string(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (!sa) return "?";
  if (sa->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    return fmt::format("{}:{}", buf, ntohs(in->sin_port));
  }
  if (sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
    return fmt::format("[{}]:{}", buf, ntohs(in6->sin6_port));
  }
  return "?";
}

}  // namespace rcp
