// WALK_TOTALS: both ends learn the totals, and a source that lies about them is refused.
#include <doctest/doctest.h>

#include "engine_harness.h"

// ---------------------------------------------------------------- WALK_TOTALS

namespace {
struct Totals {
  uint64_t files = 0, bytes = 0;
  bool final = false;
};
}  // namespace

TEST_CASE("walk totals: both ends learn the final totals, and the sink's progress reaches them (a skipped file too)") {
  TempDir src, dst;
  const std::string a = src.str("a"), b = src.str("b"), e = src.str("e");
  write_file(a, pattern(3 * kChunk + 7, 60));
  write_file(b, pattern(2 * kChunk, 61));
  write_file(e, {});
  write_file(dst.str("b"), pattern(2 * kChunk, 61));  // the destination has b: skipped by the quick check
  set_mtime(b, 1600000000, 5);
  set_mtime(dst.str("b"), 1600000000, 5);
  const uint64_t total = 3 * kChunk + 7 + 2 * kChunk;
  std::vector<Totals> at_source, at_sink;
  uint64_t sink_done = 0;
  SessionOptions so = options(), ko = options();
  so.on_totals = [&](uint64_t f, uint64_t n, bool fin) { at_source.push_back({f, n, fin}); };
  ko.on_totals = [&](uint64_t f, uint64_t n, bool fin) { at_sink.push_back({f, n, fin}); };
  ko.on_progress = [&](uint64_t n, uint32_t, std::string_view) { sink_done = n; };
  FakeLink link;
  SinkThread sink(link.b(), dst.str(), ko);
  Channel ch(link.a());
  auto s = run_source(ch, openers({a, b, e}), so);
  auto& k = sink.join();
  REQUIRE(s.ok());
  REQUIRE(k.ok());
  CHECK(k.value().files_skipped == 1);
  // A walk this short sends only its final totals, and each end hears them once.
  REQUIRE(at_source.size() == 1);
  REQUIRE(at_sink.size() == 1);
  for (const Totals& t : {at_source[0], at_sink[0]}) {
    CHECK(t.files == 3);
    CHECK(t.bytes == total);
    CHECK(t.final);
  }
  CHECK(sink_done == total);  // 100%, though b's bytes never crossed
}

TEST_CASE("walk totals: a walk longer than the interval sends a growing count first, then the final totals") {
  TempDir src, dst;
  const std::string a = src.str("a"), b = src.str("b"), c = src.str("c");
  write_file(a, pattern(kChunk, 67));
  write_file(b, pattern(kChunk + 1, 68));
  write_file(c, pattern(2, 69));
  std::vector<SourceOpener> v = openers({a, b, c});
  // A slow walk: the second entry takes longer than WalkTally::kInterval to open.
  v[1] = [b]() {
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    return open_source_file(AT_FDCWD, b, b, false);
  };
  std::vector<Totals> at_sink;
  SessionOptions ko = options();
  ko.on_totals = [&](uint64_t f, uint64_t n, bool fin) { at_sink.push_back({f, n, fin}); };
  FakeLink link;
  SinkThread sink(link.b(), dst.str(), ko);
  Channel ch(link.a());
  auto s = run_source(ch, std::move(v), options());
  auto& k = sink.join();
  REQUIRE(s.ok());
  REQUIRE(k.ok());
  REQUIRE(at_sink.size() >= 2);
  CHECK_FALSE(at_sink.front().final);
  CHECK(at_sink.front().files == 2);  // a and b begun, c not yet
  CHECK(at_sink.front().bytes == 2 * kChunk + 1);
  CHECK(at_sink.back().final);
  CHECK(at_sink.back().files == 3);
  CHECK(at_sink.back().bytes == 2 * kChunk + 3);
}

TEST_CASE("walk totals: a source's failed entry counts, so done never passes the totals") {
  TempDir src, dst;
  const std::string a = src.str("a");
  write_file(a, pattern(kChunk, 62));
  std::vector<Totals> at_sink;
  uint32_t files_done = 0;
  SessionOptions ko = options();
  ko.on_totals = [&](uint64_t f, uint64_t n, bool fin) { at_sink.push_back({f, n, fin}); };
  ko.on_progress = [&](uint64_t, uint32_t f, std::string_view) { files_done = f; };
  FakeLink link;
  SinkThread sink(link.b(), dst.str(), ko);
  Channel ch(link.a());
  auto s = run_source(ch, openers({src.str("missing"), a}), options());
  auto& k = sink.join();
  REQUIRE(k.ok());
  CHECK(k.value().files_failed == 1);
  REQUIRE(at_sink.size() == 1);
  CHECK(at_sink[0].files == 2);
  CHECK(at_sink[0].bytes == kChunk);
  CHECK(files_done == 2);
}

TEST_CASE("lying source: totals below what it then sends, or below what it sent, are refused by the sink") {
  SUBCASE("final totals, then a FILE_BEGIN beyond them") {
    TempDir src, dst;
    const std::string p = src.str("f");
    write_file(p, pattern(3 * kChunk, 63));
    FakeLink link;
    bool lied = false;
    link.set_hook(Side::a, [&](wire::Message& m, std::vector<wire::Message>& out) {
      if (!lied && std::holds_alternative<wire::FileBegin>(m)) {
        out.push_back(wire::WalkTotals{1, 10, 1});  // "one file of 10 bytes", then 3 chunks
        lied = true;
      }
      out.push_back(m);
    });
    Copy c = copy(link, {p}, dst.str());
    REQUIRE(lied);
    require_refused(*c.sink, "FILE_BEGIN beyond the announced totals");
    require_nothing_left(dst, "f");
  }
  SUBCASE("final totals, then a FILE_SKIPPED (an entry that failed) beyond them") {
    TempDir dst;
    FakeLink link;
    ScriptedSource s(link, pattern(kChunk, 66));
    SinkThread sink(link.b(), dst.str(), options());
    s.send(wire::FileBegin{1, 10, 0644, 0, "f"});
    s.send(wire::WalkTotals{1, 10, 1});
    s.send(wire::FileSkipped{EIO, "one more entry, failed", 0});
    require_refused(sink.join(), "beyond the announced totals");
    require_nothing_left(dst, "f");
  }
  SUBCASE("final totals below what was already begun") {
    TempDir src, dst;
    const std::string p = src.str("f");
    write_file(p, pattern(3 * kChunk, 64));
    FakeLink link;
    link.set_hook(Side::a, [&](wire::Message& m, std::vector<wire::Message>& out) {
      if (auto* t = std::get_if<wire::WalkTotals>(&m)) t->bytes -= 1;
      out.push_back(m);
    });
    Copy c = copy(link, {p}, dst.str());
    require_refused(*c.sink, "were begun");
    require_nothing_left(dst, "f");
  }
  SUBCASE("a second final WALK_TOTALS") {
    TempDir src, dst;
    const std::string p = src.str("f");
    write_file(p, pattern(kChunk, 65));
    FakeLink link;
    link.set_hook(Side::a, [&](wire::Message& m, std::vector<wire::Message>& out) {
      out.push_back(m);
      if (std::holds_alternative<wire::WalkTotals>(m)) out.push_back(m);
    });
    Copy c = copy(link, {p}, dst.str());
    require_refused(*c.sink, "WALK_TOTALS after the final one");
  }
  SUBCASE("WALK_TOTALS after FINISH") {
    TempDir dst;
    FakeLink link;
    SinkThread sink(link.b(), dst.str(), options());
    link.inject(Side::a, wire::FileBegin{1, 10, 0644, 0, "open"});  // (the session cannot end at FINISH)
    link.inject(Side::a, wire::Finish{});
    link.inject(Side::a, wire::WalkTotals{0, 0, 1});
    require_refused(sink.join(), "WALK_TOTALS after FINISH");
  }
}

TEST_CASE("absurd but consistent totals pass to the hook unchanged (the progress line clamps them)") {
  TempDir src, dst;
  const std::string p = src.str("f");
  write_file(p, pattern(kChunk, 66));
  std::vector<Totals> at_sink;
  SessionOptions ko = options();
  ko.on_totals = [&](uint64_t f, uint64_t n, bool fin) { at_sink.push_back({f, n, fin}); };
  FakeLink link;
  link.set_hook(Side::a, [&](wire::Message& m, std::vector<wire::Message>& out) {
    if (auto* t = std::get_if<wire::WalkTotals>(&m)) *t = wire::WalkTotals{wire::kMaxWalkFiles, UINT64_MAX, 1};
    out.push_back(m);
  });
  SinkThread sink(link.b(), dst.str(), ko);
  Channel ch(link.a());
  auto s = run_source(ch, openers({p}), options());
  auto& k = sink.join();
  REQUIRE(k.ok());
  CHECK(k.value().files_ok == 1);
  REQUIRE(at_sink.size() == 1);
  CHECK(at_sink[0].bytes == UINT64_MAX);
}
