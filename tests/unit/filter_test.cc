// rsync's filter rules (fs/filter.h): every expectation below is what
// rsync 3.2 itself copied for the same tree and options — `rsync -r OPTS src
// dst/`, then `find dst` (the tree and the script: see the commit that added
// this file) — so these cases pin rcp to rsync's behaviour, not to our reading
// of its manual.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "fs/filter.h"

using namespace rcp;

namespace {

/// The tree rsync was run on: (path, is_dir), parents before children.
const std::vector<std::pair<std::string, bool>> kTree = {
    {"src", true},          {"src/[x]", false},   {"src/a.txt", false},     {"src/b.log", false},
    {"src/d", true},        {"src/d/a.txt", false}, {"src/d/e", true},      {"src/d/e/a.txt", false},
    {"src/d/e/f.log", false}, {"src/dir.log", true}, {"src/dir.log/z", false}, {"src/e", true},
    {"src/e/k", false},     {"src/foo", true},    {"src/foo/bar", false},   {"src/q1", false},
    {"src/x", true},        {"src/x/d", true},    {"src/x/d/a.txt", false}, {"src/x/foo", true},
    {"src/x/foo/bar", false},
};

/// What a sender walking kTree sends: an excluded directory is not entered.
std::string sent(const FilterList& f) {
  std::string out;
  std::vector<std::string> pruned;
  for (auto& [p, dir] : kTree) {
    bool below = false;
    for (auto& x : pruned) below = below || p.rfind(x + "/", 0) == 0;
    if (below) continue;
    if (f.excluded(p, dir)) {
      if (dir) pruned.push_back(p);
      continue;
    }
    out += (out.empty() ? "" : " ") + p;
  }
  return out;
}

struct Case {
  std::vector<std::pair<bool, std::string>> rules;  // (include, pattern)
  std::string expect;
};

const std::vector<Case> kRsync = {
    {{{false, R"(*.log)"}},
     "src src/[x] src/a.txt src/d src/d/a.txt src/d/e src/d/e/a.txt src/e src/e/k src/foo src/foo/bar src/q1 src/x src/x/d src/x/d/a.txt src/x/foo src/x/foo/bar"},
    {{{false, R"(d/)"}},
     "src src/[x] src/a.txt src/b.log src/dir.log src/dir.log/z src/e src/e/k src/foo src/foo/bar src/q1 src/x src/x/foo src/x/foo/bar"},
    {{{false, R"(/src/d)"}},
     "src src/[x] src/a.txt src/b.log src/dir.log src/dir.log/z src/e src/e/k src/foo src/foo/bar src/q1 src/x src/x/d src/x/d/a.txt src/x/foo src/x/foo/bar"},
    {{{false, R"(foo/bar)"}},
     "src src/[x] src/a.txt src/b.log src/d src/d/a.txt src/d/e src/d/e/a.txt src/d/e/f.log src/dir.log src/dir.log/z src/e src/e/k src/foo src/q1 src/x src/x/d src/x/d/a.txt src/x/foo"},
    {{{false, R"(d/**/a.txt)"}},
     "src src/[x] src/a.txt src/b.log src/d src/d/a.txt src/d/e src/d/e/f.log src/dir.log src/dir.log/z src/e src/e/k src/foo src/foo/bar src/q1 src/x src/x/d src/x/d/a.txt src/x/foo src/x/foo/bar"},
    {{{true, R"(*/)"}, {true, R"(*.txt)"}, {false, R"(*)"}},
     "src src/a.txt src/d src/d/a.txt src/d/e src/d/e/a.txt src/dir.log src/e src/foo src/x src/x/d src/x/d/a.txt src/x/foo"},
    {{{true, R"(d/a.txt)"}, {false, R"(a.txt)"}},
     "src src/[x] src/b.log src/d src/d/a.txt src/d/e src/d/e/f.log src/dir.log src/dir.log/z src/e src/e/k src/foo src/foo/bar src/q1 src/x src/x/d src/x/d/a.txt src/x/foo src/x/foo/bar"},
    {{{false, R"(**/e)"}},
     "src src/[x] src/a.txt src/b.log src/d src/d/a.txt src/dir.log src/dir.log/z src/foo src/foo/bar src/q1 src/x src/x/d src/x/d/a.txt src/x/foo src/x/foo/bar"},
    {{{false, R"([ab].*)"}},
     "src src/[x] src/d src/d/e src/d/e/f.log src/dir.log src/dir.log/z src/e src/e/k src/foo src/foo/bar src/q1 src/x src/x/d src/x/foo src/x/foo/bar"},
    {{{false, R"(q?)"}},
     "src src/[x] src/a.txt src/b.log src/d src/d/a.txt src/d/e src/d/e/a.txt src/d/e/f.log src/dir.log src/dir.log/z src/e src/e/k src/foo src/foo/bar src/x src/x/d src/x/d/a.txt src/x/foo src/x/foo/bar"},
    {{{false, R"(*.log/)"}},
     "src src/[x] src/a.txt src/b.log src/d src/d/a.txt src/d/e src/d/e/a.txt src/d/e/f.log src/e src/e/k src/foo src/foo/bar src/q1 src/x src/x/d src/x/d/a.txt src/x/foo src/x/foo/bar"},
    {{{false, R"(/a.txt)"}},
     "src src/[x] src/a.txt src/b.log src/d src/d/a.txt src/d/e src/d/e/a.txt src/d/e/f.log src/dir.log src/dir.log/z src/e src/e/k src/foo src/foo/bar src/q1 src/x src/x/d src/x/d/a.txt src/x/foo src/x/foo/bar"},
    {{{false, R"(src/d/***)"}},
     "src src/[x] src/a.txt src/b.log src/dir.log src/dir.log/z src/e src/e/k src/foo src/foo/bar src/q1 src/x src/x/d src/x/d/a.txt src/x/foo src/x/foo/bar"},
    {{{false, R"(d/***)"}},
     "src src/[x] src/a.txt src/b.log src/dir.log src/dir.log/z src/e src/e/k src/foo src/foo/bar src/q1 src/x src/x/foo src/x/foo/bar"},
    {{{false, R"(**/d/a.txt)"}},
     "src src/[x] src/a.txt src/b.log src/d src/d/e src/d/e/a.txt src/d/e/f.log src/dir.log src/dir.log/z src/e src/e/k src/foo src/foo/bar src/q1 src/x src/x/d src/x/foo src/x/foo/bar"},
    {{{false, R"(x/**)"}},
     "src src/[x] src/a.txt src/b.log src/d src/d/a.txt src/d/e src/d/e/a.txt src/d/e/f.log src/dir.log src/dir.log/z src/e src/e/k src/foo src/foo/bar src/q1 src/x"},
    {{{false, R"(e)"}},
     "src src/[x] src/a.txt src/b.log src/d src/d/a.txt src/dir.log src/dir.log/z src/foo src/foo/bar src/q1 src/x src/x/d src/x/d/a.txt src/x/foo src/x/foo/bar"},
    {{{false, R"(/src/*/a.txt)"}},
     "src src/[x] src/a.txt src/b.log src/d src/d/e src/d/e/a.txt src/d/e/f.log src/dir.log src/dir.log/z src/e src/e/k src/foo src/foo/bar src/q1 src/x src/x/d src/x/d/a.txt src/x/foo src/x/foo/bar"},
    {{{false, R"(src/**/a.txt)"}},
     "src src/[x] src/a.txt src/b.log src/d src/d/e src/d/e/f.log src/dir.log src/dir.log/z src/e src/e/k src/foo src/foo/bar src/q1 src/x src/x/d src/x/foo src/x/foo/bar"},
    {{{false, R"(\[x])"}},
     "src src/a.txt src/b.log src/d src/d/a.txt src/d/e src/d/e/a.txt src/d/e/f.log src/dir.log src/dir.log/z src/e src/e/k src/foo src/foo/bar src/q1 src/x src/x/d src/x/d/a.txt src/x/foo src/x/foo/bar"},
    {{{false, R"(d/e/)"}},
     "src src/[x] src/a.txt src/b.log src/d src/d/a.txt src/dir.log src/dir.log/z src/e src/e/k src/foo src/foo/bar src/q1 src/x src/x/d src/x/d/a.txt src/x/foo src/x/foo/bar"},
    {{{false, R"(**a.txt)"}},
     "src src/[x] src/b.log src/d src/d/e src/d/e/f.log src/dir.log src/dir.log/z src/e src/e/k src/foo src/foo/bar src/q1 src/x src/x/d src/x/foo src/x/foo/bar"},
};

}  // namespace

TEST_CASE("filter rules select what rsync selects on the same tree") {
  for (const Case& c : kRsync) {
    FilterList f;
    std::string shown;
    for (auto& [inc, pat] : c.rules) {
      REQUIRE(f.add(pat, inc).ok());
      shown += (inc ? " --include=" : " --exclude=") + pat;
    }
    CAPTURE(shown);
    CHECK(sent(f) == c.expect);
  }
}

TEST_CASE("wildmatch: * and ? stay inside a component, ** crosses, classes") {
  CHECK(wildmatch("*.txt", "a.txt"));
  CHECK_FALSE(wildmatch("*.txt", "d/a.txt"));
  CHECK(wildmatch("**.txt", "d/a.txt"));
  CHECK(wildmatch("a/**", "a/b/c"));
  CHECK_FALSE(wildmatch("a/**/c", "a/c"));  // rsync: "**" between slashes needs a component
  CHECK(wildmatch("?", "x"));
  CHECK_FALSE(wildmatch("?", "/"));
  CHECK_FALSE(wildmatch("?", ""));
  CHECK(wildmatch("[a-c]x", "bx"));
  CHECK_FALSE(wildmatch("[a-c]x", "dx"));
  CHECK(wildmatch("[!a-c]x", "dx"));
  CHECK(wildmatch("[^a-c]x", "dx"));
  CHECK_FALSE(wildmatch("[!a]", "/"));  // a class never matches '/'
  CHECK(wildmatch("[]]", "]"));
  CHECK(wildmatch("[", "["));           // unterminated: a literal
  CHECK(wildmatch("\\*", "*"));
  CHECK_FALSE(wildmatch("\\*", "x"));
  CHECK(wildmatch("", ""));
  CHECK_FALSE(wildmatch("", "x"));
}

TEST_CASE("wildmatch stays polynomial on a hostile pattern") {
  // Backtracking matchers take exponential time here; a peer's rule runs in the daemon.
  std::string p2;
  for (int i = 0; i < 100; ++i) p2 += "*a";
  CHECK_FALSE(wildmatch(p2 + "b", std::string(1000, 'a')));
  CHECK(wildmatch(p2, std::string(500, 'a')));
}

TEST_CASE("a rule may say which it is; ! clears; empty and over-long patterns are refused") {
  FilterList f;
  REQUIRE(f.add("+ *.keep", false).ok());
  REQUIRE(f.add("- *", true).ok());
  CHECK_FALSE(f.excluded("a.keep", false));
  CHECK(f.excluded("a.other", false));
  CHECK(f.wire() == std::vector<std::string>{"+ *.keep", "- *"});
  REQUIRE(f.add("!", false).ok());
  CHECK(f.empty());
  CHECK_FALSE(f.add("", false).ok());
  auto empty = f.add("- ", false);
  REQUIRE_FALSE(empty.ok());
  CHECK_MESSAGE(empty.error().message().find("has an empty pattern") != std::string::npos, empty.error().message());
  CHECK_FALSE(f.add("/", false).ok());
  CHECK_FALSE(f.add(std::string(kMaxFilterRuleLen + 1, 'a'), false).ok());
  CHECK(f.add(std::string(kMaxFilterRuleLen, 'a'), false).ok());
  CHECK_FALSE(f.add(std::string("a\0b", 3), false).ok());
  FilterList many;
  for (size_t i = 0; i < kMaxFilterRules; ++i) REQUIRE(many.add("x" + std::to_string(i), false).ok());
  CHECK(many.add("one-more", false).error().code == E2BIG);
}

TEST_CASE("rules from the wire: validated as a peer's bytes") {
  auto ok = FilterList::from_wire({"- *.o", "+ keep/", "- /top"});
  REQUIRE(ok.ok());
  CHECK(ok->excluded("x/y.o", false));
  CHECK(ok->excluded("top", true));
  CHECK_FALSE(ok->excluded("x/top", true));
  CHECK_FALSE(FilterList::from_wire({"*.o"}).ok());       // no prefix
  CHECK_FALSE(FilterList::from_wire({"x *.o"}).ok());
  CHECK_FALSE(FilterList::from_wire({"!"}).ok());         // no clearing from the wire
  CHECK_FALSE(FilterList::from_wire({"- "}).ok());
  CHECK_FALSE(FilterList::from_wire({"- " + std::string(kMaxFilterRuleLen + 1, 'a')}).ok());
  CHECK_FALSE(FilterList::from_wire(std::vector<std::string>(kMaxFilterRules + 1, "- a")).ok());
}

TEST_CASE("--exclude-from an endless file (/dev/zero) stops at the rules' bound, never reading it all") {
  FilterList f;
  auto r = f.add_from_file("/dev/zero", false, true);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == E2BIG);
  CHECK_MESSAGE(r.error().message().find("filter file '/dev/zero' is too long") != std::string::npos, r.error().message());
}

TEST_CASE("--exclude-from: comments and blank lines skipped, prefixes honoured, NUL-separated with --from0") {
  char path[] = "/tmp/rcp-filter-XXXXXX";
  int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  const std::string text = "# comment\n; also\n\n*.tmp\n+ keep.tmp\r\n";
  REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fd);
  FilterList f;
  REQUIRE(f.add_from_file(path, false, false).ok());
  CHECK(f.size() == 2);
  CHECK(f.excluded("a.tmp", false));
  CHECK(f.excluded("keep.tmp", false));  // first match wins: "*.tmp" comes first
  CHECK(f.wire() == std::vector<std::string>{"- *.tmp", "+ keep.tmp"});
  const std::string nul("#lit\0a b\0", 9);
  fd = ::open(path, O_WRONLY | O_TRUNC);
  REQUIRE(::write(fd, nul.data(), nul.size()) == static_cast<ssize_t>(nul.size()));
  ::close(fd);
  FilterList g;
  REQUIRE(g.add_from_file(path, false, true).ok());
  CHECK(g.excluded("#lit", false));  // no comments in a NUL-separated list
  CHECK(g.excluded("a b", false));
  ::unlink(path);
  CHECK(FilterList().add_from_file("/nonexistent/rules", false, false).error().code == ENOENT);
}
