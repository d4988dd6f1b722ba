/// An in-memory Transport for engine tests: two connected endpoints in one
/// process, so a source and a sink (or a test playing one of them) run over it
/// without sockets or verbs. Like an RNIC, a read() is served only from the
/// peer's memory registered for remote reading under the key quoted, and only
/// into the reader's own registered memory; a bad range or key completes the
/// read with EACCES. Messages travel whole and in order. Hooks let a test
/// rewrite, drop or add messages in either direction (a lying peer) and
/// corrupt what a read lands, and the link checks the source's credits: a
/// CHUNK_READY for a slot already out, or more chunks out than slots lent,
/// is recorded as a violation.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/transport.h"
#include "util/fd.h"
#include "wire/messages.h"

namespace rcp::test {

/// The two endpoints: a (index 0) and b (index 1).
enum class Side : int { a = 0, b = 1 };

class FakeLink {
 public:
  struct Options {
    uint32_t reads_in_flight = 32;       ///< read work requests each endpoint may have out
    uint32_t max_sge = 4;                ///< SGEs per read work request
    uint32_t max_chunk = wire::kMaxChunk;
    uint32_t credit_limit = 0;           ///< slots the source lends at most (0: no credit check)
    /// The largest message an end sends (Transport::max_message): an RDMA
    /// receive buffer's by default, wire::kMaxLargeMessage as over TCP.
    size_t max_message = wire::kMaxMessage;
  };
  /// Sees each message a side sends (decoded) and leaves in `out` what the
  /// other side receives: the message itself, a changed one, none, several.
  using Hook = std::function<void(wire::Message& m, std::vector<wire::Message>& out)>;
  /// Called once per read after its bytes landed; true flips a byte of them.
  using ReadHook = std::function<bool(uint64_t seq, uint64_t remote_addr, uint32_t length)>;

  explicit FakeLink(Options o);
  FakeLink() : FakeLink(Options{}) {}
  ~FakeLink();
  FakeLink(const FakeLink&) = delete;
  FakeLink& operator=(const FakeLink&) = delete;

  Transport& end(Side s);
  Transport& a() { return end(Side::a); }
  Transport& b() { return end(Side::b); }

  /// Hook for messages sent by `from`.
  void set_hook(Side from, Hook h);
  void set_read_hook(ReadHook h);
  /// Called on side s's thread at the start of each of its poll()s, outside
  /// the link's lock: a test acting between two turns of that side's loop.
  void set_poll_hook(Side s, std::function<void()> h);
  /// Delivers m to the side opposite `from` as if `from` had sent it (no hook).
  void inject(Side from, const wire::Message& m);
  /// Delivers `bytes` to the other side as one control message, undecoded:
  /// a peer sending what is no message at all.
  void inject_bytes(Side from, std::vector<uint8_t> bytes);
  /// What side s's transport reports held for its peer (unsent_bytes): a
  /// test plays a peer that stops reading, then one that reads again.
  void set_unsent(Side s, size_t bytes);
  /// `from` hangs up: the other side gets a closed event.
  void close(Side from, std::string why);

  /// What the link observed.
  struct Seen {
    std::vector<std::string> violations;  ///< credit or read-capacity overruns, undecodable messages
    uint32_t max_chunks_out = 0;          ///< most chunks outstanding at once
    uint64_t reads = 0;                   ///< reads served
    uint64_t reads_refused = 0;           ///< reads refused (bad key or range)
    std::array<std::vector<wire::MsgType>, 2> sent;  ///< types delivered from each side, in order
    /// Most CHUNK_READYs each side sent between two of its poll()s: what a
    /// source announced in one turn of its loop.
    std::array<uint32_t, 2> most_chunks_per_poll{};
  };
  Seen seen() const;

 private:
  friend class FakeEnd;
  struct Region {
    uint8_t* base = nullptr;
    size_t len = 0;
    bool remote_read = false;
    uint32_t key = 0;
  };
  struct State {
    std::deque<TransportEvent> inbox;
    std::vector<Region> regions;
    uint32_t reads_out = 0;  // work requests of reads whose read_done poll() has not handed out
    std::map<uint64_t, uint32_t> read_wrs;  // cookie -> its work requests
    Hook hook;
    size_t unsent = 0;
    uint32_t chunks_since_poll = 0;
    std::function<void()> poll_hook;
    Fd efd;
  };
  void deliver_locked(int from, const wire::Message& m);
  void push_locked(int to, TransportEvent e);

  Options opt_;
  mutable std::mutex mu_;
  State st_[2];
  std::vector<uint32_t> chunks_out_;  // slots lent by the source (CHUNK_READY not yet answered)
  ReadHook read_hook_;
  Seen seen_;
  std::unique_ptr<Transport> ends_[2];
};

}  // namespace rcp::test
