#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include "transport/sockaddr_string.h"

using rcp::sockaddr_string;

TEST_CASE("sockaddr_string: IPv4 and IPv6 with their ports; '?' for anything else") {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(7471);
  REQUIRE(inet_pton(AF_INET, "10.0.0.1", &in.sin_addr) == 1);
  CHECK(sockaddr_string(reinterpret_cast<const sockaddr*>(&in)) == "10.0.0.1:7471");

  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(7472);
  REQUIRE(inet_pton(AF_INET6, "fe80::1", &in6.sin6_addr) == 1);
  CHECK(sockaddr_string(reinterpret_cast<const sockaddr*>(&in6)) == "[fe80::1]:7472");

  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  CHECK(sockaddr_string(reinterpret_cast<const sockaddr*>(&un)) == "?");
  CHECK(sockaddr_string(nullptr) == "?");
}
