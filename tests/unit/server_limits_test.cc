// The daemon's bookkeeping for limits (daemon/server.h): which address a
// peer counts under, and how repeated refusals stay out of the log; and
// run_server's own setup failing, named.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>

#include "daemon/server.h"
#include "fd_limit.h"

using namespace rcp;
using namespace std::chrono_literals;

TEST_CASE("peer_host: the address a peer counts under for max_per_host") {
  CHECK(peer_host("10.0.0.1:5555") == "10.0.0.1");
  CHECK(peer_host("::1:5555") == "::1");        // TCP listener: IPv6 without brackets
  CHECK(peer_host("[fe80::1]:7471") == "fe80::1");  // rdma_cm: with brackets
  CHECK(peer_host("10.0.0.1:1") == peer_host("10.0.0.1:2"));
}

TEST_CASE("LogLimiter: the first line per key, then one per interval with the count dropped") {
  LogLimiter l(10000ms);
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  uint64_t dropped = 99;
  CHECK(l.allow("host a", t0, dropped));
  CHECK(dropped == 0);
  for (int i = 0; i < 12; ++i) CHECK_FALSE(l.allow("host a", t0 + 1s, dropped));
  CHECK(l.allow("host b", t0 + 1s, dropped));  // another peer is its own key
  CHECK_FALSE(l.allow("host a", t0 + 9999ms, dropped));
  CHECK(l.allow("host a", t0 + 10s, dropped));
  CHECK(dropped == 13);
  CHECK_FALSE(l.allow("host a", t0 + 11s, dropped));
}

TEST_CASE("LogLimiter forgets idle keys, so a flood of addresses cannot grow it without bound") {
  LogLimiter l(1000ms);
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  uint64_t d = 0;
  for (int i = 0; i < 5000; ++i) l.allow("k" + std::to_string(i), t0 + std::chrono::milliseconds(i), d);
  CHECK(l.size() <= 1025 + 1000);
}

namespace {

/// A listener with the descriptor it is given (nothing ever arrives).
struct NoListener final : Listener {
  explicit NoListener(int fd) : fd_(fd) {}
  const char* kind() const override { return "none"; }
  std::string address() const override { return "nowhere"; }
  int fd() const override { return fd_; }
  Result<std::unique_ptr<Incoming>> accept() override { return std::unique_ptr<Incoming>(); }
  int fd_;
};

Status serve_once(int listener_fd) {
  std::vector<std::unique_ptr<Listener>> ls;
  ls.push_back(std::make_unique<NoListener>(listener_fd));
  const std::atomic<bool> stop{true};  // (a server that did start returns within 500 ms)
  ServerConfig cfg;
  cfg.stop = &stop;
  return run_server(std::move(ls), cfg, [](Transport&) {});
}

}  // namespace

TEST_CASE("run_server: a listener it cannot watch, or no descriptor for its epoll, fails the start, named") {
  const Status bad_fd = serve_once(-1);
  REQUIRE_FALSE(bad_fd.ok());
  CHECK(bad_fd.error().code == EBADF);
  CHECK(bad_fd.error().context == "epoll_ctl listener");
  Status no_fd;
  {
    const test::FdsTaken all(0);
    no_fd = serve_once(0);
  }
  REQUIRE_FALSE(no_fd.ok());
  CHECK(no_fd.error().code == EMFILE);
  CHECK(no_fd.error().context == "epoll_create1");
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  CHECK(serve_once(p[0]).ok());  // one that can be watched: it starts, and stops as asked
  ::close(p[0]);
  ::close(p[1]);
}
