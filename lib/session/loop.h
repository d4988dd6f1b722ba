/// The event loop both roles (session/source.cc, session/sink*.cc) share, and
/// the few helpers they have in common. A Role provides finished(),
/// hash_pool(), on_event(TransportEvent&), on_io(user_data, res),
/// on_hashed(id, digest) and pump(started); the loop drains transport
/// events, disk completions and finished digests into it, lets it start new
/// work, and sleeps in epoll only when nothing moved. A template, not a
/// virtual interface: the calls sit on the per-chunk path.
#pragma once

#include <sys/epoll.h>

#include <chrono>
#include <fmt/core.h>
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hash/hash_pool.h"
#include "io/ring.h"
#include "session/channel.h"
#include "session/options.h"
#include "util/fd.h"
#include "util/token_bucket.h"

namespace rcp {

/// Starts a role's digest workers unless digests are off or kept on the loop.
Status start_hash_pool(const SessionOptions& opt, std::unique_ptr<HashPool>& hp);

/// A chunk's digest as this session computes it: the keyed chunk MAC when
/// opt.chunk_key is set (authenticated sessions), else opt.checksum.
Digest chunk_digest(const SessionOptions& opt, uint32_t file_id, uint64_t offset,
                    std::span<const std::span<const uint8_t>> pieces);
/// A hole's place in the file digest (wire::Hole): distinct from any chunk's
/// digest, and keyed in an authenticated session (the chunk MAC's header
/// with length 0, which no chunk has, then "hole" and the hole's length), so
/// a man in the middle cannot turn a chunk into a hole and fix up FILE_END.
/// The sink writes the zeros itself; the digest proves both ends agree on
/// where the holes are.
Digest hole_digest(const SessionOptions& opt, uint32_t file_id, uint64_t offset, uint64_t length);
/// Compares two chunk digests (in constant time when keyed).
bool chunk_digest_equal(const SessionOptions& opt, const Digest& a, const Digest& b);
/// The length a chunk digest of this session has.
uint8_t chunk_digest_len(const SessionOptions& opt);

/// Chunks smaller than this are hashed on the loop: handing a 4 KiB chunk to
/// a worker cost ~20 µs of CPU more per file than hashing it (10,000 small
/// files: 9.0k/s with the hand-off vs 11.2k/s without, bench/run).
constexpr uint32_t kOffloadMin = 128 * 1024;

/// EPROTO, "<peer>: <what>".
Error proto_error(Transport& t, std::string what);

/// A transport event other than a read's completion, as both roles take it:
/// the control message decoded, or the error the session ends with (the
/// connection closed under it, or a malformed message).
Result<wire::Message> message_of(Transport& t, TransportEvent& e);

/// --bwlimit for one role: asked before each chunk's data moves. Unlimited
/// when opt.bwlimit is 0. The burst is one chunk: a session starts at once
/// and never runs ahead by more than one chunk.
class Pacer {
 public:
  explicit Pacer(const SessionOptions& opt) {
    if (opt.bwlimit) bucket_.emplace(opt.bwlimit, opt.chunk_size, now_ns());
  }
  /// May `n` bytes go now? (Takes them if so.)
  bool take(uint64_t n) { return !bucket_ || bucket_->take(n, now_ns()); }
  /// How long the loop may sleep before a chunk may go again: at most 200 ms
  /// (the loop's own tick), at least 1.
  int wait_ms() const {
    if (!bucket_) return 200;
    const int64_t ns = bucket_->wait_ns(now_ns());
    return static_cast<int>(std::clamp<int64_t>(ns / 1000000 + 1, 1, 200));
  }

 private:
  static int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  std::optional<TokenBucket> bucket_;
};

template <typename Role>
Status run_loop(Channel& ch, Ring& ring, Role& role, const SessionOptions& opt) {
  Transport& t = ch.transport();
  Fd ep(::epoll_create1(EPOLL_CLOEXEC));
  if (!ep.valid()) return sys_error("epoll_create1");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u32 = 0;
  if (::epoll_ctl(ep.get(), EPOLL_CTL_ADD, t.wait_fd(), &ev) != 0) return sys_error("epoll_ctl transport");
  ev.data.u32 = 1;
  if (::epoll_ctl(ep.get(), EPOLL_CTL_ADD, ring.event_fd(), &ev) != 0) return sys_error("epoll_ctl ring");
  if (HashPool* hp = role.hash_pool()) {
    ev.data.u32 = 2;
    if (::epoll_ctl(ep.get(), EPOLL_CTL_ADD, hp->event_fd(), &ev) != 0) return sys_error("epoll_ctl hash");
  }
  std::vector<HashPool::Done> hashed;
  std::vector<TransportEvent> events;
  auto last_progress = std::chrono::steady_clock::now();
  bool armed = false;
  while (!role.finished()) {
    // Every turn, not only when idle: a copy that always has work (a fast
    // pull's sink) took 0.7-1.1 s to notice Ctrl-C at 2 GB/s over loopback,
    // and a link that never lets the loop idle would not let it notice at all.
    if (opt.cancel && opt.cancel->load(std::memory_order_relaxed)) return make_error(EINTR, "interrupted");
    bool progress = false;
    events.clear();
    RCP_TRY(ch.poll(events));
    for (auto& e : events) {
      // Once the role is done, a close that arrived with its last message is
      // the peer hanging up as agreed, not a failure.
      if (role.finished()) break;
      progress = true;
      RCP_TRY(role.on_event(e));
    }
    Status io_status;
    ring.reap([&](uint64_t ud, int res) {
      progress = true;
      if (io_status.ok()) io_status = role.on_io(ud, res);
    });
    RCP_TRY(io_status);
    if (HashPool* hp = role.hash_pool()) {  // digests the workers finished
      hashed.clear();
      hp->take(hashed);
      for (auto& d : hashed) {
        progress = true;
        RCP_TRY(role.on_hashed(d.id, d.digest));
      }
    }
    bool started = false;
    RCP_TRY(role.pump(started));
    if (started) progress = true;
    RCP_TRY(ring.submit());
    if (progress) {
      last_progress = std::chrono::steady_clock::now();
      armed = false;
      continue;
    }
    if (!armed) {  // arm, then look once more before sleeping: no lost wakeup
      RCP_TRY(t.arm());
      armed = true;
      continue;
    }
    epoll_event out[4];
    int n = ::epoll_wait(ep.get(), out, 4, role.pace_wait_ms());  // (200 ms unless --bwlimit waits less)
    for (int i = 0; i < n; ++i)
      if (out[i].data.u32 == 1) ring.drain_event_fd();
    armed = false;
    const auto idle = std::chrono::steady_clock::now() - last_progress;
    if (idle > std::chrono::milliseconds(opt.idle_timeout_ms) && ring.in_flight() == 0)
      return make_error(ETIMEDOUT, fmt::format("no progress from {} for {} s", t.peer(), opt.idle_timeout_ms / 1000));
  }
  // Let the last messages leave before the connection is torn down.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (t.send_pending() && std::chrono::steady_clock::now() < deadline) {
    events.clear();
    RCP_TRY(t.poll(events));
    if (t.send_pending()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return {};
}

/// A role from start to end: its ring, the role built on it (Role(ch, ring,
/// what, opt)), its pool pinned (a too small RLIMIT_MEMLOCK fails here), the
/// loop; a failed session is sent to the peer as ERROR before it returns.
template <typename Role, typename What>
Result<TransferStats> run_role(Channel& ch, What&& what, const SessionOptions& opt) {
  RCP_ASSIGN(auto ring, Ring::create(256));
  Role s(ch, *ring, std::forward<What>(what), opt);
  Status st = ch.start_sending();  // (the OPEN_OK a daemon just queued)
  if (st.ok()) st = s.init();
  if (st.ok()) st = run_loop(ch, *ring, s, opt);
  ring->drain();  // before s (and its pool) goes
  if (!st.ok()) {
    (void)ch.send(wire::ErrorMsg{st.error().code, st.error().context});
    ch.flush(200);  // the peer learns why before the connection closes
    return st.error();
  }
  return std::move(s.stats());
}
}  // namespace rcp
