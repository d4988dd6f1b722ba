#include "util/test_faults.h"

#include <doctest/doctest.h>

using rcp::parse_test_faults;

TEST_CASE("test faults: an empty spec switches nothing on") {
  auto f = parse_test_faults("");
  CHECK(f.source_corrupt == -1);
  CHECK(f.source_delay_ms == 0);
  CHECK(f.source_hold.empty());
}

TEST_CASE("test faults: comma-separated keys, the hold keeps its path") {
  auto f = parse_test_faults("source-delay-ms=40,source-hold=/tmp/w/hold,source-corrupt=3");
  CHECK(f.source_delay_ms == 40);
  CHECK(f.source_hold == "/tmp/w/hold");
  CHECK(f.source_corrupt == 3);
}

TEST_CASE("test faults: a hold without a path is no hold") {
  CHECK(parse_test_faults("source-hold").source_hold.empty());
  CHECK(parse_test_faults("unknown=1,source-delay-ms=5").source_delay_ms == 5);
}

TEST_CASE("test faults: the rail switches are flags, off unless named") {
  auto none = parse_test_faults("source-delay-ms=5");
  CHECK_FALSE(none.rdma_moved_lie);
  CHECK_FALSE(none.rdma_no_standby);
  CHECK_FALSE(none.rdma_standby_every);
  CHECK_FALSE(none.rdma_rail_silent);
  CHECK_FALSE(none.rdma_rail_late);
  auto f = parse_test_faults("rdma-rail-silent,rdma-standby-every,rdma-no-standby,rdma-moved-lie,rdma-rail-late");
  CHECK(f.rdma_rail_silent);
  CHECK(f.rdma_rail_late);
  CHECK(f.rdma_standby_every);
  CHECK(f.rdma_no_standby);
  CHECK(f.rdma_moved_lie);
}

TEST_CASE("test faults: a hoarding reader (rdmapeer unread-answers) is off unless named") {
  CHECK_FALSE(parse_test_faults("rdma-credit-overrun").rdma_hoard_receives);
  CHECK(parse_test_faults("source-delay-ms=5,rdma-hoard-receives").rdma_hoard_receives);
}
