// Small files sent whole (SMALL_FILE): which files and sessions use it, the
// sink's checks against a lying source, the source's against a lying sink.
#include <doctest/doctest.h>

#include "engine_harness.h"
#include "session/loop.h"
#include "session/small_file.h"

namespace {

/// Counts what the source sends: SMALL_FILEs and FILE_BEGINs.
struct Sent {
  int whole = 0, begun = 0;
  void watch(FakeLink& link) {
    link.set_hook(Side::a, [this](wire::Message& m, std::vector<wire::Message>& out) {
      whole += std::holds_alternative<wire::SmallFile>(m);
      begun += std::holds_alternative<wire::FileBegin>(m);
      out.push_back(m);
    });
  }
};

/// A SMALL_FILE as an honest source sends it: the digest of its bytes.
wire::SmallFile whole(uint32_t id, const std::string& name, const std::vector<uint8_t>& data) {
  wire::SmallFile m{wire::FileBegin{id, data.size(), 0644, 1600000000000000000, name}, {},
                    std::string(data.begin(), data.end())};
  m.digest = digest_of(Checksum::xxh128, {data.data(), data.size()});
  return m;
}

}  // namespace

TEST_CASE("small files: 1 to kMaxFileData bytes go whole where the message fits; the rest begin and end") {
  TempDir src;
  const std::vector<size_t> sizes = {0, 1, 100, 3000, wire::kMaxFileData, wire::kMaxFileData + 1, kChunk + 3};
  std::vector<std::string> paths, names;
  for (size_t i = 0; i < sizes.size(); ++i) names.push_back("f" + std::to_string(i));
  // 3,900 bytes under a 250-byte name: too long a record for an RDMA receive buffer.
  names.push_back(std::string(250, 'n'));
  for (size_t i = 0; i < names.size(); ++i) {
    paths.push_back(src.str(names[i]));
    write_file(paths.back(), pattern(i < sizes.size() ? sizes[i] : 3900, static_cast<uint32_t>(i + 40)));
  }
  struct Case {
    size_t max_message;
    int whole;
  };
  // As over RDMA (kMaxMessage): 1, 100 and 3,000 bytes; the 4 KiB file's record
  // is a few bytes too long. As over TCP (kMaxLargeMessage): those, the 4 KiB
  // file and the long name's.
  for (Case k : {Case{wire::kMaxMessage, 3}, Case{wire::kMaxLargeMessage, 5}}) {
    CAPTURE(k.max_message);
    TempDir out;
    FakeLink link({.max_message = k.max_message});
    Sent sent;
    sent.watch(link);
    Copy c = copy(link, paths, out.str(), options());
    REQUIRE(c.source->ok());
    REQUIRE(c.sink->ok());
    CHECK(c.sink->value().files_ok == paths.size());
    CHECK(c.source->value().files_ok == paths.size());
    CHECK(sent.whole == k.whole);
    CHECK(sent.begun == static_cast<int>(paths.size()) - k.whole);
    for (size_t i = 0; i < names.size(); ++i)
      CHECK(read_file(out.str(names[i])) == pattern(i < sizes.size() ? sizes[i] : 3900, static_cast<uint32_t>(i + 40)));
    CHECK(c.sink->value().bytes_pulled == c.source->value().bytes_pulled);
    CHECK(c.sink->value().bytes == c.source->value().bytes);
    CHECK(temps_in(out.path).empty());
  }
}

TEST_CASE("small files: a session that needs a file's chunks sends none whole, nor a source with --direct or --bwlimit") {
  struct Case {
    const char* what;
    std::function<void(SessionOptions&)> set;
    bool session;  // small_files_whole: both ends' answer
    bool sent;     // the source sent it whole
  };
  const Case cases[] = {
      {"plain (the control: sent whole)", [](SessionOptions&) {}, true, true},
      {"-n", [](SessionOptions& o) { o.rules.dry_run = true; }, false, false},
      {"-c", [](SessionOptions& o) { o.rules.checksum = true; }, false, false},
      {"--partial", [](SessionOptions& o) { o.rules.partial = true; }, false, false},
      {"--fsync", [](SessionOptions& o) { o.fsync = true; }, false, false},
      {"-X", [](SessionOptions& o) { o.preserve.xattrs = true; }, false, false},
      {"-A", [](SessionOptions& o) { o.preserve.acls = true; }, false, false},
      {"-S", [](SessionOptions& o) { o.preserve.sparse = true; }, false, false},
      {"--direct (the source's own)", [](SessionOptions& o) { o.direct = true; }, true, false},
      {"--bwlimit (the source's own)", [](SessionOptions& o) { o.bwlimit = 1u << 30; }, true, false},
  };
  for (const Case& k : cases) {
    CAPTURE(k.what);
    TempDir src, dst;
    const std::string p = src.str("f");
    write_file(p, pattern(200, 3));
    SessionOptions opt = options();
    k.set(opt);
    CHECK(small_files_whole(opt) == k.session);
    FakeLink link;
    Sent sent;
    sent.watch(link);
    Copy c = copy(link, {p}, dst.str(), opt);
    REQUIRE(c.source->ok());
    REQUIRE(c.sink->ok());
    CHECK(c.sink->value().files_ok == 1);
    CHECK(sent.whole == (k.sent ? 1 : 0));
    CHECK(sent.begun == 1 - sent.whole);
    if (!opt.rules.dry_run) CHECK(read_file(dst.str("f")) == pattern(200, 3));
  }
}

TEST_CASE("small files: a sink with its own --direct or --bwlimit takes a file sent whole") {
  for (int which : {0, 1}) {
    CAPTURE(which);
    TempDir src, dst;
    const std::string p = src.str("f");
    write_file(p, pattern(300, 4));
    SessionOptions so = options(), ko = options();
    if (which == 0) ko.direct = true;
    if (which == 1) ko.bwlimit = 1u << 30;
    FakeLink link;
    Sent sent;
    sent.watch(link);
    SinkThread sink(link.b(), dst.str(), ko);
    Channel ch(link.a());
    auto r = run_source(ch, openers({p}), so);
    auto& k = sink.join();
    REQUIRE(r.ok());
    REQUIRE(k.ok());
    CHECK(sent.whole == 1);
    CHECK(k.value().files_ok == 1);
    CHECK(read_file(dst.str("f")) == pattern(300, 4));
  }
}

TEST_CASE("small files: with -H a file of several links begins and ends (its group needs a leader)") {
  TempDir src, dst;
  const std::string a = src.str("a"), b = src.str("b");
  write_file(a, pattern(50, 9));
  REQUIRE(::link(a.c_str(), b.c_str()) == 0);
  SessionOptions opt = options();
  opt.preserve.hard_links = true;
  FakeLink link;
  Sent sent;
  sent.watch(link);
  Copy c = copy(link, {a, b}, dst.str(), opt);
  REQUIRE(c.source->ok());
  REQUIRE(c.sink->ok());
  CHECK(sent.whole == 0);
  struct stat sa {}, sb {};
  REQUIRE(::stat(dst.str("a").c_str(), &sa) == 0);
  REQUIRE(::stat(dst.str("b").c_str(), &sb) == 0);
  CHECK(sa.st_ino == sb.st_ino);
}

TEST_CASE("lying source: a SMALL_FILE whose bytes differ from its digest fails that file only, nothing of it written") {
  TempDir dst;
  FakeLink link;
  SinkThread sink(link.b(), dst.str(), options());
  ScriptedSource s(link, {});
  wire::SmallFile bad = whole(1, "bad", pattern(300, 1));
  bad.data[17] ^= 1;
  s.send(bad);
  s.send(whole(2, "good", pattern(300, 2)));
  s.send(wire::Finish{});
  auto& r = sink.join();
  REQUIRE(r.ok());
  CHECK(r.value().files_failed == 1);
  CHECK(r.value().files_ok == 1);
  REQUIRE(!r.value().errors.empty());
  INFO(r.value().errors.front());
  CHECK(r.value().errors.front().find("bad' failed xxh128 verification") != std::string::npos);
  require_nothing_left(dst, "bad");
  CHECK(read_file(dst.str("good")) == pattern(300, 2));
}

TEST_CASE("sink: refuses a SMALL_FILE in a session that needs chunks, after FINISH, with an id reused, a digest of the wrong length") {
  TempDir dst;
  SUBCASE("in a dry run") {
    FakeLink link;
    SessionOptions o = options();
    o.rules.dry_run = true;
    SinkThread sink(link.b(), dst.str(), o);
    ScriptedSource s(link, {});
    s.send(whole(1, "f", pattern(10, 1)));
    require_refused(sink.join(), "SMALL_FILE in a session whose files need their chunks");
    require_nothing_left(dst, "f");
  }
  SUBCASE("after FINISH") {
    FakeLink link;
    SinkThread sink(link.b(), dst.str(), options());
    ScriptedSource s(link, {});
    // A file still open keeps the session from ending at FINISH, before
    // the SMALL_FILE arrives (without it, ASan's slower sink finished first).
    s.send(wire::FileBegin{2, 10, 0644, 0, "open"});
    s.send(wire::Finish{});
    s.send(whole(1, "f", pattern(10, 1)));
    require_refused(sink.join(), "SMALL_FILE after FINISH");
  }
  SUBCASE("an id used before") {
    FakeLink link;
    SinkThread sink(link.b(), dst.str(), options());
    ScriptedSource s(link, {});
    s.send(whole(4, "f", pattern(10, 1)));
    s.send(whole(4, "g", pattern(10, 2)));
    require_refused(sink.join(), "file id reused");
    CHECK_FALSE(exists(dst.str("g")));
  }
  SUBCASE("an id of a file begun and not ended") {
    FakeLink link;
    SinkThread sink(link.b(), dst.str(), options());
    ScriptedSource s(link, {});
    s.send(wire::FileBegin{5, 100, 0644, 0, "big"});
    s.send(whole(5, "g", pattern(10, 2)));
    require_refused(sink.join(), "file id reused");
  }
  SUBCASE("a digest of the wrong length") {
    FakeLink link;
    SinkThread sink(link.b(), dst.str(), options());
    ScriptedSource s(link, {});
    wire::SmallFile m = whole(1, "f", pattern(10, 1));
    m.digest.len = 8;
    s.send(m);
    require_refused(sink.join(), "chunk digest has the wrong length");
    require_nothing_left(dst, "f");
  }
  SUBCASE("more files than the final WALK_TOTALS") {
    FakeLink link;
    SinkThread sink(link.b(), dst.str(), options());
    ScriptedSource s(link, {});
    s.send(wire::WalkTotals{0, 0, 1});
    s.send(whole(1, "f", pattern(10, 1)));
    auto& r = sink.join();
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EPROTO);
    require_nothing_left(dst, "f");
  }
}

TEST_CASE("lying sink: a result for a SMALL_FILE claiming bytes reused or more than its size pulled") {
  for (int lie : {0, 1}) {
    CAPTURE(lie);
    TempDir src, dst;
    const std::string p = src.str("f");
    write_file(p, pattern(100, 5));
    FakeLink link;
    link.set_hook(Side::b, [lie](wire::Message& m, std::vector<wire::Message>& out) {
      if (auto* r = std::get_if<wire::FileResult>(&m)) {
        if (lie == 0) r->matched = 1;
        if (lie == 1) r->pulled = 101;
      }
      out.push_back(m);
    });
    Copy c = copy(link, {p}, dst.str(), options());
    require_refused(*c.source, "does not fit the file");
  }
}

TEST_CASE("small files: a file shorter than it was listed ends the session naming it, as a chunk's short read does") {
  TempDir src, dst;
  const std::string p = src.str("f");
  write_file(p, pattern(300, 8));
  FakeLink link;
  SinkThread sink(link.b(), dst.str(), options());
  Channel ch(link.a());
  std::vector<SourceOpener> ops;
  ops.push_back([p]() -> Result<SourceFile> {
    RCP_ASSIGN(SourceFile sf, open_source_file(AT_FDCWD, p, p, false));
    REQUIRE(::truncate(p.c_str(), 100) == 0);  // shrinks after its size was taken
    return sf;
  });
  auto r = run_source(ch, std::move(ops), options());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().context.find("shrank while being sent (EOF at 100)") != std::string::npos);
  (void)sink.join();
  require_nothing_left(dst, "f");
}
