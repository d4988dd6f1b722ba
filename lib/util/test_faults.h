/// Test-only fault switches, read from the environment variable
/// RCP_TEST_FAULT ("source-corrupt=N,sink-corrupt-once=N,...", comma
/// separated) in this one place and nowhere else. They exist so the suites
/// can prove that corruption is caught, that a version mismatch and a wrong
/// join token are refused, and that a killed peer costs nothing. Compiled in
/// and inert unless the variable is set; production options never carry them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rcp {

struct TestFaults {
  int64_t source_corrupt = -1;     ///< flip a byte of the N-th chunk after hashing (every fetch sees it)
  int64_t sink_corrupt_once = -1;  ///< flip a byte of the N-th chunk read, first attempt only
  int64_t fsync_fail = -1;         ///< the sink's N-th --fsync (0 = first) completes with EIO
  bool fsync_park = false;         ///< the sink holds its --fsync fsyncs back until FINISH (the bound's test)
  int source_delay_ms = 0;         ///< pause before announcing each chunk
  /// While this file exists, the source holds every chunk after its first: a suite starts
  /// a copy, sees it writing, acts (a signal, a vanished file), then removes the file. A
  /// per-chunk delay alone raced: an ASan build in the TCG guest once finished a 48-chunk
  /// pull at 40 ms a chunk before the suite had seen it start.
  std::string source_hold;
  int protocol_version = -1;       ///< speak this protocol version instead of ours
  bool rdma_bad_join_token = false;  ///< quote a join token one bit off
  int rdma_rail_index = 0;         ///< rcp --rails: every rail join names this rail (a lying client)
  bool rdma_join_plain = false;    ///< rcp --rails: a rail's QPs join as plain data QPs (no rail named) over its device
  bool rdma_rail_keys_lie = false; ///< rcpd: RAIL_KEYS for 4 more registrations than it made (a lying daemon)
  bool rdma_hello_one_qp = false;  ///< rcp: its hello announces 1 QP (as no protocol-11 client does), --streams 1 otherwise
  bool rdma_credit_overrun = false; ///< rcp: credit-only sends without end, ignoring credits (a flooding client)
  /// A peer that reads slowly but within its credits (rdmapeer unread-answers): a receive that
  /// carried a message is never posted again (only credit-only ones are), and the last credit
  /// carries a message too (no reserve for grants). It keeps the other side at one credit,
  /// enough for grants but never for an answer, while its own messages keep flowing.
  bool rdma_hoard_receives = false;
  bool rdma_standby_junk = false;  ///< rcpd: a message other than CONTROL_MOVED first on a standby control channel
  int rdma_rail_stats_lie = 0;     ///< rcpd's RAIL_STATS lie: 1 = rail 0 read 1 TiB more, 2 = names rail 3 for rail 0
  bool rdma_moved_lie = false;     ///< CONTROL_MOVED claims 1000 more of the peer's sends than were taken
  bool rdma_no_standby = false;    ///< rcpd: keep no standby control channel on a rail (as a daemon before them)
  bool rdma_standby_every = false; ///< rcp: ask for a standby control channel on every rail QP (a greedy client)
  bool rdma_rail_silent = false;   ///< rcpd: never answer a rail join (as a rail whose link loses every CM message)
  uint32_t rdma_srq_sessions = 0;  ///< rcpd: a shared receive queue serves this many sessions (0: kSessionsPerSrq)
  bool rdma_rail_late = false;     ///< rcpd: register memory on no rail but the first at once (as for queue pairs picked up late)
  int64_t tamper_control = -1;     ///< flip a bit of the N-th control message sealed with a MAC, after sealing
  bool auth_bad_proof = false;     ///< daemon: answer a good client proof with a wrong proof (an impostor)
  bool auth_skip = false;          ///< daemon: answer AUTH_REQUEST with OPEN_OK (an impostor that skips auth)
  std::string auth_module;         ///< rcp: authenticate for this module, then open the one asked for (a lying client)
  bool auth_then_done = false;     ///< rcp: after authenticating, send DONE where OPEN belongs (a lying client)
  bool zerocopy_local = false;     ///< TCP: keep zero-copy sends to a local peer (so loopback suites exercise them)
};

/// Parses a fault string (pure; for tests). Unknown keys are ignored.
TestFaults parse_test_faults(std::string_view spec);
/// The process's faults: RCP_TEST_FAULT parsed once, on first use.
const TestFaults& test_faults();

}  // namespace rcp
