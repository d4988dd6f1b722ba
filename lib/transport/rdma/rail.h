/// One more rail of a session (rcp --rails): another RDMA device's
/// protection domain, completion channel and CQ, and the registrations of
/// the session's memory on it. An MR belongs to one PD and a PD to one
/// device, so each rail registers the pool again and has its own keys; its
/// queue pairs (lanes of the connection) are created on its PD and CQ. Rail
/// 0, the device of the control QP, is the connection's own PD and CQ.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <map>
#include <string>

#include "transport/rdma/device.h"
#include "transport/rdma/handles.h"
#include "transport/rdma/path_info.h"
#include "util/result.h"

namespace rcp::rdma {

struct Rail {
  ibv_context* ctx = nullptr;
  uint8_t index = 0;  ///< its number on the wire: the daemon's announced address it reaches (1..)
  DeviceCaps caps;
  std::string peer;  ///< the peer's address on this rail ("" until known)
  PathInfo path;     ///< its first queue pair's path (port 0 until one joined)
  // Creation order: destroyed MRs, CQ, channel, PD (QPs are gone before:
  // the connection releases its lanes first).
  Pd pd;
  CompChannel cc;
  Cq cq;
  std::map<uint32_t, Mr> mrs;  ///< by the key rail 0 gave the same memory
  uint32_t sink_lkey = 0;      ///< lkey of the landing memory on this rail
  bool sink_registered = false;
  unsigned unacked = 0;        ///< CQ events not acked yet
  std::string failed;          ///< why it was dropped, "" while in use
};

/// PD, completion channel (non-blocking) and a CQ of `cqe` entries on ctx.
Status setup_rail(Rail& r, ibv_context* ctx, uint32_t cqe);

}  // namespace rcp::rdma
