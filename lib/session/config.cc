#include "session/config.h"

#include <algorithm>
#include <limits>

#include "session/plan.h"

namespace rcp {

namespace {
/// The chunk size: the user's, but with --bwlimit at most one second of the
/// rate in whole 4 KiB (rcp's smallest chunk), so a paced session moves at
/// least every second (well inside --timeout, 30 s by default) and in even steps.
uint32_t chunk_for(const Settings& s) {
  if (s.bwlimit == 0) return s.chunk_size;
  const uint64_t second = std::max<uint64_t>(4096, s.bwlimit / 4096 * 4096);
  return static_cast<uint32_t>(std::min<uint64_t>(s.chunk_size, second));
}
}  // namespace

ConnectOptions connect_options(const Settings& s, ConnectOptions base) {
  base.max_chunk = chunk_for(s);
  base.tcp_streams = s.streams;  // 0: the transport's choice, by where the daemon is
  base.rdma_qps = s.streams ? s.streams : kDefaultRdmaQps;
  return base;
}

SessionOptions session_options(const Settings& s, Role role, const Negotiated& n) {
  SessionOptions o;
  o.checksum = s.checksum;
  o.chunk_size = chunk_for(s);
  o.bwlimit = s.bwlimit;
  if (role == Role::source && n.max_chunk != 0) o.chunk_size = std::min(o.chunk_size, n.max_chunk);
  o.slots = s.window;
  o.block_size = std::min(kMaxBlockSize, o.chunk_size);
  o.blocks = std::max<uint32_t>(s.window * blocks_for(o.chunk_size, o.block_size), 1);
  o.fsync = s.fsync;
  o.direct = s.direct;
  o.rules = s.rules;
  o.preserve = s.preserve;
  o.hash_threads = hash_threads_for(s.hash_threads, s.cpus, n.local_peer);
  o.cancel = s.cancel;
  // 0: no timeout. INT_MAX ms (24 days) is "never" for the loop's idle check
  // and for every poll that takes the same bound.
  o.idle_timeout_ms = s.io_timeout_s == 0 ? std::numeric_limits<int>::max()
                                          : static_cast<int>(std::min<uint32_t>(s.io_timeout_s, 86400) * 1000);
  return o;
}

unsigned hash_threads_for(unsigned asked, unsigned cpus, bool local_peer) {
  if (asked != kHashThreadsAuto) return asked;
  return local_peer && cpus > 0 && cpus < 4 ? 0 : 1;
}

uint16_t open_flags(const UpdateRules& r) {
  return static_cast<uint16_t>((r.checksum ? wire::kOpenChecksum : 0) | (r.ignore_existing ? wire::kOpenIgnoreExisting : 0) |
                               (r.existing ? wire::kOpenExisting : 0) | (r.update ? wire::kOpenUpdate : 0) |
                               (r.whole_file ? wire::kOpenWholeFile : 0) | (r.partial ? wire::kOpenPartial : 0) |
                               (r.dry_run ? wire::kOpenDryRun : 0));
}

UpdateRules rules_from_open(uint32_t f) {
  UpdateRules r;
  r.checksum = f & wire::kOpenChecksum;
  r.ignore_existing = f & wire::kOpenIgnoreExisting;
  r.existing = f & wire::kOpenExisting;
  r.update = f & wire::kOpenUpdate;
  r.whole_file = f & wire::kOpenWholeFile;
  r.partial = f & wire::kOpenPartial;
  r.dry_run = f & wire::kOpenDryRun;
  return r;
}

}  // namespace rcp
