// Choosing a transport (transport/connect.h): what is refused before any
// connection is tried, and the fall back to TCP on a host without RDMA.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "transport/connect.h"
#include "transport/rdma/rdma_transport.h"
#include "util/fd.h"
#include "scratch_dir.h"

using namespace rcp;

namespace {

using test::says;

/// A loopback TCP port nothing listens on (bound, then closed).
uint16_t closed_port() {
  Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(s.valid());
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len) == 0);
  return ntohs(a.sin_port);
}

}  // namespace

TEST_CASE("transport choice: --encrypt with --transport rdma is refused before connecting") {
  ConnectOptions o;
  o.kind = TransportKind::rdma;
  o.encrypt = true;
  std::string note;
  // (192.0.2.1 is TEST-NET-1: were a connection tried, it would time out, not answer.)
  auto t = connect_transport("192.0.2.1", o, note);
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().code == EINVAL);
  CHECK_MESSAGE(says(t.error(), "--encrypt needs TCP"), t.error().message());
}

TEST_CASE("transport choice on a host without RDMA: rdma and --device refused, auto falls back to TCP and says so") {
  if (rdma_devices_present()) {
    MESSAGE("SKIPPED: this host has an RDMA device; the no-device choices are not reachable here");
    return;
  }
  std::string note;
  ConnectOptions rdma;
  rdma.kind = TransportKind::rdma;
  auto r = connect_transport("127.0.0.1", rdma, note);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ENODEV);
  CHECK_MESSAGE(says(r.error(), "--transport rdma: this host has no RDMA device"), r.error().message());
  ConnectOptions dev;
  dev.device = "rxe9";
  auto d = connect_transport("127.0.0.1", dev, note);
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().code == ENODEV);
  CHECK_MESSAGE(says(d.error(), "--device rxe9: this host has no RDMA device"), d.error().message());
  CHECK(note.empty());
  ConnectOptions any;
  any.tcp_port = closed_port();
  any.timeout_ms = 2000;
  auto a = connect_transport("127.0.0.1", any, note);
  CHECK_FALSE(a.ok());  // nobody listens: what matters is that TCP was tried
  CHECK(note == "no RDMA device on this host; using TCP");
  CHECK_MESSAGE(a.error().code == ECONNREFUSED, a.error().message());
}
