// A pull of many sources is as few sessions as one OPEN allows (cli/pull_batches.h):
// 50 named files in one module are one session; another module, an export's root, or
// more than one OPEN holds start another; --files-from lists are sent in batches.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "cli/pull_batches.h"

using namespace rcp;
using namespace rcp::cli;

namespace {

std::vector<Address> parse_all(const std::vector<std::string>& args) {
  std::vector<Address> v;
  for (auto& a : args) {
    auto r = parse_address(a);
    REQUIRE_MESSAGE(r.ok(), r.error().message());
    v.push_back(r.value());
  }
  return v;
}

std::vector<PullBatch> all(PullBatches& b) {
  std::vector<PullBatch> out;
  for (;;) {
    auto n = b.next();
    REQUIRE_MESSAGE(n.ok(), n.error().message());
    if (!n->has_value()) return out;
    out.push_back(std::move(**n));
  }
}

}  // namespace

TEST_CASE("pull batches: 50 named files in one module are one OPEN naming each") {
  std::vector<std::string> args;
  for (int i = 0; i < 50; ++i) args.push_back("h:data/dir/f" + std::to_string(i));
  args.push_back("dest");
  auto addrs = parse_all(args);
  auto b = pull_batches(addrs, "", false, false, 0, {"- *.o"});
  REQUIRE(b.ok());
  auto v = all(b.value());
  REQUIRE(v.size() == 1);
  CHECK(v[0].open.path == "data/dir/f0");
  REQUIRE(v[0].open.more.size() == 49);
  CHECK(v[0].open.more[48] == "dir/f49");
  CHECK(v[0].open.filters == std::vector<std::string>{"- *.o"});
  CHECK(v[0].expect.base == "f0");
  CHECK(v[0].expect.more.size() == 49);
  CHECK(v[0].expect.more[0] == "f1");
  CHECK(wire::open_size(v[0].open) <= wire::kOpenBudget);
}

TEST_CASE("pull batches: another module, an export's root and a full OPEN start a new session") {
  auto addrs = parse_all({"h:data/a", "h:data/b", "h:other/c", "h:other/", "h:other/d", "dest"});
  auto b = pull_batches(addrs, "", false, true, wire::kOpenRecursive, {});
  REQUIRE(b.ok());
  auto v = all(b.value());
  REQUIRE(v.size() == 4);
  CHECK(v[0].open.more == std::vector<std::string>{"b"});
  CHECK(v[1].open.path == "other/c");
  CHECK(v[1].open.more.empty());
  CHECK(v[2].root_contents);
  CHECK(v[2].expect.base.empty());
  CHECK(v[3].open.path == "other/d");

  std::vector<std::string> longs;
  for (int i = 0; i < 40; ++i) longs.push_back("h:data/" + std::string(200, 'a' + i % 26) + std::to_string(i));
  longs.push_back("dest");
  auto la = parse_all(longs);
  auto lb = pull_batches(la, "", false, false, 0, {});
  REQUIRE(lb.ok());
  auto lv = all(lb.value());
  CHECK(lv.size() > 1);
  size_t n = 0;
  for (auto& x : lv) {
    CHECK(wire::open_size(x.open) <= wire::kOpenBudget);
    std::vector<uint8_t> out;
    CHECK(wire::encode(x.open, out).ok());
    n += 1 + x.open.more.size();
  }
  CHECK(n == 40);
}

TEST_CASE("pull batches: HOST:MODULE without -r (a device module) expects the module's own name, alone") {
  auto addrs = parse_all({"h:diska", "h:diska/x", "dest"});
  auto b = pull_batches(addrs, "", false, false, 0, {});
  REQUIRE(b.ok());
  auto v = all(b.value());
  REQUIRE(v.size() == 2);
  CHECK(v[0].open.path == "diska");
  CHECK(v[0].open.more.empty());
  CHECK(v[0].expect.base == "diska");
  CHECK_FALSE(v[0].expect.tree);
  CHECK_FALSE(v[0].root_contents);
  CHECK(v[1].open.path == "diska/x");
  CHECK(v[1].expect.base == "x");
}

TEST_CASE("pull batches: --files-from sends the listed paths, relative, in batches of at most kMaxOpenPaths") {
  char path[] = "/tmp/rcp-batches-XXXXXX";
  int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  std::string text;
  for (int i = 0; i < 2500; ++i) text += "d/f" + std::to_string(i) + "\n";
  REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fd);
  auto addrs = parse_all({"h:data/base", "dest"});
  auto b = pull_batches(addrs, path, false, false, 0, {});
  REQUIRE(b.ok());
  auto v = all(b.value());
  ::unlink(path);
  REQUIRE(v.size() >= 3);
  size_t n = 0;
  for (auto& x : v) {
    CHECK((x.open.flags & wire::kOpenRelative) != 0);
    CHECK(x.open.path == "data/base");
    CHECK(x.open.more.size() <= wire::kMaxOpenPaths);
    CHECK(wire::open_size(x.open) <= wire::kOpenBudget);
    CHECK(x.expect.relative);
    CHECK(x.expect.base == x.open.more.front());
    n += x.open.more.size();
  }
  CHECK(n == 2500);
  CHECK(v[0].open.more[1] == "d/f1");
}

TEST_CASE("pull batches: --shard I/N asks for the listed paths of shard I only, each path in one shard") {
  char path[] = "/tmp/rcp-batches-XXXXXX";
  int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  std::string text;
  for (int i = 0; i < 2500; ++i) text += "d/f" + std::to_string(i) + "\n";
  REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fd);
  auto addrs = parse_all({"h:data/base", "dest"});
  std::vector<int> seen(2500, 0);
  for (uint32_t i = 0; i < 3; ++i) {
    auto b = pull_batches(addrs, path, false, false, 0, {}, ShardSpec{i, 3});
    REQUIRE(b.ok());
    size_t n = 0;
    for (auto& x : all(b.value())) {
      CHECK(x.expect.base == x.open.more.front());
      for (auto& p : x.open.more) {
        CHECK(shard_by_name(p, 3) == i);
        ++seen[std::stoi(p.substr(3))];
        ++n;
      }
    }
    CHECK((n > 600 && n < 1100));  // 833 expected
  }
  ::unlink(path);
  for (int c : seen) CHECK(c == 1);
}

TEST_CASE("pull batches: a listed path that cannot fit one OPEN beside the rules is refused, not the end of the list") {
  // Without the refusal the batch would come back empty, read as "no more":
  // the paths after it would be dropped without a word.
  char path[] = "/tmp/rcp-batches-XXXXXX";
  int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  const std::string longest(2000, 'p');
  const std::string text = "short\n" + longest + "\nafter\n";
  REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fd);
  auto addrs = parse_all({"h:data/base", "dest"});
  const std::vector<std::string> rules(2, "- " + std::string(1000, 'x'));  // fit alone, not with the long path
  auto b = pull_batches(addrs, path, false, false, 0, rules);
  REQUIRE(b.ok());
  auto first = b->next();
  REQUIRE(first.ok());
  REQUIRE(first->has_value());
  CHECK((*first)->open.more == std::vector<std::string>{"short"});
  auto second = b->next();
  ::unlink(path);
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().code == ENAMETOOLONG);
  CHECK_MESSAGE(second.error().message().find("'" + longest + "': path too long for a request") != std::string::npos,
                second.error().message());
}

TEST_CASE("pull batches: rules too big for one OPEN are refused before connecting") {
  auto addrs = parse_all({"h:data/a", "dest"});
  std::vector<std::string> rules(5, "- " + std::string(1000, 'x'));
  auto b = pull_batches(addrs, "", false, false, 0, rules);
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().code == E2BIG);
}

TEST_CASE("pull batches: may_have_more is false once the last batch is out (the progress totals are then final)") {
  SUBCASE("one module: one batch") {
    auto addrs = parse_all({"h:data/a", "h:data/b", "dest"});
    auto b = pull_batches(addrs, "", false, false, 0, {});
    REQUIRE(b.ok());
    CHECK(b->may_have_more());
    REQUIRE(b->next()->has_value());
    CHECK_FALSE(b->may_have_more());
  }
  SUBCASE("two modules: two batches") {
    auto addrs = parse_all({"h:data/a", "h:logs/b", "dest"});
    auto b = pull_batches(addrs, "", false, false, 0, {});
    REQUIRE(b.ok());
    REQUIRE(b->next()->has_value());
    CHECK(b->may_have_more());
    REQUIRE(b->next()->has_value());
    CHECK_FALSE(b->may_have_more());
  }
  SUBCASE("--files-from: more while the list goes on") {
    for (int count : {3, 2500}) {
      CAPTURE(count);
      char path[] = "/tmp/rcp-batches-XXXXXX";
      int fd = ::mkstemp(path);
      REQUIRE(fd >= 0);
      std::string text;
      for (int i = 0; i < count; ++i) text += "f" + std::to_string(i) + "\n";
      REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
      ::close(fd);
      auto addrs = parse_all({"h:data/base", "dest"});
      auto b = pull_batches(addrs, path, false, false, 0, {});
      REQUIRE(b.ok());
      int batches = 0;
      for (;;) {
        auto n = b->next();
        REQUIRE(n.ok());
        if (!n->has_value()) break;
        ++batches;
        if (!b->may_have_more()) break;
      }
      ::unlink(path);
      CHECK((count == 3 ? batches == 1 : batches >= 3));
      CHECK_FALSE(b->may_have_more());
      auto after = b->next();
      REQUIRE(after.ok());
      CHECK_FALSE(after->has_value());
    }
  }
}
