#include "session/config.h"

#include <algorithm>

#include "session/plan.h"

namespace rcp {

ConnectOptions connect_options(const Settings& s, ConnectOptions base) {
  base.max_chunk = s.chunk_size;
  base.tcp_streams = s.streams ? s.streams : kDefaultTcpStreams;
  base.rdma_qps = s.streams ? s.streams : kDefaultRdmaQps;
  return base;
}

SessionOptions session_options(const Settings& s, Role role, const Negotiated& n) {
  SessionOptions o;
  o.checksum = s.checksum;
  o.chunk_size = s.chunk_size;
  if (role == Role::source && n.max_chunk != 0) o.chunk_size = std::min(o.chunk_size, n.max_chunk);
  o.slots = s.window;
  o.block_size = std::min(kMaxBlockSize, o.chunk_size);
  o.blocks = std::max<uint32_t>(s.window * blocks_for(o.chunk_size, o.block_size), 1);
  o.fsync = s.fsync;
  o.direct = s.direct;
  o.rules = s.rules;
  o.preserve = s.preserve;
  o.hash_threads = s.hash_threads;
  o.cancel = s.cancel;
  return o;
}

uint16_t open_flags(const UpdateRules& r) {
  return static_cast<uint16_t>((r.checksum ? wire::kOpenChecksum : 0) | (r.ignore_existing ? wire::kOpenIgnoreExisting : 0) |
                               (r.existing ? wire::kOpenExisting : 0) | (r.update ? wire::kOpenUpdate : 0) |
                               (r.whole_file ? wire::kOpenWholeFile : 0) | (r.partial ? wire::kOpenPartial : 0));
}

UpdateRules rules_from_open(uint16_t f) {
  UpdateRules r;
  r.checksum = f & wire::kOpenChecksum;
  r.ignore_existing = f & wire::kOpenIgnoreExisting;
  r.existing = f & wire::kOpenExisting;
  r.update = f & wire::kOpenUpdate;
  r.whole_file = f & wire::kOpenWholeFile;
  r.partial = f & wire::kOpenPartial;
  return r;
}

}  // namespace rcp
