/// RAII owner of an io_uring instance with fixed (registered) buffers: the
/// same anonymous memory the NIC reads from or writes into, so file data is
/// never copied by the CPU. Completions are announced on an eventfd so the
/// session's one epoll loop can sleep on disk and network at once. The TCP
/// transport runs its sockets on one too (receives, sendmsg with zero-copy
/// notifications), so every io_uring use goes through this one wrapper.
#pragma once

#include <liburing.h>
#include <sys/uio.h>

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>

#include "util/fd.h"
#include "util/result.h"

namespace rcp {

class Ring {
 public:
  /// entries: submission queue size. The loop sleeps in epoll on the ring's
  /// eventfd, which the kernel signals as it posts each completion (ring.cc
  /// says why no DEFER_TASKRUN). No SQPOLL: it would spend a core polling on
  /// 2-core hosts.
  static Result<std::unique_ptr<Ring>> create(unsigned entries);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  /// Registers buffers for READ_FIXED/WRITE_FIXED; buffer index = iovec index.
  Status register_buffers(std::span<const iovec> bufs);
  /// The eventfd signalled on every completion (read it to reset).
  int event_fd() const { return efd_.get(); }
  void drain_event_fd();

  /// Queue a fixed-buffer read/write; false if the submission queue is full
  /// (call submit() and retry).
  bool read_fixed(int fd, void* buf, unsigned len, uint64_t offset, int buf_index, uint64_t user_data);
  bool write_fixed(int fd, const void* buf, unsigned len, uint64_t offset, int buf_index, uint64_t user_data);

  /// Socket operations, same contract (false: queue full, submit and retry),
  /// without an offset (a socket has none). read_fixed() above also serves
  /// sockets (offset 0) to receive straight into a registered buffer.
  bool recv(int fd, void* buf, size_t len, uint64_t user_data);
  bool readv(int fd, const iovec* iov, unsigned iovcnt, uint64_t user_data);
  /// sendmsg, or SENDMSG_ZC when zerocopy: then the kernel posts two
  /// completions, the result (IORING_CQE_F_MORE set) and later a notification
  /// (IORING_CQE_F_NOTIF) once it no longer reads the buffers. `mh` and what
  /// it points at must stay valid until the first completion, the data
  /// until the notification.
  bool sendmsg(int fd, const msghdr* mh, int flags, bool zerocopy, uint64_t user_data);
  /// fsync(2) of fd, completing with its result (0 or -errno). io_uring
  /// runs it on a worker thread (it blocks), so several run at once: the
  /// sink's --fsync (ext4 here: 4,000 files/s one at a time, 9,000 four at a
  /// time, bench/README.md).
  bool fsync(int fd, uint64_t user_data);
  /// A no-op that completes with res 0: work done inline announces its end
  /// through the same completion path as the rest.
  bool nop(uint64_t user_data);
  /// Whether the kernel knows an opcode (IORING_OP_SENDMSG_ZC needs 6.1).
  bool supports(int opcode);

  Status submit();
  /// Requests whose last completion has not been reaped (a zero-copy send
  /// counts until its notification).
  unsigned in_flight() const { return in_flight_; }
  /// Blocks until every request in flight has completed (before the buffers
  /// they name may be freed); completions are discarded. timeout_ms >= 0
  /// bounds each wait for the next completion (sockets: a zero-copy
  /// notification may wait for a dead peer's retransmissions); false if it
  /// ran out.
  bool drain(int timeout_ms = -1);
  /// The destructor drains with this bound (default: unbounded, right for
  /// files; the TCP transport bounds it after shutting its sockets).
  void set_exit_drain_ms(int ms) { exit_drain_ms_ = ms; }
  /// Waits up to timeout_ms for a completion to reap; false if none came.
  bool wait(int timeout_ms);

  /// Calls f(user_data, res) — or f(user_data, res, flags) — for every
  /// completion available now; returns how many.
  template <typename F>
  unsigned reap(F&& f) {
    unsigned n = 0;
    io_uring_cqe* cqe;
    while (io_uring_peek_cqe(&ring_, &cqe) == 0) {
      const uint64_t ud = cqe->user_data;
      const int res = cqe->res;
      const uint32_t flags = cqe->flags;
      io_uring_cqe_seen(&ring_, cqe);
      if (!(flags & IORING_CQE_F_MORE)) --in_flight_;  // a request ends with its last completion
      ++n;
      if constexpr (std::is_invocable_v<F&, uint64_t, int, uint32_t>)
        f(ud, res, flags);
      else
        f(ud, res);
    }
    return n;
  }

 private:
  Ring() = default;
  io_uring ring_{};
  int exit_drain_ms_ = -1;
  bool inited_ = false;
  bool buffers_ = false;
  Fd efd_;
  unsigned in_flight_ = 0;
};

}  // namespace rcp
