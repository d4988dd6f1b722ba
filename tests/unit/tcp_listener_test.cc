// transport/tcp listener: what stops rcpd at start names the address, and
// accept() with no descriptor left says so (the daemon backs off) instead of
// "nothing waiting" (which would spin its loop with the connection queued).
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "fd_limit.h"
#include "transport/tcp/tcp_transport.h"
#include "util/fd.h"

using namespace rcp;

namespace {

/// A socket listening on 127.0.0.1 (any = 0.0.0.0) at a free port.
struct Blocker {
  Fd s;
  uint16_t port = 0;
  explicit Blocker(bool any = false) {
    s.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    REQUIRE(s.valid());
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(any ? INADDR_ANY : INADDR_LOOPBACK);
    REQUIRE(::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(s.get(), 4) == 0);
    socklen_t l = sizeof a;
    REQUIRE(::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &l) == 0);
    port = ntohs(a.sin_port);
  }
};

uint16_t free_port() {
  Blocker b;
  return b.port;  // closed again: free (to the next bind, in practice)
}

}  // namespace

TEST_CASE("tcp listener: a port in use or a host that does not resolve stops the start, named") {
  Blocker taken(true);
  auto one = tcp_listener("127.0.0.1", taken.port, {});
  REQUIRE_FALSE(one.ok());
  CHECK(one.error().code == EADDRINUSE);
  CHECK(one.error().context == "bind tcp 127.0.0.1:" + std::to_string(taken.port));
  auto all = tcp_listener("", taken.port, {});
  REQUIRE_FALSE(all.ok());
  CHECK(all.error().code == EADDRINUSE);
  CHECK(all.error().context == "bind tcp *:" + std::to_string(taken.port) + " (IPv4 and IPv6)");
  auto nowhere = tcp_listener("no-such-host.invalid", 7471, {});
  REQUIRE_FALSE(nowhere.ok());
  CHECK(nowhere.error().code == EINVAL);
  CHECK(nowhere.error().context.find("resolve listen address 'no-such-host.invalid'") == 0);
  Result<std::unique_ptr<Listener>> no_fd = make_error(0, "not run");
  const uint16_t port = free_port();
  {
    const test::FdsTaken all_fds(0);
    no_fd = tcp_listener("127.0.0.1", port, {});
  }
  REQUIRE_FALSE(no_fd.ok());
  CHECK(no_fd.error().code == EMFILE);
  CHECK(no_fd.error().context == "socket");
}

TEST_CASE("tcp listener: a connection waiting with no descriptor left is an error, then accepted once there is") {
  const uint16_t port = free_port();
  auto l = tcp_listener("127.0.0.1", port, {});
  REQUIRE(l.ok());
  CHECK((*l)->address() == "tcp 127.0.0.1:" + std::to_string(port));
  auto none = (*l)->accept();  // nothing waiting: no error, no connection
  REQUIRE(none.ok());
  CHECK(*none == nullptr);
  Fd c(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  REQUIRE(::connect(c.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  Result<std::unique_ptr<Incoming>> starved = make_error(0, "not run");
  {
    const test::FdsTaken all_fds(0);
    starved = (*l)->accept();
  }
  REQUIRE_FALSE(starved.ok());
  CHECK(starved.error().code == EMFILE);
  CHECK(starved.error().context == "accept tcp");
  auto in = (*l)->accept();  // still queued
  REQUIRE(in.ok());
  CHECK(*in != nullptr);
}
