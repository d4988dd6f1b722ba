// Proves WALK_TOTALS's two ends: the source's tally announces a growing count
// at most once an interval and the final totals exactly once, and the sink's
// check refuses every announcement a lying source could make (below what it
// began, decreasing, after the final one, or exceeded by a later FILE_BEGIN),
// with sums that saturate instead of wrapping.
#include <doctest/doctest.h>

#include <string>

#include "session/walk_totals.h"

using namespace rcp;

namespace {

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

void expect_refused(const Status& st, const std::string& what) {
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == EPROTO);
  CHECK_MESSAGE(contains(st.error().context, what), st.error().context);
}

}  // namespace

TEST_CASE("tally: the final totals once, a growing count at most once an interval") {
  WalkTally t;
  CHECK_FALSE(t.due(false, 100.0));  // starts the clock
  t.begun(10);
  CHECK_FALSE(t.due(false, 100.5));  // not an interval yet
  auto a = t.due(false, 101.0);
  REQUIRE(a);
  CHECK(a->files == 1);
  CHECK(a->bytes == 10);
  CHECK(a->final == 0);
  CHECK_FALSE(t.due(false, 105.0));  // nothing new: nothing sent
  t.begun(5);
  t.begun(0);
  CHECK_FALSE(t.due(false, 101.5));
  auto f = t.due(true, 101.6);  // the walk is over: at once, whatever the interval
  REQUIRE(f);
  CHECK(f->files == 3);
  CHECK(f->bytes == 15);
  CHECK(f->final == 1);
  CHECK(t.final_sent());
  CHECK_FALSE(t.due(true, 200.0));
  CHECK_FALSE(t.due(false, 300.0));
}

TEST_CASE("tally: start() sets the clock, so a walk whose first due() comes late still gets its growing count") {
  WalkTally t;
  t.start(10.0);
  t.begun(7);
  auto a = t.due(false, 11.5);
  REQUIRE(a);
  CHECK(a->files == 1);
  CHECK(a->final == 0);
}

TEST_CASE("tally: a short walk sends only its final totals; sizes saturate") {
  WalkTally t;
  t.begun(UINT64_MAX);
  t.begun(UINT64_MAX);
  auto f = t.due(true, 0.0);
  REQUIRE(f);
  CHECK(f->files == 2);
  CHECK(f->bytes == UINT64_MAX);
  CHECK(f->final == 1);
}

TEST_CASE("check: honest announcements pass, at every point of the walk") {
  WalkTotalsCheck c;
  CHECK(c.announce({0, 0, 0}).ok());
  CHECK(c.begin(100).ok());
  CHECK(c.announce({1, 100, 0}).ok());
  CHECK(c.announce({1, 100, 0}).ok());  // the same count again
  CHECK(c.announce({5, 4000, 0}).ok());  // a walk may run ahead of what it began
  CHECK(c.begin(50).ok());
  CHECK(c.begin(0).ok());
  CHECK(c.announce({5, 4000, 1}).ok());
  CHECK(c.final());
  CHECK(c.begin(3850).ok());
  CHECK(c.begin(0).ok());
}

TEST_CASE("check: totals below what was begun are refused") {
  WalkTotalsCheck c;
  REQUIRE(c.begin(100).ok());
  REQUIRE(c.begin(100).ok());
  expect_refused(c.announce({1, 200, 1}), "when 2 entries, 200 bytes were begun");
  expect_refused(c.announce({2, 199, 1}), "were begun");
  CHECK_FALSE(c.final());
  CHECK(c.announce({2, 200, 1}).ok());
}

TEST_CASE("check: a decreasing count or a second final one is refused") {
  WalkTotalsCheck c;
  REQUIRE(c.announce({10, 1000, 0}).ok());
  expect_refused(c.announce({9, 1000, 0}), "decreased");
  expect_refused(c.announce({10, 999, 1}), "decreased");
  REQUIRE(c.announce({10, 1000, 1}).ok());
  expect_refused(c.announce({10, 1000, 1}), "after the final one");
  expect_refused(c.announce({11, 1000, 0}), "after the final one");
}

TEST_CASE("check: a FILE_BEGIN beyond final totals is refused (a source sending more than it announced)") {
  WalkTotalsCheck c;
  REQUIRE(c.begin(10).ok());
  REQUIRE(c.announce({2, 20, 1}).ok());
  CHECK(c.begin(10).ok());  // exactly the announced totals
  expect_refused(c.begin(0), "beyond the announced totals (2 entries, 20 bytes)");
  WalkTotalsCheck bytes;
  REQUIRE(bytes.announce({2, 20, 1}).ok());
  REQUIRE(bytes.begin(15).ok());
  expect_refused(bytes.begin(6), "beyond the announced totals");
  // Before the final totals a count may be passed: it only grows.
  WalkTotalsCheck growing;
  REQUIRE(growing.announce({1, 1, 0}).ok());
  CHECK(growing.begin(1000).ok());
  CHECK(growing.begin(1000).ok());
}

TEST_CASE("check: sizes that would wrap the sum saturate and stay caught") {
  WalkTotalsCheck c;
  REQUIRE(c.announce({3, UINT64_MAX - 1, 1}).ok());
  REQUIRE(c.begin(UINT64_MAX - 1).ok());
  // UINT64_MAX - 1 + 2 would wrap to 0 and pass a naive check.
  expect_refused(c.begin(2), "beyond the announced totals");
}
