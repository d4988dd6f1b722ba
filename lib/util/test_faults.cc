#include "util/test_faults.h"

#include <cstdlib>
#include <string>

namespace rcp {

TestFaults parse_test_faults(std::string_view spec) {
  TestFaults f;
  size_t i = 0;
  while (i < spec.size()) {
    size_t j = spec.find(',', i);
    if (j == std::string_view::npos) j = spec.size();
    std::string item(spec.substr(i, j - i));
    size_t eq = item.find('=');
    std::string k = item.substr(0, eq);
    long long v = eq == std::string::npos ? 0 : std::atoll(item.c_str() + eq + 1);
    if (k == "source-corrupt") f.source_corrupt = v;
    if (k == "sink-corrupt-once") f.sink_corrupt_once = v;
    if (k == "fsync-fail") f.fsync_fail = v;
    if (k == "fsync-park") f.fsync_park = true;
    if (k == "source-delay-ms") f.source_delay_ms = static_cast<int>(v);
    if (k == "source-hold" && eq != std::string::npos) f.source_hold = item.substr(eq + 1);
    if (k == "protocol-version") f.protocol_version = static_cast<int>(v);
    if (k == "rdma-bad-join-token") f.rdma_bad_join_token = true;
    if (k == "rdma-rail-index") f.rdma_rail_index = static_cast<int>(v);
    if (k == "rdma-join-plain") f.rdma_join_plain = true;
    if (k == "rdma-rail-keys-lie") f.rdma_rail_keys_lie = true;
    if (k == "rdma-standby-junk") f.rdma_standby_junk = true;
    if (k == "rdma-credit-overrun") f.rdma_credit_overrun = true;
    if (k == "rdma-hoard-receives") f.rdma_hoard_receives = true;
    if (k == "rdma-hello-one-qp") f.rdma_hello_one_qp = true;
    if (k == "rdma-rail-stats-lie") f.rdma_rail_stats_lie = static_cast<int>(v);
    if (k == "tamper-control") f.tamper_control = v;
    if (k == "rdma-moved-lie") f.rdma_moved_lie = true;
    if (k == "rdma-no-standby") f.rdma_no_standby = true;
    if (k == "rdma-standby-every") f.rdma_standby_every = true;
    if (k == "rdma-rail-silent") f.rdma_rail_silent = true;
    if (k == "rdma-rail-late") f.rdma_rail_late = true;
    if (k == "rdma-srq-sessions" && v > 0) f.rdma_srq_sessions = static_cast<uint32_t>(v);
    if (k == "auth-bad-proof") f.auth_bad_proof = true;
    if (k == "auth-skip") f.auth_skip = true;
    if (k == "auth-module" && eq != std::string::npos) f.auth_module = item.substr(eq + 1);
    if (k == "auth-then-done") f.auth_then_done = true;
    if (k == "zerocopy-local") f.zerocopy_local = true;
    i = j + 1;
  }
  return f;
}

const TestFaults& test_faults() {
  static const TestFaults f = [] {
    const char* env = std::getenv("RCP_TEST_FAULT");
    return env ? parse_test_faults(env) : TestFaults{};
  }();
  return f;
}

}  // namespace rcp
