#include "io/ring.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>

#include "util/log.h"

namespace rcp {

Result<std::unique_ptr<Ring>> Ring::create(unsigned entries) {
  std::unique_ptr<Ring> r(new Ring());
  // A plain ring: the kernel runs a completion's task work at once and the
  // CQE's eventfd signal wakes the loop sleeping in epoll. Not DEFER_TASKRUN
  // (used until 2026-12-04): with it, on Linux 6.18.44 a socket receive's
  // completion waited as deferred work whose eventfd signal came 15-40 ms late
  // (perf: io_uring_task_add, then epoll_wait returns 15-40 ms after; the
  // kernel may defer the signal through RCU, not proven), and
  // tests/unit/ring_test.cc found the eventfd set 0 times in 50 right after
  // the peer's send: 10,000 x 4 KiB over TCP loopback took 10.2 s
  // instead of 0.25 s, one 512 MiB push 4.7 s instead of 0.33 s. COOP_TASKRUN
  // measured the same as plain (small files) or 10 % more CPU (512 MiB push,
  // 0.64 vs 0.56 CPU-s, medians of 8), so the ring keeps no setup flags.
  int rc = io_uring_queue_init(entries, &r->ring_, 0);
  if (rc < 0) return make_error(-rc, "io_uring_queue_init");
  r->inited_ = true;
  int efd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (efd < 0) return sys_error("eventfd");
  r->efd_.reset(efd);
  rc = io_uring_register_eventfd(&r->ring_, efd);
  if (rc < 0) return make_error(-rc, "io_uring_register_eventfd");
  return r;
}

Ring::~Ring() {
  if (!inited_) return;
  if (!drain(exit_drain_ms_)) log_debug("io_uring: {} request(s) still in flight at exit", in_flight_);
  if (buffers_) io_uring_unregister_buffers(&ring_);
  io_uring_queue_exit(&ring_);
}

bool Ring::drain(int timeout_ms) {
  // Buffers must not be freed while the kernel may still use them.
  (void)io_uring_submit(&ring_);
  while (in_flight_ > 0) {
    io_uring_cqe* cqe;
    if (timeout_ms >= 0 ? !wait(timeout_ms) : io_uring_wait_cqe(&ring_, &cqe) != 0) return false;
    reap([](uint64_t, int) {});
  }
  return true;
}

bool Ring::wait(int timeout_ms) {
  io_uring_cqe* cqe;
  __kernel_timespec ts{timeout_ms / 1000, (timeout_ms % 1000) * 1000000LL};
  return io_uring_wait_cqe_timeout(&ring_, &cqe, &ts) == 0;
}

Status Ring::register_buffers(std::span<const iovec> bufs) {
  int rc = io_uring_register_buffers(&ring_, bufs.data(), static_cast<unsigned>(bufs.size()));
  if (rc < 0)
    return make_error(-rc, "io_uring_register_buffers (" + std::to_string(bufs.size()) +
                               " buffers; check `ulimit -l`)");
  buffers_ = true;
  return {};
}

void Ring::drain_event_fd() {
  // One read resets the counter (no EFD_SEMAPHORE): a second would only
  // fail with EAGAIN, a syscall per loop round (strace: 1.4 per file of a
  // 10,000-file push).
  uint64_t v;
  (void)!::read(efd_.get(), &v, sizeof v);
}

bool Ring::recv(int fd, void* buf, size_t len, uint64_t user_data) {
  io_uring_sqe* q = io_uring_get_sqe(&ring_);
  if (!q) return false;
  io_uring_prep_recv(q, fd, buf, len, 0);
  io_uring_sqe_set_data64(q, user_data);
  ++in_flight_;
  return true;
}

bool Ring::readv(int fd, const iovec* iov, unsigned iovcnt, uint64_t user_data) {
  io_uring_sqe* q = io_uring_get_sqe(&ring_);
  if (!q) return false;
  io_uring_prep_readv(q, fd, iov, iovcnt, 0);
  io_uring_sqe_set_data64(q, user_data);
  ++in_flight_;
  return true;
}

bool Ring::sendmsg(int fd, const msghdr* mh, int flags, bool zerocopy, uint64_t user_data) {
  io_uring_sqe* q = io_uring_get_sqe(&ring_);
  if (!q) return false;
  if (zerocopy)
    io_uring_prep_sendmsg_zc(q, fd, mh, static_cast<unsigned>(flags));
  else
    io_uring_prep_sendmsg(q, fd, mh, static_cast<unsigned>(flags));
  io_uring_sqe_set_data64(q, user_data);
  ++in_flight_;
  return true;
}

bool Ring::nop(uint64_t user_data) {
  io_uring_sqe* q = io_uring_get_sqe(&ring_);
  if (!q) return false;
  io_uring_prep_nop(q);
  io_uring_sqe_set_data64(q, user_data);
  ++in_flight_;
  return true;
}

bool Ring::fsync(int fd, uint64_t user_data) {
  io_uring_sqe* q = io_uring_get_sqe(&ring_);
  if (!q) return false;
  io_uring_prep_fsync(q, fd, 0);
  io_uring_sqe_set_data64(q, user_data);
  ++in_flight_;
  return true;
}

bool Ring::supports(int opcode) {
  io_uring_probe* p = io_uring_get_probe_ring(&ring_);
  const bool ok = p && io_uring_opcode_supported(p, opcode);
  if (p) io_uring_free_probe(p);
  return ok;
}

bool Ring::read_fixed(int fd, void* buf, unsigned len, uint64_t offset, int buf_index, uint64_t user_data) {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (!sqe) return false;
  io_uring_prep_read_fixed(sqe, fd, buf, len, offset, buf_index);
  io_uring_sqe_set_data64(sqe, user_data);
  ++in_flight_;
  return true;
}

bool Ring::write_fixed(int fd, const void* buf, unsigned len, uint64_t offset, int buf_index, uint64_t user_data) {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (!sqe) return false;
  io_uring_prep_write_fixed(sqe, fd, buf, len, offset, buf_index);
  io_uring_sqe_set_data64(sqe, user_data);
  ++in_flight_;
  return true;
}

Status Ring::submit() {
  int rc = io_uring_submit(&ring_);
  if (rc < 0) return make_error(-rc, "io_uring_submit");
  return {};
}

}  // namespace rcp
