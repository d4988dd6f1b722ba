// io/ring: a completion must wake a loop that sleeps in epoll on the ring's
// eventfd as soon as it exists, not some time later; each setup step that
// fails says which.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "io/ring.h"
#include "fd_limit.h"
#include "tcp_pair.h"
#include "util/fd.h"

using namespace rcp;
using rcp::test::tcp_pair;

namespace {
bool readable_now(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}
}  // namespace

TEST_CASE("ring: a receive's completion signals the eventfd by the time the peer's send returns") {
  Fd a, b;
  REQUIRE(tcp_pair(a, b));
  auto ring = Ring::create(8);
  REQUIRE(ring.ok());
  Ring& r = **ring;
  char buf[64];
  int woken = 0, completed = 0;
  for (int i = 0; i < 50; ++i) {
    r.drain_event_fd();
    REQUIRE(r.recv(b.get(), buf, sizeof buf, 7));
    REQUIRE(r.submit().ok());  // nothing to read yet: the receive waits in the kernel
    REQUIRE(::send(a.get(), "x", 1, 0) == 1);
    // Loopback delivers inside send(): the data is in b now, so the wake must be too.
    if (readable_now(r.event_fd())) ++woken;
    REQUIRE(r.wait(5000));
    completed += static_cast<int>(r.reap([&](uint64_t ud, int res) { CHECK((ud == 7 && res == 1)); }));
  }
  CHECK(completed == 50);
  CHECK(woken == 50);
}

TEST_CASE("ring: a ring the kernel refuses is an error naming io_uring_queue_init") {
  auto r = Ring::create(0);  // no entries: EINVAL
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EINVAL);
  CHECK(r.error().context == "io_uring_queue_init");
}

TEST_CASE("ring: no descriptor left for its eventfd is an error naming eventfd") {
  Result<std::unique_ptr<Ring>> r = make_error(0, "not run");
  {
    const test::FdsTaken all_but(1);  // the ring takes it; the eventfd finds none
    r = Ring::create(8);
  }
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EMFILE);
  CHECK(r.error().context == "eventfd");
}

TEST_CASE("ring: buffers the kernel cannot register are an error naming the call") {
  auto r = Ring::create(8);
  REQUIRE(r.ok());
  const iovec bad[1] = {{nullptr, 4096}};  // not mapped memory: EFAULT
  const Status st = (*r)->register_buffers(bad);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == EFAULT);
  CHECK(st.error().context.find("io_uring_register_buffers (1 buffers") == 0);
}
