// Updating an existing destination: the quick check, chunks reused, -c, --partial, --delete, dry runs and -i, and a peer that stops reading.
#include <doctest/doctest.h>

#include <algorithm>

#include "engine_harness.h"

// ---------------------------------------------------------------- updating existing files

TEST_CASE("update: same size and mtime is skipped (STOP_FILE), nothing pulled, the file untouched") {
  TempDir src, dst;
  const std::string p = src.str("f");
  write_file(p, pattern(3 * kChunk + 5, 40));
  const std::vector<uint8_t> old = pattern(3 * kChunk + 5, 41);  // other bytes: only size and mtime agree
  write_file(dst.str("f"), old);
  set_mtime(p, 1600000000, 123456789);
  set_mtime(dst.str("f"), 1600000000, 123456789);
  FakeLink link;
  int stops = 0;
  link.set_hook(Side::b, [&](wire::Message& m, std::vector<wire::Message>& out) {
    stops += std::holds_alternative<wire::StopFile>(m);
    out.push_back(m);
  });
  Copy c = copy(link, {p}, dst.str());
  REQUIRE(c.source->ok());
  REQUIRE(c.sink->ok());
  CHECK(stops == 1);
  for (auto* r : {&c.source->value(), &c.sink->value()}) {
    CHECK(r->files_ok == 1);
    CHECK(r->files_skipped == 1);
    CHECK(r->bytes_pulled == 0);
  }
  CHECK(read_file(dst.str("f")) == old);
  CHECK(temps_in(dst.path).empty());

  SUBCASE("a different mtime (to the ns) is copied, and the copy gets the source's mtime") {
    set_mtime(dst.str("f"), 1600000000, 123456788);
    FakeLink link2;
    Copy c2 = copy(link2, {p}, dst.str());
    REQUIRE(c2.sink->ok());
    CHECK(c2.sink->value().files_skipped == 0);
    CHECK(read_file(dst.str("f")) == read_file(p));
    CHECK(mtime_ns(dst.str("f")) == 1600000000123456789ll);
  }
  SUBCASE("-c compares content: the different file is written") {
    SessionOptions opt = options();
    opt.rules.checksum = true;
    FakeLink link2;
    Copy c2 = copy(link2, {p}, dst.str(), opt);
    REQUIRE(c2.sink->ok());
    CHECK(c2.sink->value().files_skipped == 0);
    CHECK(read_file(dst.str("f")) == read_file(p));
  }
}

TEST_CASE("update: only chunks that differ are pulled; the rest is reused, verified whole") {
  TempDir src, dst;
  const std::string p = src.str("f");
  const uint64_t size = 6 * kChunk + 100;
  std::vector<uint8_t> data = pattern(size, 42);
  write_file(dst.str("f"), data);
  data[2 * kChunk + 7] ^= 0xff;  // one byte in the third chunk
  data[size - 1] ^= 0xff;        // and one in the last, short chunk
  write_file(p, data);
  set_mtime(p, 1500000000, 1);  // (files written in one clock tick share their mtime)
  for (bool whole : {false, true}) {
    CAPTURE(whole);
    if (whole) {
      write_file(dst.str("f"), pattern(size, 42));
      set_mtime(dst.str("f"), 1400000000, 0);
    }
    SessionOptions opt = options();
    opt.rules.whole_file = whole;
    FakeLink link;
    Copy c = copy(link, {p}, dst.str(), opt);
    REQUIRE(c.source->ok());
    REQUIRE(c.sink->ok());
    for (auto* r : {&c.source->value(), &c.sink->value()}) {
      CHECK(r->files_ok == 1);
      CHECK(r->files_skipped == 0);
      CHECK(r->bytes_pulled == (whole ? size : kChunk + 100));
      CHECK(r->bytes_matched == (whole ? 0 : size - kChunk - 100));
    }
    CHECK(read_file(dst.str("f")) == data);
    CHECK(temps_in(dst.path).empty());
  }
}

TEST_CASE("update: -c with identical content keeps the file, counted skipped, nothing pulled") {
  TempDir src, dst;
  const std::string p = src.str("f");
  const std::vector<uint8_t> data = pattern(4 * kChunk, 43);
  write_file(p, data);
  write_file(dst.str("f"), data);
  struct stat before;
  REQUIRE(::stat(dst.str("f").c_str(), &before) == 0);
  SessionOptions opt = options();
  opt.rules.checksum = true;
  FakeLink link;
  Copy c = copy(link, {p}, dst.str(), opt);
  REQUIRE(c.sink->ok());
  CHECK(c.sink->value().files_skipped == 1);
  CHECK(c.sink->value().bytes_pulled == 0);
  CHECK(c.sink->value().bytes_matched == 4 * kChunk);
  struct stat after;
  REQUIRE(::stat(dst.str("f").c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);  // kept, not replaced
  CHECK(mtime_ns(dst.str("f")) == mtime_ns(p));  // so the next quick check skips it
}

TEST_CASE("lying source: chunks reused from the old file still face the whole-file digest") {
  TempDir src, dst;
  const std::string p = src.str("f");
  const std::vector<uint8_t> data = pattern(3 * kChunk, 44);
  write_file(p, data);
  std::vector<uint8_t> old = data;
  old[5] ^= 1;  // first chunk differs: pulled; the other two are reused
  write_file(dst.str("f"), old);
  set_mtime(p, 1500000000, 1);
  FakeLink link;
  link.set_hook(Side::a, [](wire::Message& m, std::vector<wire::Message>& out) {
    if (auto* fe = std::get_if<wire::FileEnd>(&m)) fe->digest.bytes[0] ^= 1;
    out.push_back(m);
  });
  Copy c = copy(link, {p}, dst.str());
  REQUIRE(c.sink->ok());
  CHECK(c.sink->value().files_failed == 1);
  CHECK(c.sink->value().bytes_matched == 2 * kChunk);
  REQUIRE(c.sink->value().errors.size() == 1);
  CHECK(c.sink->value().errors[0].find("file digest mismatch") != std::string::npos);
  CHECK(read_file(dst.str("f")) == old);
  CHECK(temps_in(dst.path).empty());
}

TEST_CASE("lying sink: a STOP_FILE the sink did not mean leaves the file incomplete, never committed") {
  // A receiver that says it has the file makes the source stop sending; if it
  // then expects the data after all, the incomplete file fails verification.
  TempDir src, dst;
  const std::string p = src.str("f");
  write_file(p, pattern(8 * kChunk, 45));
  FakeLink link;
  bool sent = false;
  link.set_hook(Side::b, [&](wire::Message& m, std::vector<wire::Message>& out) {
    out.push_back(m);
    if (!sent && std::holds_alternative<wire::ChunkDone>(m)) {
      out.push_back(wire::StopFile{1});
      sent = true;
    }
  });
  Copy c = copy(link, {p}, dst.str());
  REQUIRE(sent);
  REQUIRE(c.sink->ok());
  CHECK(c.sink->value().files_failed == 1);
  REQUIRE(c.sink->value().errors.size() == 1);
  CHECK(c.sink->value().errors[0].find("incomplete") != std::string::npos);
  const bool source_says_ok = c.source->ok() && c.source->value().files_ok != 0;
  CHECK_FALSE(source_says_ok);
  require_nothing_left(dst, "f");
}

TEST_CASE("lying sink: STOP_FILE for a file not begun, results that do not fit the file") {
  SUBCASE("STOP_FILE for an unknown file") {
    TempDir src;
    const std::string p = src.str("f");
    write_file(p, pattern(3 * kChunk, 46));
    FakeLink link;
    SourceThread source(link.a(), {p}, options());
    link.inject(Side::b, wire::StopFile{42});
    require_refused(source.join(), "STOP_FILE for a file not begun");
  }
  struct Case {
    const char* what;
    uint64_t pulled, matched;
  };
  const Case cases[] = {{"more reused than the file", 0, 3 * kChunk + 1}, {"pulled more than twice", 6 * kChunk + 2, 0}};
  for (const Case& k : cases) {
    INFO("case: ", std::string(k.what));
    TempDir src, dst;
    const std::string p = src.str("f");
    write_file(p, pattern(3 * kChunk, 47));
    FakeLink link;
    link.set_hook(Side::b, [&](wire::Message& m, std::vector<wire::Message>& out) {
      if (auto* r = std::get_if<wire::FileResult>(&m)) {
        r->pulled = k.pulled;
        r->matched = k.matched;
      }
      out.push_back(m);
    });
    Copy c = copy(link, {p}, dst.str());
    require_refused(*c.source, "does not fit the file");
  }
}

TEST_CASE("lying sink: STOP_FILE for a directory is a protocol error") {
  TempDir dst;
  // A directory entry, as a recursive walk sends one (no data, no fd).
  std::vector<SourceOpener> dir{[] {
    SourceFile f;
    f.is_dir = true;
    f.meta.mode = S_IFDIR | 0755;
    f.name = f.shown = "d";
    return Result<SourceFile>(std::move(f));
  }};
  FakeLink link;
  // The sink's answer to the directory's FILE_END becomes a STOP_FILE for it.
  link.set_hook(Side::b, [&](wire::Message& m, std::vector<wire::Message>& out) {
    if (auto* r = std::get_if<wire::FileResult>(&m)) {
      out.push_back(wire::StopFile{r->file_id});
      return;
    }
    out.push_back(m);
  });
  SinkThread sink(link.b(), dst.str(), options());
  Channel ch(link.a());
  auto r = run_source(ch, dir, options());
  require_refused(r, "STOP_FILE for a directory");
}

// ---------------------------------------------------------------- --partial

TEST_CASE("--partial: a cancelled sink keeps .f.rcp-partial with what it verified; without, nothing") {
  for (bool partial : {true, false}) {
    CAPTURE(partial);
    TempDir dst;
    FakeLink link;
    const std::vector<uint8_t> data = pattern(2 * kChunk, 50);
    ScriptedSource s(link, data);
    std::atomic<bool> cancel{false};
    SessionOptions opt = options();
    opt.cancel = &cancel;
    opt.rules.partial = partial;
    SinkThread sink(link.b(), dst.str(), opt);
    s.send(wire::FileBegin{1, 2 * kChunk, 0644, 0, "f"});
    s.send(s.chunk(1, 0, 0, kChunk));  // the second chunk never comes
    std::vector<wire::Message> got;
    REQUIRE(await(link.a(), got, [](auto& v) { return count_of<wire::ChunkDone>(v) >= 1; }));
    cancel = true;
    REQUIRE_FALSE(sink.join().ok());
    CHECK_FALSE(exists(dst.str("f")));
    if (partial) {
      auto kept = read_file(dst.str(".f.rcp-partial"));
      REQUIRE(kept);
      REQUIRE(kept->size() >= kChunk);
      CHECK(std::equal(data.begin(), data.begin() + kChunk, kept->begin()));
    } else {
      CHECK(temps_in(dst.path).empty());
    }
  }
}

TEST_CASE("--partial: the next run reuses only the kept chunks whose digests match, then removes it") {
  TempDir src, dst;
  const std::string p = src.str("f");
  const std::vector<uint8_t> data = pattern(5 * kChunk + 3, 51);
  write_file(p, data);
  std::vector<uint8_t> kept(data.begin(), data.begin() + 3 * kChunk);
  kept[kChunk + 9] ^= 0x40;  // the second kept chunk is wrong: it must be pulled again
  write_file(dst.str(".f.rcp-partial"), kept);
  SessionOptions opt = options();
  opt.rules.partial = true;
  FakeLink link;
  Copy c = copy(link, {p}, dst.str(), opt);
  REQUIRE(c.source->ok());
  REQUIRE(c.sink->ok());
  for (auto* r : {&c.source->value(), &c.sink->value()}) {
    CHECK(r->files_ok == 1);
    CHECK(r->bytes_matched == 2 * kChunk);
    CHECK(r->bytes_pulled == 3 * kChunk + 3);
  }
  CHECK(read_file(dst.str("f")) == data);
  CHECK(temps_in(dst.path).empty());
}

TEST_CASE("--partial: a partial file longer than the file is cut to size; a hardlinked one is not used") {
  TempDir src, dst;
  const std::string p = src.str("f");
  const std::vector<uint8_t> data = pattern(2 * kChunk, 52);
  write_file(p, data);
  std::vector<uint8_t> longer = data;
  longer.resize(4 * kChunk, 7);
  write_file(dst.str(".f.rcp-partial"), longer);
  SessionOptions opt = options();
  opt.rules.partial = true;
  {
    FakeLink link;
    Copy c = copy(link, {p}, dst.str(), opt);
    REQUIRE(c.sink->ok());
    CHECK(c.sink->value().bytes_matched == 2 * kChunk);
    CHECK(read_file(dst.str("f")) == data);
  }
  // A partial name hardlinked to another file (say, one outside the copy)
  // is never written through: a private temp file is used instead.
  const std::vector<uint8_t> victim = pattern(100, 53);
  write_file(dst.str("victim"), victim);
  REQUIRE(::link(dst.str("victim").c_str(), dst.str(".g.rcp-partial").c_str()) == 0);
  REQUIRE(::rename(p.c_str(), src.str("g").c_str()) == 0);
  FakeLink link2;
  Copy c2 = copy(link2, {src.str("g")}, dst.str(), opt);
  REQUIRE(c2.sink->ok());
  CHECK(read_file(dst.str("g")) == data);
  CHECK(read_file(dst.str("victim")) == victim);
}

TEST_CASE("lying source with --delete: names with '..' or absolute paths prune nothing outside") {
  TempDir top;
  const std::string dst = top.str("dest"), outside = top.str("outside");
  std::filesystem::create_directories(dst + "/d");
  std::filesystem::create_directories(outside);
  for (auto f : {dst + "/d/extra", dst + "/stray", outside + "/precious"}) std::ofstream(f) << "x";
  FakeLink link;
  ScriptedSource s(link, pattern(kChunk, 31));
  PruneOptions po;
  po.root = true;  // even with the destination itself being pruned
  SinkThread sink(link.b(), dst, options(), std::nullopt, po);
  const wire::Digest empty = ScriptedSource::file_digest(0, {});
  uint32_t id = 1;
  for (const std::string& name : std::vector<std::string>{"../outside", outside, "d/../../outside", "d"}) {
    s.send(wire::FileBegin{id, 0, S_IFDIR | 0755, 0, name});
    s.send(wire::FileEnd{id, 0, empty});
    ++id;
  }
  s.send(wire::Finish{});
  auto& r = sink.join();
  REQUIRE(r.ok());
  CHECK(r->files_failed == 3);  // the three unsafe names are refused
  CHECK(std::filesystem::exists(outside + "/precious"));
  CHECK_FALSE(std::filesystem::exists(dst + "/d/extra"));  // pruning did run, inside
  CHECK_FALSE(std::filesystem::exists(dst + "/stray"));
  CHECK(r->files_deleted == 2);
}

// ---------------------------------------------------------------- -n, -i

namespace {
struct Items {
  std::vector<std::string> lines;
  std::function<void(std::string_view, unsigned, uint16_t, bool)> hook(bool sender) {
    return [this, sender](std::string_view n, unsigned type, uint16_t changes, bool deleted) {
      lines.push_back(deleted ? itemize_deleted(std::string(n), type == S_IFDIR)
                              : itemize_line(changes, type, std::string(n), sender));
    };
  }
};
}  // namespace

TEST_CASE("dry run: nothing written or pulled; both ends list what a real run then does") {
  TempDir src, dst;
  const std::string f = src.str("f"), g = src.str("g"), h = src.str("h");
  write_file(f, pattern(3 * kChunk + 5, 60));
  write_file(g, pattern(kChunk, 61));
  write_file(h, pattern(100, 62));
  set_mtime(g, 1600000000, 5);
  write_file(dst.str("g"), pattern(kChunk, 61));
  set_mtime(dst.str("g"), 1600000000, 5);  // unchanged: skipped
  write_file(dst.str("h"), pattern(7, 63));  // other size and mtime: updated
  set_mtime(dst.str("h"), 1500000000, 0);
  std::filesystem::create_directories(dst.str("old/sub"));
  write_file(dst.str("old/sub/x"), pattern(3, 64));
  const auto h_before = read_file(dst.str("h"));

  auto run = [&](bool dry, Items& at_source, Items& at_sink) {
    SessionOptions so = options(), ko = options();
    so.rules.dry_run = ko.rules.dry_run = dry;
    so.on_item = at_source.hook(true);
    ko.on_item = at_sink.hook(false);
    FakeLink link;
    SinkThread sink(link.b(), dst.str(), ko);
    Channel ch(link.a());
    Copy c;
    c.source.emplace(run_source(ch, openers({f, g, h}), so));
    c.sink.emplace(std::move(sink.join()));
    return c;
  };
  Items src_items, sink_items;
  Copy c = run(true, src_items, sink_items);
  REQUIRE(c.source->ok());
  REQUIRE(c.sink->ok());
  for (auto* r : {&c.source->value(), &c.sink->value()}) {
    CHECK(r->files_ok == 3);
    CHECK(r->files_skipped == 1);  // g; f and h would be written
    CHECK(r->bytes_pulled == 0);
    CHECK(r->bytes_matched == 0);
  }
  // Nothing changed: no f, h as it was, no temp file.
  CHECK_FALSE(exists(dst.str("f")));
  CHECK(read_file(dst.str("h")) == h_before);
  CHECK(temps_in(dst.path).empty());
  for (auto& l : src_items.lines)
    if (l[0] == '<') l[0] = '>';  // the sender's view of the same changes
  CHECK(src_items.lines == sink_items.lines);
  INFO((sink_items.lines.size() > 1 ? sink_items.lines[1] : std::string()));
  REQUIRE(sink_items.lines.size() == 2);
  CHECK(sink_items.lines[0] == ">f+++++++++ " + f.substr(f.rfind('/') + 1));
  CHECK(sink_items.lines[1].rfind(">f.st...... ", 0) == 0);

  Items real_src, real_sink;
  Copy r = run(false, real_src, real_sink);
  REQUIRE(r.sink->ok());
  // The real run did what the dry run listed, in the order its files were
  // done: h, sent whole (SMALL_FILE), may be in place before f's chunks are.
  std::sort(real_sink.lines.begin(), real_sink.lines.end());
  std::sort(sink_items.lines.begin(), sink_items.lines.end());
  CHECK(real_sink.lines == sink_items.lines);
  CHECK(r.sink->value().files_skipped == 1);
  CHECK(read_file(dst.str("f")) == read_file(f));
}

// ---------------------------------------------------------------- a peer that stops reading

namespace {
/// Types side `from` delivered so far.
std::vector<wire::MsgType> sent_by(const FakeLink& link, Side from) { return link.seen().sent[static_cast<int>(from)]; }
size_t count_type(const std::vector<wire::MsgType>& v, wire::MsgType t) { return static_cast<size_t>(std::count(v.begin(), v.end(), t)); }
}  // namespace

TEST_CASE("--delete's removals and DONE wait while the peer has not read what it was sent, then all go") {
  TempDir top;
  const std::string dst = top.str("dest");
  std::filesystem::create_directories(dst);
  for (int i = 0; i < 5; ++i) std::ofstream(dst + "/stray" + std::to_string(i)) << "x";
  FakeLink link;
  ScriptedSource s(link, pattern(kChunk, 31));
  PruneOptions po;
  po.root = true;
  link.set_unsent(Side::b, kUnsentSoft);  // the sink's transport holds 4 MiB its peer has not read
  SinkThread sink(link.b(), dst, options(), std::nullopt, po);
  s.send(wire::Finish{});
  // The removals themselves happen (they are this side's work)...
  for (int i = 0; i < 600 && std::filesystem::exists(dst + "/stray4"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE_FALSE(std::filesystem::exists(dst + "/stray4"));
  // ...their reports and DONE do not, over several of the loop's 200 ms ticks.
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  auto held = sent_by(link, Side::b);
  CHECK(count_type(held, wire::MsgType::entry_deleted) == 0);
  CHECK(count_type(held, wire::MsgType::done) == 0);
  link.set_unsent(Side::b, 0);  // the peer reads again
  auto& r = sink.join();
  REQUIRE(r.ok());
  CHECK(r->files_deleted == 5);
  auto after = sent_by(link, Side::b);
  CHECK(count_type(after, wire::MsgType::entry_deleted) == 5);
  REQUIRE_FALSE(after.empty());
  CHECK(after.back() == wire::MsgType::done);  // DONE after every removal it counts
}

TEST_CASE("a source says nothing of its own accord while its peer has not read what it was sent") {
  // 300 names that cannot be opened: 300 FILE_SKIPPED the source would
  // otherwise queue in one turn (a tree of unreadable files: as many).
  TempDir src, dst;
  std::vector<std::string> paths;
  for (int i = 0; i < 300; ++i) paths.push_back(src.str("missing" + std::to_string(i)));
  FakeLink link;
  link.set_unsent(Side::a, kUnsentSoft);
  SinkThread sink(link.b(), dst.str(), options());
  SourceThread source(link.a(), paths, options());
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  CHECK(count_type(sent_by(link, Side::a), wire::MsgType::file_skipped) == 0);
  link.set_unsent(Side::a, 0);
  auto& r = source.join();
  REQUIRE(r.ok());
  CHECK(r->files_failed == 300);
  CHECK(count_type(sent_by(link, Side::a), wire::MsgType::file_skipped) == 300);
  (void)sink.join();
}

TEST_CASE("a sink whose peer has left kMaxUnsent unread ends the session, naming the peer") {
  TempDir dst;
  FakeLink link;
  ScriptedSource s(link, pattern(kChunk, 31));
  link.set_unsent(Side::b, kMaxUnsent);  // a client that announces files and never reads the answers
  SinkThread sink(link.b(), dst.str(), options());
  s.send(wire::FileBegin{1, 0, S_IFREG | 0644, 0, "empty"});
  s.send(wire::FileEnd{1, 0, ScriptedSource::file_digest(0, {})});
  auto& r = sink.join();
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ENOBUFS);
  CHECK(r.error().message().find("fake-a does not read") != std::string::npos);
}

TEST_CASE("dry run with --delete: lists what would go, removes nothing; a real run removes exactly that") {
  TempDir top;
  const std::string dst = top.str("dest");
  std::filesystem::create_directories(dst + "/d/sub");
  for (auto p : {dst + "/d/extra", dst + "/d/sub/y", dst + "/stray"}) std::ofstream(p) << "x";
  auto run = [&](bool dry) {
    FakeLink link;
    ScriptedSource s(link, pattern(kChunk, 31));
    PruneOptions po;
    po.root = true;
    SessionOptions o = options();
    o.rules.dry_run = dry;
    Items items;
    o.on_item = items.hook(false);
    SinkThread sink(link.b(), dst, o, std::nullopt, po);
    const wire::Digest empty = ScriptedSource::file_digest(0, {});
    s.send(wire::FileBegin{1, 0, S_IFDIR | 0755, 0, "d"});
    s.send(wire::FileEnd{1, 0, empty});
    s.send(wire::Finish{});
    auto& r = sink.join();
    REQUIRE(r.ok());
    CHECK(r->files_deleted == 4);
    std::vector<wire::Message> got = take_messages(link.a());
    size_t deleted = 0;
    for (auto& m : got) deleted += std::holds_alternative<wire::EntryDeleted>(m);
    CHECK(deleted == 4);  // each reported to the source, before DONE
    CHECK(std::holds_alternative<wire::Done>(got.back()));
    std::sort(items.lines.begin(), items.lines.end());
    return items.lines;
  };
  auto listed = run(true);
  for (auto p : {dst + "/d/extra", dst + "/d/sub/y", dst + "/stray"}) CHECK(exists(p));
  const std::vector<std::string> want = {"*deleting   d/extra", "*deleting   d/sub/", "*deleting   d/sub/y",
                                         "*deleting   stray"};
  CHECK(listed == want);
  CHECK(run(false) == want);
  CHECK_FALSE(exists(dst + "/stray"));
  CHECK_FALSE(exists(dst + "/d/sub"));
}

TEST_CASE("lying sink in a dry run: data claimed pulled, or deletions DONE does not count, are refused") {
  SUBCASE("pulled bytes in a dry run") {
    TempDir src, dst;
    const std::string p = src.str("f");
    write_file(p, pattern(3 * kChunk, 65));
    SessionOptions o = options();
    o.rules.dry_run = true;
    FakeLink link;
    link.set_hook(Side::b, [&](wire::Message& m, std::vector<wire::Message>& out) {
      if (auto* r = std::get_if<wire::FileResult>(&m)) r->pulled = kChunk;
      out.push_back(m);
    });
    Copy c = copy(link, {p}, dst.str(), o);
    require_refused(*c.source, "does not fit the file");
  }
  SUBCASE("more ENTRY_DELETED than DONE's files_deleted") {
    TempDir src, dst;
    const std::string p = src.str("f");
    write_file(p, pattern(kChunk, 66));
    SessionOptions o = options();
    o.deleting = true;
    FakeLink link;
    link.set_hook(Side::b, [&](wire::Message& m, std::vector<wire::Message>& out) {
      if (std::holds_alternative<wire::Done>(m)) out.push_back(wire::EntryDeleted{"ghost", 0});
      out.push_back(m);
    });
    Copy c = copy(link, {p}, dst.str(), o);
    require_refused(*c.source, "DONE counts 0 deletions after 1 ENTRY_DELETED");
  }
}
