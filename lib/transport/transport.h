/// The boundary between the engine and the wire. The engine (source and sink
/// sessions) only sees this interface: control messages, "read this remote
/// chunk into these local buffers", and completions. The RDMA transport does
/// the read with RDMA READ work requests; the TCP transport asks the peer to
/// send the bytes. Neither the engine nor its tests know which one runs.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "transport/types.h"
#include "util/result.h"
#include "wire/messages.h"

namespace rcp {

enum class TransportKind { automatic, rdma, tcp };
const char* transport_kind_name(TransportKind k);

/// Something that happened on a connection, reported by poll().
struct TransportEvent {
  enum class Kind { message, read_done, closed };
  Kind kind = Kind::message;
  uint64_t cookie = 0;           ///< read_done: the cookie given to read()
  int status = 0;                ///< read_done / closed: 0 or an errno
  std::vector<uint8_t> message;  ///< message: one whole control message
  std::string detail;            ///< closed / failed read: what happened

  static TransportEvent read_done(uint64_t cookie, int status = 0, std::string detail = {}) {
    return {Kind::read_done, cookie, status, {}, std::move(detail)};
  }
  static TransportEvent closed(int status, std::string detail) {
    return {Kind::closed, 0, status, {}, std::move(detail)};
  }
};

/// Limits agreed at connect time from both sides' hellos and devices.
struct Negotiated {
  uint32_t reads_in_flight = 1;  ///< READ work requests the engine may keep outstanding
  uint32_t rd_atomic = 0;        ///< RDMA: READs the device keeps on the wire at once (initiator depth)
  uint32_t max_sge = 1;          ///< SGEs per READ work request
  uint32_t max_chunk = 0;        ///< largest chunk the peer accepts
  uint16_t checksums = 0;        ///< algorithms both sides support
  /// The peer runs on this host (TCP to a loopback or own address): its
  /// busy threads compete for this host's CPUs (session/config.h
  /// hash_threads_for).
  bool local_peer = false;
};

/// One rail of an RDMA connection (one without rcp --rails, several with
/// it), for -v and --json: the path it took and what this side read over it.
struct RailStat {
  std::string device;  ///< local RDMA device ("rxe2")
  std::string peer;    ///< the peer's address on it
  uint8_t port = 0;    ///< the device's port (1..), 0 if not known
  int gid_index = -1;  ///< the source GID's index in the port's table, -1 if none (no GRH)
  std::string gid;     ///< that GID ("::ffff:10.77.0.1"), "" if none
  std::string gid_type;  ///< "RoCE v2", "RoCE v1", "IB" or ""
  std::string local;   ///< this side's address on it
  uint64_t bytes = 0, chunks = 0;
  /// What the peer said it read over this rail (RAIL_STATS: rcpd in a push);
  /// checked only for form here: the caller bounds it by what it offered.
  uint64_t peer_bytes = 0, peer_chunks = 0;
  std::string failed;  ///< why it was dropped mid-copy, "" if it was not
};

class Transport {
 public:
  virtual ~Transport() = default;

  /// "rdma rxe0" or "tcp" — what -v reports.
  virtual std::string name() const = 0;
  /// The peer's address, for messages.
  virtual std::string peer() const = 0;
  /// One line on the agreed limits, for -v.
  virtual std::string describe() const { return name(); }
  virtual const Negotiated& negotiated() const = 0;

  /// Makes [base, base+len) usable: readable by the peer when remote_read,
  /// a landing zone for reads otherwise. Returns the key the peer must quote
  /// (the rkey on RDMA). Registered once per connection, never per chunk.
  virtual Result<uint32_t> register_memory(void* base, size_t len, bool remote_read) = 0;
  /// Releases a registration (before the memory is freed).
  virtual void deregister_memory(uint32_t key) = 0;

  /// Queues one control message (a whole encoded wire message). Refused
  /// (ENOBUFS) when it would take what is held for the peer past kMaxUnsent
  /// (transport/backlog.h): a peer that does not read.
  virtual Status send(std::span<const uint8_t> message) = 0;
  /// The largest message send() takes and the peer's receive holds:
  /// wire::kMaxMessage (an RDMA receive buffer), or more where a message
  /// is a stream's frame (TCP: wire::kMaxLargeMessage, so a small file can
  /// travel whole in its SMALL_FILE).
  virtual size_t max_message() const { return wire::kMaxMessage; }
  /// What control messages held for the peer cost now (unsent_cost each):
  /// queued, or handed to the kernel or the NIC and not yet sent.
  virtual size_t unsent_bytes() const = 0;

  /// Starts pulling `wrs` (one chunk: contiguous remote bytes under rkey,
  /// scattered over local registered memory). One read_done event with this
  /// cookie reports the whole chunk.
  virtual Status read(uint64_t cookie, uint32_t rkey, std::span<const ReadWr> wrs) = 0;
  /// Work requests that read() may still post now.
  virtual uint32_t read_capacity() const = 0;

  /// Makes progress without blocking and appends what happened.
  virtual Status poll(std::vector<TransportEvent>& out) = 0;
  /// An fd that becomes readable when poll() may have work. Call arm() first,
  /// then poll() once more, and only sleep if that found nothing.
  virtual int wait_fd() const = 0;
  virtual Status arm() = 0;
  /// Whether sends are still queued locally (the session waits for them
  /// before closing so the last message is not lost).
  virtual bool send_pending() const = 0;
  /// Whether every byte this transport carries is encrypted (TCP with TLS).
  virtual bool encrypted() const { return false; }
  /// For an encrypted transport, a value both ends derive from their
  /// encrypted channel and no relay in the middle can make equal on both
  /// sides (the TLS exporter); authentication mixes it in. Empty otherwise.
  virtual std::vector<uint8_t> channel_binding() const { return {}; }
  /// Every rail of an RDMA connection (the first alone without --rails)
  /// with its path and what this side read over it; empty over TCP.
  virtual std::vector<RailStat> rail_stats() const { return {}; }
};

}  // namespace rcp
