/// The effective configuration, computed in one place. The user states
/// Settings once (rcp's command line, rcpd's options plus the client's
/// OPEN); connect_options() derives what this side announces when it
/// connects, session_options() what one session runs with once the peer's
/// limits are known (transport.h Negotiated). Pure functions: rcp and rcpd
/// call them and nothing else sizes a chunk, a slot or a block
/// (tests/unit/config_test.cc).
#pragma once

#include <atomic>
#include <cstdint>

#include "session/options.h"
#include "transport/connect.h"
#include "transport/transport.h"

namespace rcp {

/// --hash-threads not given: hash_threads_for() decides per session.
constexpr unsigned kHashThreadsAuto = ~0u;

/// The digest threads of a session: `asked` when the user gave a number;
/// by default one (the loop hands chunks of 128 KiB and more to it), but
/// none when the peer runs on this host and it has fewer than 4 CPUs: the
/// two loops already keep two CPUs busy, and a hash thread per side made
/// four busy threads share them. Measured on 2 CPUs, 1 GiB tmpfs to tmpfs
/// over TCP loopback, 10 interleaved pairs each (bench/README.md): pull
/// 1,581 -> 1,720 and 1,468 -> 1,567 MB/s, push 1,656 -> 1,749, CPU of both
/// ends equal or lower. Over RDMA the loop copies nothing and the thread
/// hashes beside it: in the soft-RoCE guest (2 vCPUs) without it the pull
/// fell 30.8 -> 27.6 MB/s (medians of 5), so RDMA never counts as local.
unsigned hash_threads_for(unsigned asked, unsigned cpus, bool local_peer);

/// What the user asked for.
struct Settings {
  Checksum checksum = Checksum::xxh128;
  uint32_t chunk_size = 1u << 20;  ///< bytes per chunk; also the largest chunk this side accepts
  uint32_t window = 16;            ///< chunks in flight: the pool is window x chunk_size
  bool fsync = false;
  bool direct = false;  ///< O_DIRECT for this side's file data (io/direct.h)
  Preserve preserve;  ///< metadata kept (-a, -p, -t, ...): from rcp's options, or rcpd's OPEN
  /// Digest threads per session; kHashThreadsAuto: hash_threads_for's choice.
  unsigned hash_threads = kHashThreadsAuto;
  /// CPUs this process may run on (util/cpus.h usable_cpus), for the
  /// automatic choices; 0: not known (then as on a large host).
  unsigned cpus = 0;
  uint32_t streams = 0;  ///< connections (TCP) or QPs (RDMA) per copy; 0: the transport's default
  UpdateRules rules;     ///< what the sink does with files the destination has (travels in OPEN's flags)
  /// --bwlimit: bytes per second of file data this side pulls (a sink) or
  /// announces (a source); 0: none. Never on the wire: the client paces
  /// itself whichever role it has. It also caps the chunk size at about one
  /// second of it (at least 4 KiB), so no single chunk waits for long.
  uint64_t bwlimit = 0;
  /// --timeout: a session with no progress for this long fails (ETIMEDOUT,
  /// rcp's exit 30); 0: never (rsync's --timeout=0).
  uint32_t io_timeout_s = 30;
  const std::atomic<bool>* cancel = nullptr;
};

/// The OPEN flags that carry `r` to the daemon (wire::kOpenChecksum, ...).
uint16_t open_flags(const UpdateRules& r);
/// The rules an OPEN's flags ask for.
UpdateRules rules_from_open(uint32_t flags);

enum class Role { source, sink };

/// The sink's block: a chunk scatters over blocks of this size. 64 KiB, or
/// the whole chunk when chunks are smaller.
constexpr uint32_t kMaxBlockSize = 64u << 10;

/// `base` (transport kind, ports, zero-copy: what the caller chose) with
/// what the settings decide: the largest chunk announced, the streams.
ConnectOptions connect_options(const Settings& s, ConnectOptions base);

/// What a session in `role` runs with:
///  - source: chunks of the user's size, but never above what the peer
///    accepts (n.max_chunk; 0, as from a transport that states no limit,
///    leaves the user's size); `window` slots of one chunk each.
///  - sink: the chunk size it announced (it refuses larger chunks); blocks
///    of min(64 KiB, chunk), enough for `window` whole chunks.
SessionOptions session_options(const Settings& s, Role role, const Negotiated& n);

}  // namespace rcp
