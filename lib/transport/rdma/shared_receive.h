/// rcpd's control receives on one RDMA device, shared by every session's
/// first queue pair there: a shared receive queue (SRQ) of kSharedBuffers
/// buffers of wire::kMaxMessage in one registration, instead of ctrl_depth
/// buffers posted on each session's own QP. What the daemon holds for
/// control receives then no longer grows with its clients: 1 MiB per
/// device, whether 1 or 64 sessions are connected (it was 0.25 MiB each).
///
/// Isolation: verbs checks a receive's lkey against the QP's PD (rxe:
/// copy_data(qp->pd, ...) in rxe_resp.c), so the QPs that take from the
/// SRQ live in its PD — one PD shared by sessions. Nothing in that PD can
/// be reached from the network: the buffers are registered LOCAL_WRITE
/// only, and each session's pool stays in its own PD with its own queue
/// pairs (connection.h: the first QP carries control only). A client that
/// learned another session's rkey could not use it over this QP.
///
/// Credits stay per session (ControlChannel): each client may have as many
/// sends outstanding as the daemon's hello says. Their sum may exceed the
/// SRQ; a send that finds it empty meets an RNR NAK and is retried by the
/// client's hardware (rnr_retry 7: without limit) — a client waits, none fails.
///
/// A buffer taken for a message and never completed is lost to the SRQ:
/// rxe takes an SRQ entry at a message's first packet and completes
/// nothing for it if the QP goes to the error state before the last one
/// (flush_recv_queue returns at once for a QP with an SRQ). A session can
/// lose at most one that way (an RC responder takes one message at a time),
/// a client killed mid-message or one that does it on purpose. So an SRQ
/// serves kSessionsPerSrq sessions and no more (losing at most that many of
/// its kSharedBuffers); the next session gets a new one, and each is freed
/// when the last of its sessions ends.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/rdma/handles.h"
#include "util/result.h"

namespace rcp::rdma {

/// Buffers per SRQ: 256 x 4 KiB = 1 MiB per device. Four default sessions
/// (depth 64) can have every credit outstanding at once without an RNR;
/// the daemon's session threads repost a buffer as soon as they copied it.
constexpr uint32_t kSharedBuffers = 256;
/// Sessions an SRQ serves before the next gets a new one: at most this many
/// of its buffers can be lost (see above), 3/4 of them stay.
constexpr uint32_t kSessionsPerSrq = 64;

class SharedReceive {
 public:
  /// A PD, an SRQ of `buffers` entries and their registration on ctx, every buffer posted.
  static Result<std::shared_ptr<SharedReceive>> create(ibv_context* ctx, uint32_t buffers, const std::string& dev);
  ~SharedReceive();
  SharedReceive(const SharedReceive&) = delete;
  SharedReceive& operator=(const SharedReceive&) = delete;

  ibv_pd* pd() const { return pd_.get(); }
  ibv_srq* srq() const { return srq_.get(); }
  uint32_t buffers() const { return buffers_; }
  /// Buffer i (i < buffers()), as a receive completion named it.
  const uint8_t* buffer(uint32_t i) const { return mem_.data() + size_t{i} * kBufferSize; }
  /// Posts buffer i again (any session thread: providers lock the SRQ).
  Status repost(uint32_t i);
  /// A completion handed buffer i to a session (it reposts it when done).
  void taken() {
    std::lock_guard lk(mu_);
    if (posted_ > 0) --posted_;
  }
  /// Buffers posted now (this process's count: one lost in a QP's error
  /// state still counts), for tests and -vv.
  uint32_t posted() const;

 private:
  SharedReceive() = default;
  static constexpr size_t kBufferSize = 4096;  // wire::kMaxMessage (static_assert in the .cc)
  std::string dev_;
  uint32_t buffers_ = 0;
  // Creation order; destroyed in reverse: SRQ, MR, buffers, PD.
  Pd pd_;
  std::vector<uint8_t> mem_;
  Mr mr_;
  Srq srq_;
  mutable std::mutex mu_;
  uint32_t posted_ = 0;
};

/// The listener's SRQs, one per device in use: a new connection takes the
/// current one of its device (creating it when there is none, when the last
/// session of the previous one ended, or when that one served
/// kSessionsPerSrq sessions). Listener thread only.
class SharedReceives {
 public:
  Result<std::shared_ptr<SharedReceive>> take(ibv_context* ctx, const std::string& dev);

 private:
  struct Current {
    std::weak_ptr<SharedReceive> srq;
    uint32_t served = 0;
  };
  std::map<ibv_context*, Current> by_device_;
};

}  // namespace rcp::rdma
