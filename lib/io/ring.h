/// RAII owner of an io_uring instance with fixed (registered) buffers: the
/// same anonymous memory the NIC reads from or writes into, so file data is
/// never copied by the CPU. Completions are announced on an eventfd so the
/// session's one epoll loop can sleep on disk and network at once.
#pragma once

#include <liburing.h>
#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <span>

#include "util/fd.h"
#include "util/result.h"

namespace rcp {

class Ring {
 public:
  /// entries: submission queue size. DEFER_TASKRUN where the kernel has it
  /// (6.1+): completions wait as task work for the loop's next reap instead
  /// of interrupting it. The loop still sleeps in epoll: queuing deferred work
  /// signals the registered eventfd (liburing test/defer-taskrun.c checks
  /// exactly that), and TASKRUN_FLAG makes io_uring_peek_cqe enter the kernel
  /// to run it. No SQPOLL: it would spend a core polling on 2-core hosts.
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
  Status submit();
  unsigned in_flight() const { return in_flight_; }
  /// Blocks until every request in flight has completed (before the buffers
  /// they name may be freed); completions are discarded.
  void drain();

  /// Calls f(user_data, res) for every completion available now; returns how many.
  template <typename F>
  unsigned reap(F&& f) {
    unsigned n = 0;
    io_uring_cqe* cqe;
    while (io_uring_peek_cqe(&ring_, &cqe) == 0) {
      const uint64_t ud = cqe->user_data;
      const int res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      --in_flight_;
      ++n;
      f(ud, res);
    }
    return n;
  }

 private:
  Ring() = default;
  io_uring ring_{};
  bool inited_ = false;
  bool buffers_ = false;
  Fd efd_;
  unsigned in_flight_ = 0;
};

}  // namespace rcp
