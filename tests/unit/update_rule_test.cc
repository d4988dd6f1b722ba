// rsync's quick check and the options that change it: what a sink does with
// a file the destination already has (fs/update_rule.h).
#include <doctest/doctest.h>

#include "fs/update_rule.h"

using namespace rcp;

namespace {
constexpr int64_t kT = 1700000000123456789ll;
const ExistingEntry kSame{true, true, 100, kT};
UpdateAction act(UpdateRules r, ExistingEntry e, uint64_t size = 100, int64_t mtime = kT) {
  return decide_update(r, e, size, mtime);
}
}  // namespace

TEST_CASE("quick check: same size and mtime (to the ns) skips; any difference writes") {
  CHECK(act({}, kSame) == UpdateAction::skip);
  CHECK(act({}, kSame, 101) == UpdateAction::write);
  CHECK(act({}, kSame, 100, kT + 1) == UpdateAction::write);
  CHECK(act({}, kSame, 100, kT - 1) == UpdateAction::write);
  CHECK(act({}, ExistingEntry{}) == UpdateAction::write);                     // missing: created
  CHECK(act({}, ExistingEntry{true, false, 100, kT}) == UpdateAction::write);  // not a regular file
}

TEST_CASE("-c never skips on size and mtime: content decides") {
  UpdateRules r;
  r.checksum = true;
  CHECK(act(r, kSame) == UpdateAction::write);
}

TEST_CASE("--ignore-existing, --existing, -u") {
  UpdateRules ign;
  ign.ignore_existing = true;
  CHECK(act(ign, ExistingEntry{true, true, 5, 0}) == UpdateAction::skip);
  CHECK(act(ign, ExistingEntry{}) == UpdateAction::write);
  UpdateRules ex;
  ex.existing = true;
  CHECK(act(ex, ExistingEntry{}) == UpdateAction::skip);
  CHECK(act(ex, ExistingEntry{true, true, 5, 0}) == UpdateAction::write);
  UpdateRules up;
  up.update = true;
  CHECK(act(up, ExistingEntry{true, true, 5, kT + 1}) == UpdateAction::skip);  // newer at the destination
  CHECK(act(up, ExistingEntry{true, true, 5, kT - 1}) == UpdateAction::write);
  CHECK(act(up, ExistingEntry{true, true, 5, kT}) == UpdateAction::write);  // same time, other size
}

TEST_CASE("the existing file is a basis for chunk reuse unless --whole-file") {
  CHECK(use_basis({}, kSame));
  CHECK_FALSE(use_basis({}, ExistingEntry{}));
  CHECK_FALSE(use_basis({}, ExistingEntry{true, false, 0, 0}));
  UpdateRules w;
  w.whole_file = true;
  CHECK_FALSE(use_basis(w, kSame));
}
