/// Extra queue pairs of a session (rcp --streams N): how they are made and
/// how they find their session. The daemon's accept gives the client a
/// random 64-bit session token (wire::new_session_token, from getrandom);
/// each extra QP connects with a join hello quoting it. The daemon looks the
/// token up in its QpJoins (the transport-neutral JoinRegistry,
/// transport/join_registry.h, with the session's JoinSpec as the point of
/// its entry) and creates the QP on that session's PD (so the pool's one
/// rkey is valid on it) and shared CQ, or refuses the join: unknown or zero
/// token, session ended, more QPs than the client announced, another
/// device. Extra QPs carry only READs.
///
/// Threads: the listener thread accepts joins, the session's thread owns
/// the PD and CQ. The registry's lock orders them: the listener creates a
/// QP only inside a join, under that lock, and the session closes its entry
/// (which takes the lock) before it releases anything, so a join never
/// touches a freed PD or CQ.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

#include "transport/join_registry.h"
#include "transport/rdma/cm.h"
#include "transport/rdma/control_channel.h"
#include "transport/rdma/device.h"
#include "transport/rdma/handles.h"
#include "util/result.h"
#include "wire/messages.h"

namespace rcp::rdma {

/// Another rail of a session (rcp --rails): a device, its PD and CQ.
struct RailPoint {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  std::string dev;
};

/// What an extra queue pair of a session is created on, and the hello this
/// side sends when one joins.
struct JoinSpec {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  rdma_event_channel* ch = nullptr;  ///< the session's: joined ids move here so its poll sees their events
  uint32_t sq = 0, sge = 1;          ///< send queue (READs + 1) and SGEs per READ
  DeviceCaps caps;
  wire::Hello hello;
  /// Daemon: the session's other rails, rails[i] being rail i + 1 (the
  /// index a rail join names). Client: unused.
  std::vector<RailPoint> rails;
  /// Client: the rail this join is for (0: the session's first device; n:
  /// the n-th address the daemon announced, ctx/pd/cq then that rail's).
  uint8_t rail = 0;
  /// Receive depth of a rail's standby control channel (see
  /// wire::kHelloRailStandby). Client: set for the first queue pair of a
  /// rail, whose join then asks for one. Daemon: the session's depth,
  /// used when a rail join asks.
  uint32_t ctrl_depth = 0;
  /// Daemon: the rails (bit n: rail n) whose standby channel is granted. A
  /// rail gets one: a client asking on every queue pair of a rail would
  /// otherwise make the session register 2 x depth x 4 KiB more per ask.
  uint32_t standby_rails = 0;
};

/// A queue pair that joined, ready to become a lane of its session.
struct Joined {
  CmId id;
  uint32_t rd_atomic = 0;  ///< initiator depth agreed for it
  uint32_t rail = 0;       ///< the rail it was created on
  /// A rail's standby control channel, its receives posted before the
  /// queue pair connected (null: a READ-only queue pair).
  std::unique_ptr<ControlChannel> ctrl;
};

/// Client side: opens queue pair `index` (0-based) of `of` towards dst and
/// joins it to the session with the daemon's token. Its id is on spec.ch
/// when this returns, so one poll sees every QP of the session.
Result<Joined> join_session(sockaddr_storage& dst, const JoinSpec& spec, uint64_t token, uint32_t index, uint32_t of,
                            int timeout_ms, const std::string& where);

/// Daemon side: the sessions that accept extra queue pairs, by token; each
/// entry holds what its joins are created on. Refusals keep the words the
/// RDMA logs have always used.
inline constexpr JoinWording kQpJoinWording{"its session token names no session", "queue pair(s)"};
using QpJoins = JoinRegistry<Joined, JoinSpec>;

/// Listener thread: a connection request with a join hello. Creates the QP
/// on the session's PD and CQ (a rail join: on that rail's, after checking
/// that the index is one the session announced and that the request came
/// in on that rail's device), moves the id to the session's event channel
/// and accepts, all under the registry's lock; the session adopts it in its
/// next poll. Anything wrong is refused with our hello (flag kHelloJoin:
/// "your join was refused"), and only this id is lost.
Status accept_join(QpJoins& joins, CmId id, const CmEvent& req, const std::string& peer);

}  // namespace rcp::rdma
