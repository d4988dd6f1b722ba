// The registry through which extra connections (TCP streams, RDMA queue
// pairs) join their session: joins capped at what the hello announced,
// refused for unknown tokens and after the session closed its entry; the
// RDMA pattern sets each join up on the session's point under the lock.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "transport/join_registry.h"

using rcp::JoinRegistry;

TEST_CASE("joins are capped at the connections the client announced") {
  JoinRegistry<int> r;
  REQUIRE(r.open(42, 3));  // the first connection and two joins
  int a = 1, b = 2, c = 3;
  CHECK(r.join(42, a).ok());
  CHECK(r.join(42, b).ok());
  auto st = r.join(42, c);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().context.find("announced 3 connection(s)") != std::string::npos);
  CHECK(c == 3);  // a refused connection stays with the caller
  CHECK(r.take(42) == std::vector<int>{1, 2});
  CHECK(r.take(42).empty());
  CHECK_FALSE(r.join(42, c).ok());  // taking them does not make room
}

TEST_CASE("a session announcing one connection (or none) admits no join") {
  JoinRegistry<int> r;
  REQUIRE(r.open(7, 0));
  int x = 5;
  CHECK_FALSE(r.join(7, x).ok());
}

TEST_CASE("the announced count is capped at 16") {
  JoinRegistry<int> r;
  REQUIRE(r.open(9, 4000));
  int ok = 0;
  for (int i = 0; i < 100; ++i) {
    int c = i;
    if (r.join(9, c).ok()) ++ok;
  }
  CHECK(ok == static_cast<int>(rcp::kMaxJoinedConnections) - 1);
}

TEST_CASE("unknown and zero tokens are refused; a token names one session") {
  JoinRegistry<int> r;
  int x = 1;
  CHECK_FALSE(r.join(1, x).ok());
  CHECK_FALSE(r.open(0, 2));
  CHECK_FALSE(r.join(0, x).ok());
  REQUIRE(r.open(5, 2));
  CHECK_FALSE(r.open(5, 2));
}

TEST_CASE("a join after the session closed is refused; close returns what was never taken") {
  JoinRegistry<int> r;
  REQUIRE(r.open(11, 4));
  int a = 10;
  CHECK(r.join(11, a).ok());
  CHECK(r.close(11) == std::vector<int>{10});
  CHECK(r.size() == 0);
  int b = 20;
  auto st = r.join(11, b);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().context.find("no open session") != std::string::npos);
  CHECK(r.take(11).empty());
}

// --- the RDMA pattern: the session leaves its point (PD, CQ) with its entry
// and the listener thread creates each joining queue pair on it, under the
// registry's lock, while the session may be ending on its own thread.

namespace {

struct FakePd {  // stands in for the session's PD and CQ
  bool alive = true;
  int qps = 0;  // queue pairs created on it and not destroyed
};

struct FakeQp {  // stands in for a joining cm_id and its QP
  int id = 0;
  FakePd* on = nullptr;
  uint32_t seat = 0;
};

using QpRegistry = JoinRegistry<FakeQp, FakePd*>;

constexpr rcp::JoinWording kQpWords{"its session token names no session", "queue pair(s)"};

/// What the RDMA listener does under the lock: refuse, or create the QP on
/// the session's PD (and leave nothing on it when refusing after that).
auto create_on(bool fail_after_create = false) {
  return [fail_after_create](FakePd*& pd, FakeQp& qp, rcp::JoinSeat seat) -> rcp::Status {
    REQUIRE(pd->alive);
    ++pd->qps;
    if (fail_after_create) {
      --pd->qps;
      return rcp::make_error(EIO, "rdma_accept failed");
    }
    qp.on = pd;
    qp.seat = seat.number;
    return {};
  };
}

}  // namespace

TEST_CASE("RDMA pattern: each join is set up on the session's point, in the seat it takes") {
  FakePd pd;
  QpRegistry r(kQpWords);
  REQUIRE(r.open(77, 3, &pd));
  FakeQp a{1}, b{2}, c{3};
  CHECK(r.join(77, a, create_on()).ok());
  CHECK(r.join(77, b, create_on()).ok());
  auto st = r.join(77, c, create_on());
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().context == "its session announced 3 queue pair(s) and has them all");
  CHECK(c.on == nullptr);  // not admitted: never touched the PD
  auto got = r.take(77);
  REQUIRE(got.size() == 2);
  CHECK(got[0].seat == 2);  // the session's first QP is seat 1
  CHECK(got[1].seat == 3);
  CHECK(pd.qps == 2);
}

TEST_CASE("RDMA pattern: unknown tokens are refused in the transport's words, without touching any point") {
  FakePd pd;
  QpRegistry r(kQpWords);
  REQUIRE(r.open(5, 4, &pd));
  FakeQp q{1};
  bool ran = false;
  auto st = r.join(6, q, [&](FakePd*&, FakeQp&, rcp::JoinSeat) {
    ran = true;
    return rcp::Status{};
  });
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().context == "its session token names no session");
  CHECK_FALSE(ran);
  r.close(5);
  st = r.join(5, q, create_on());
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().context == "its session token names no session");
  CHECK(pd.qps == 0);
}

TEST_CASE("RDMA pattern: a join its admit step refuses takes no seat and stays with the caller") {
  FakePd pd;
  QpRegistry r(kQpWords);
  REQUIRE(r.open(8, 2, &pd));  // room for one join
  FakeQp q{1};
  auto st = r.join(8, q, create_on(true));
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().context == "rdma_accept failed");
  CHECK(q.id == 1);
  CHECK(r.take(8).empty());
  CHECK(r.join(8, q, create_on()).ok());  // the seat is still free
  CHECK(r.take(8).size() == 1);
  CHECK(pd.qps == 1);
}

TEST_CASE("RDMA pattern: close waits for a join being set up, and returns it; none starts after") {
  auto pd = std::make_unique<FakePd>();
  QpRegistry r(kQpWords);
  REQUIRE(r.open(99, 4, pd.get()));
  std::promise<void> inside, release;
  auto released = release.get_future().share();
  std::thread listener([&] {
    FakeQp q{7};
    auto st = r.join(99, q, [&](FakePd*& p, FakeQp& qp, rcp::JoinSeat) {
      inside.set_value();
      released.wait();  // the session tries to end meanwhile
      CHECK(p->alive);  // ... but its PD is still there
      ++p->qps;
      qp.on = p;
      return rcp::Status{};
    });
    CHECK(st.ok());
  });
  inside.get_future().wait();
  std::atomic<bool> closed{false};
  std::vector<FakeQp> late;
  std::thread session([&] {
    late = r.close(99);  // the session ending: then it frees its PD
    closed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(closed.load());  // close waits for the join being set up
  release.set_value();
  listener.join();
  session.join();
  REQUIRE(late.size() == 1);  // the session releases it with its own QPs
  CHECK(late[0].id == 7);
  CHECK(late[0].on == pd.get());
  pd->alive = false;
  pd.reset();
  FakeQp after{8};
  bool ran = false;
  auto st = r.join(99, after, [&](FakePd*&, FakeQp&, rcp::JoinSeat) {
    ran = true;
    return rcp::Status{};
  });
  CHECK_FALSE(st.ok());
  CHECK_FALSE(ran);  // no join reaches the freed PD
}
