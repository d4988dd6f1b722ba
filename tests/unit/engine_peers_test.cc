// Lying peers: every lie a source can tell the sink and a sink the source, what a pulling client accepts, and the modes a sink gives what the peer sends.
#include <doctest/doctest.h>

#include "engine_harness.h"

// ---------------------------------------------------------------- a lying source

TEST_CASE("lying source: a wrong file digest at FILE_END commits nothing, the old file stays") {
  TempDir src, dst;
  const std::string p = src.str("f");
  write_file(p, pattern(3 * kChunk + 1, 8));
  const std::vector<uint8_t> old = pattern(77, 98);
  write_file(dst.str("f"), old);
  FakeLink link;
  link.set_hook(Side::a, [](wire::Message& m, std::vector<wire::Message>& out) {
    if (auto* fe = std::get_if<wire::FileEnd>(&m)) fe->digest.bytes[0] ^= 1;
    out.push_back(m);
  });
  Copy c = copy(link, {p}, dst.str());
  REQUIRE(c.sink->ok());
  CHECK(c.sink->value().files_failed == 1);
  CHECK(c.sink->value().files_ok == 0);
  REQUIRE(c.source->ok());
  REQUIRE(c.source->value().errors.size() == 1);
  CHECK(c.source->value().errors[0].find("file digest mismatch") != std::string::npos);
  CHECK(read_file(dst.str("f")) == old);
  CHECK(temps_in(dst.path).empty());
}

TEST_CASE("lying source: FILE_END before every chunk was sent commits nothing") {
  TempDir dst;
  FakeLink link;
  ScriptedSource s(link, pattern(3 * kChunk, 10));
  SinkThread sink(link.b(), dst.str(), options());
  s.send(wire::FileBegin{1, 3 * kChunk, 0644, 0, "f"});
  auto c0 = s.chunk(1, 0, 0, kChunk);
  s.send(c0);
  // Its digest agrees with the one chunk sent: only the size gives the lie away.
  s.send(wire::FileEnd{1, 3 * kChunk, ScriptedSource::file_digest(3 * kChunk, {c0})});
  s.send(wire::Finish{});
  auto& r = sink.join();
  REQUIRE(r.ok());
  CHECK(r.value().files_failed == 1);
  REQUIRE(r.value().errors.size() == 1);
  CHECK(r.value().errors[0].find("incomplete") != std::string::npos);
  require_nothing_left(dst, "f");
}

TEST_CASE("lying source: FILE_END with another size than FILE_BEGIN is a protocol error") {
  for (int delta : {+1, -1}) {
    CAPTURE(delta);
    TempDir src, dst;
    const std::string p = src.str("f");
    write_file(p, pattern(2 * kChunk + 5, 11));
    FakeLink link;
    link.set_hook(Side::a, [delta](wire::Message& m, std::vector<wire::Message>& out) {
      if (auto* fe = std::get_if<wire::FileEnd>(&m)) fe->size += delta;
      out.push_back(m);
    });
    Copy c = copy(link, {p}, dst.str());
    require_refused(*c.sink, "FILE_END size differs");
    CHECK_FALSE(c.source->ok());  // told by the sink's ERROR
    require_nothing_left(dst, "f");
  }
}

TEST_CASE("lying source: overlapping and out-of-file chunks are protocol errors") {
  struct Case {
    const char* what;
    uint64_t offset;
    uint32_t length;
  };
  // The file is 2*kChunk; chunk [0, kChunk) is sent first, honestly.
  const Case cases[] = {
      {"the same range again", 0, kChunk},
      {"a range overlapping its end", kChunk - 1, 2},
      {"a range leaving the file", 2 * kChunk - 10, 20},
      {"a range wholly past the end", 2 * kChunk, 100},
      {"a range far past the end", uint64_t{1} << 40, 100},
  };
  for (const Case& k : cases) {
    INFO("case: ", std::string(k.what));
    TempDir dst;
    FakeLink link;
    ScriptedSource s(link, pattern(4 * kChunk, 12));
    SinkThread sink(link.b(), dst.str(), options());
    s.send(wire::FileBegin{1, 2 * kChunk, 0644, 0, "f"});
    auto c0 = s.chunk(1, 0, 0, kChunk);
    s.send(c0);
    wire::ChunkReady lie = s.chunk(1, 1, std::min<uint64_t>(k.offset, 3 * kChunk), k.length);
    lie.offset = k.offset;
    s.send(lie);
    auto c1 = s.chunk(1, 2, kChunk, kChunk);
    s.send(c1);
    s.send(wire::FileEnd{1, 2 * kChunk, ScriptedSource::file_digest(2 * kChunk, {c0, c1})});
    s.send(wire::Finish{});
    auto& r = sink.join();
    require_refused(r, "overlaps another or lies outside");
    require_nothing_left(dst, "f");
  }
}

TEST_CASE("lying source: a chunk longer than the agreed chunk size is a protocol error") {
  TempDir dst;
  FakeLink link;
  const uint64_t size = 2 * kChunk + 1;
  ScriptedSource s(link, pattern(size, 13));
  SinkThread sink(link.b(), dst.str(), options());
  s.send(wire::FileBegin{1, size, 0644, 0, "f"});
  // Everything else true: the bytes, the digests, the sizes.
  auto big = s.chunk(1, 0, 0, kChunk + 1);
  auto rest = s.chunk(1, 1, kChunk + 1, kChunk);
  s.send(big);
  s.send(rest);
  s.send(wire::FileEnd{1, size, ScriptedSource::file_digest(size, {big, rest})});
  s.send(wire::Finish{});
  auto& r = sink.join();
  require_refused(r, "exceeds the agreed");
  require_nothing_left(dst, "f");
}

TEST_CASE("lying source: a chunk whose bytes differ from its digest fails the file, nothing committed") {
  TempDir dst;
  FakeLink link;
  ScriptedSource s(link, pattern(kChunk, 14));
  SinkThread sink(link.b(), dst.str(), options());
  s.send(wire::FileBegin{1, kChunk, 0644, 0, "f"});
  auto c0 = s.chunk(1, 0, 0, kChunk);
  auto fe = wire::FileEnd{1, kChunk, ScriptedSource::file_digest(kChunk, {c0})};
  s.mem[5] ^= 1;  // after hashing: every fetch sees other bytes
  s.send(c0);
  s.send(fe);
  s.send(wire::Finish{});
  auto& r = sink.join();
  REQUIRE(r.ok());
  CHECK(r.value().files_failed == 1);
  require_nothing_left(dst, "f");
}

TEST_CASE("sink: refuses each message a source must not send, and a source's ERROR ends it") {
  struct Case {
    wire::Message m;
    const char* words;
    int code;
  };
  const Case cases[] = {
      {wire::Open{}, "unexpected OPEN", EPROTO},
      {wire::OpenOk{}, "unexpected OPEN_OK", EPROTO},
      {wire::ChunkDone{{0}}, "unexpected CHUNK_DONE", EPROTO},
      {wire::FileResult{1, 0, 0, 0, 0, ""}, "unexpected FILE_RESULT", EPROTO},
      {wire::Done{}, "unexpected DONE", EPROTO},
      {wire::EntryDeleted{"x", 0}, "unexpected ENTRY_DELETED", EPROTO},
      {wire::FileEnd{7, 0, {}}, "FILE_END for an unknown file", EPROTO},
      {wire::ErrorMsg{ENOSPC, "source says no"}, "source says no", ENOSPC},
  };
  for (const Case& k : cases) {
    INFO("case: ", std::string(k.words));
    TempDir dst;
    FakeLink link;
    SinkThread sink(link.b(), dst.str(), options());
    link.inject(Side::a, k.m);
    auto& r = sink.join();
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == k.code);
    CHECK(r.error().context.find(k.words) != std::string::npos);
  }
}

TEST_CASE("either end: a peer that hangs up, or sends bytes that are no message, ends the session naming it") {
  const std::vector<uint8_t> junk{'n', 'o', 't', ' ', 'a', ' ', 'm', 'e', 's', 's', 'a', 'g', 'e'};
  {
    TempDir dst;
    FakeLink link;
    SinkThread sink(link.b(), dst.str(), options());
    link.close(Side::a, "reset by the test");
    auto& r = sink.join();
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ECONNRESET);
    CHECK(r.error().context == "connection to fake-a lost: reset by the test");
  }
  {
    TempDir dst;
    FakeLink link;
    SinkThread sink(link.b(), dst.str(), options());
    link.inject_bytes(Side::a, junk);
    auto& r = sink.join();
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().context.rfind("fake-a: ", 0) == 0);  // the decoder's words, after the peer's name
  }
  {
    TempDir src;
    write_file(src.str() + "/f", pattern(100, 1));
    FakeLink link;
    SourceThread source(link.a(), {src.str() + "/f"}, options());
    link.inject_bytes(Side::b, junk);
    auto& r = source.join();
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().context.rfind("fake-b: ", 0) == 0);
  }
}

TEST_CASE("sink: refuses a chunk for an unknown file, after FILE_END, a reused file id, a file after FINISH") {
  TempDir dst;
  SUBCASE("chunk for an unknown file") {
    FakeLink link;
    ScriptedSource s(link, pattern(kChunk, 15));
    SinkThread sink(link.b(), dst.str(), options());
    s.send(s.chunk(3, 0, 0, 10));
    require_refused(sink.join(), "chunk for unknown file");
  }
  SUBCASE("chunk after FILE_END") {
    FakeLink link;
    ScriptedSource s(link, pattern(kChunk, 15));
    SinkThread sink(link.b(), dst.str(), options());
    s.send(wire::FileBegin{1, 20, 0644, 0, "f"});
    auto c0 = s.chunk(1, 0, 0, 10);
    s.send(c0);
    s.send(wire::FileEnd{1, 20, {}});
    s.send(s.chunk(1, 1, 10, 10));
    // Refused either while the first chunk is still active or, once the
    // short file has failed and been forgotten, as a chunk for no file.
    auto& r = sink.join();
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EPROTO);
    CHECK((r.error().context.find("chunk after FILE_END") != std::string::npos ||
           r.error().context.find("chunk for unknown file") != std::string::npos));
  }
  SUBCASE("file id reused") {
    FakeLink link;
    ScriptedSource s(link, pattern(kChunk, 15));
    SinkThread sink(link.b(), dst.str(), options());
    s.send(wire::FileBegin{2, 0, 0644, 0, "f"});
    s.send(wire::FileBegin{2, 0, 0644, 0, "g"});
    require_refused(sink.join(), "file id reused");
  }
  SUBCASE("FILE_BEGIN after FINISH") {
    FakeLink link;
    ScriptedSource s(link, pattern(kChunk, 15));
    SinkThread sink(link.b(), dst.str(), options());
    s.send(wire::FileBegin{1, 10, 0644, 0, "f"});
    s.send(wire::Finish{});
    s.send(wire::FileBegin{2, 0, 0644, 0, "g"});
    require_refused(sink.join(), "FILE_BEGIN after FINISH");
  }
  SUBCASE("FILE_SKIPPED after FINISH") {
    FakeLink link;
    ScriptedSource s(link, pattern(kChunk, 15));
    SinkThread sink(link.b(), dst.str(), options());
    s.send(wire::FileBegin{1, 10, 0644, 0, "f"});
    s.send(wire::Finish{});
    s.send(wire::FileSkipped{EIO, "gone", 0});
    require_refused(sink.join(), "FILE_SKIPPED after FINISH");
  }
  SUBCASE("more hard-link groups than the sink keeps names for") {
    FakeLink link;
    ScriptedSource s(link, pattern(kChunk, 15));
    SessionOptions o = options();
    o.preserve.hard_links = true;
    o.max_link_groups = 2;
    SinkThread sink(link.b(), dst.str(), o);
    for (uint32_t i = 1; i <= 3; ++i)
      s.send(wire::FileBegin{i, 10, 0100644, 0, "h" + std::to_string(i), 0, 0, "", "", "", 0, i});
    require_refused(sink.join(), "more than 2 hard-link groups");
  }
  SUBCASE("a chunk digest of the wrong length") {
    FakeLink link;
    ScriptedSource s(link, pattern(kChunk, 15));
    SinkThread sink(link.b(), dst.str(), options());
    s.send(wire::FileBegin{1, 10, 0644, 0, "f"});
    auto c = s.chunk(1, 0, 0, 10);
    c.digest.len = 4;
    s.send(c);
    require_refused(sink.join(), "digest has the wrong length");
  }
  CHECK(temps_in(dst.path).empty());
}

TEST_CASE("sink: a name leading out of the destination fails that file and writes nothing outside") {
  TempDir top;
  fs::create_directory(top.path / "dst");
  const std::string dst = top.str("dst");
  for (const char* name : {"../evil", "a/../../evil", "/tmp/evil", "", ".", ".."}) {
    INFO("name: ", std::string(name));
    FakeLink link;
    ScriptedSource s(link, pattern(kChunk, 22));
    SinkThread sink(link.b(), dst, options());
    s.send_file(1, name, 10, 0);
    s.send(wire::Finish{});
    auto& r = sink.join();
    REQUIRE(r.ok());
    CHECK(r.value().files_failed == 1);
    CHECK_FALSE(exists(top.str("evil")));
  }
  CHECK(fs::is_empty(top.path / "dst"));
}

TEST_CASE("sink: a read the source's memory does not cover fails the session") {
  TempDir dst;
  FakeLink link;
  ScriptedSource s(link, pattern(kChunk, 16));
  SinkThread sink(link.b(), dst.str(), options());
  s.send(wire::FileBegin{1, kChunk, 0644, 0, "f"});
  auto c = s.chunk(1, 0, 0, kChunk);
  c.addr += 1;  // one byte past the registration at its end
  s.send(c);
  auto& r = sink.join();
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EACCES);
  CHECK(link.seen().reads_refused == 1);
  require_nothing_left(dst, "f");
}

// ---------------------------------------------------------------- a lying sink

TEST_CASE("lying sink: CHUNK_DONE for a slot the source never lent is a protocol error") {
  for (uint32_t extra : {1u, 1000u}) {  // a free slot of the pool, and one past its end
    CAPTURE(extra);
    TempDir src, dst;
    const std::string p = src.str("f");
    write_file(p, pattern(kChunk / 2, 17));  // one chunk: one slot lent
    FakeLink link;
    SessionOptions opt = options();
    link.set_hook(Side::b, [&](wire::Message& m, std::vector<wire::Message>& out) {
      if (auto* d = std::get_if<wire::ChunkDone>(&m))
        d->slots.push_back(extra == 1 ? (d->slots.front() + 1) % opt.slots : d->slots.front() + extra);
      out.push_back(m);
    });
    Copy c = copy(link, {p}, dst.str(), opt);
    require_refused(*c.source, "that was not lent");
  }
}

TEST_CASE("lying sink: CHUNK_DONE for a slot already returned is a protocol error") {
  TempDir src, dst;
  const std::string p = src.str("f");
  write_file(p, pattern(kChunk / 2, 18));
  FakeLink link;
  link.set_hook(Side::b, [](wire::Message& m, std::vector<wire::Message>& out) {
    out.push_back(m);
    if (std::holds_alternative<wire::ChunkDone>(m)) out.push_back(m);  // the same credit twice
  });
  Copy c = copy(link, {p}, dst.str());
  require_refused(*c.source, "that was not lent");
}

TEST_CASE("source: refuses each message a sink must not send, and a sink's ERROR ends it") {
  struct Case {
    wire::Message m;
    const char* words;
    int code;
  };
  const Case cases[] = {
      {wire::Open{}, "unexpected OPEN", EPROTO},
      {wire::OpenOk{}, "unexpected OPEN_OK", EPROTO},
      {wire::FileBegin{1, 0, 0644, 0, "x"}, "unexpected FILE_BEGIN", EPROTO},
      {wire::ChunkReady{1, 0, 0, 1, 0, 0, {}}, "unexpected CHUNK_READY", EPROTO},
      {wire::FileEnd{1, 0, {}}, "unexpected FILE_END", EPROTO},
      {wire::Finish{}, "unexpected FINISH", EPROTO},
      {wire::WalkTotals{1, 1, 1}, "unexpected WALK_TOTALS", EPROTO},
      {wire::FileResult{42, 0, 0, 0, 0, ""}, "result for a file not sent", EPROTO},
      {wire::Done{}, "DONE before every file was answered", EPROTO},
      {wire::EntryDeleted{"x", 0}, "ENTRY_DELETED in a session without --delete", EPROTO},
      {wire::XattrPiece{1, "user.x", 0, 0, ""}, "unexpected XATTR", EPROTO},
      {wire::ErrorMsg{EDQUOT, "sink says no"}, "sink says no", EDQUOT},
  };
  for (const Case& k : cases) {
    INFO("case: ", std::string(k.words));
    TempDir src;
    const std::string p = src.str("f");
    write_file(p, pattern(3 * kChunk, 19));
    FakeLink link;
    SourceThread source(link.a(), {p}, options());
    link.inject(Side::b, k.m);
    auto& r = source.join();
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == k.code);
    CHECK(r.error().context.find(k.words) != std::string::npos);
  }
}

// ---------------------------------------------------------------- what a pulling client accepts

namespace {

/// Sends one 10-byte file named `name` (a lying source's FILE_BEGIN) and FINISH; returns the sink's result.
Result<TransferStats> send_named(const std::string& dst, const std::string& name, std::optional<ExpectedNames> expect,
                                 uint32_t mode = 0644) {
  FakeLink link;
  ScriptedSource s(link, pattern(kChunk, 31));
  SinkThread sink(link.b(), dst, options(), std::move(expect));
  s.send(wire::FileBegin{1, 10, mode, 0, name});
  auto c = s.chunk(1, 0, 0, 10);
  s.send(c);
  s.send(wire::FileEnd{1, 10, ScriptedSource::file_digest(10, {c})});
  s.send(wire::Finish{});
  return std::move(sink.join());
}

unsigned current_umask() {
  const mode_t m = ::umask(022);
  ::umask(m);
  return m;
}

unsigned mode_of(const std::string& p) {
  struct stat st;
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("lying source: a non-recursive pull accepts only the requested file's own name") {
  TempDir top;
  fs::create_directory(top.path / "home");
  const std::string home = top.str("home");
  const ExpectedNames want{"innocent.txt", false};
  for (const char* name : {".ssh/authorized_keys", "other.txt", "innocent.txt/x", "innocent.txt2", "x/innocent.txt"}) {
    INFO("name: ", std::string(name));
    auto r = send_named(home, name, want);
    REQUIRE(r.ok());
    CHECK(r.value().files_failed == 1);
    CHECK(r.value().files_ok == 0);
    REQUIRE(r.value().errors.size() == 1);
    CHECK(r.value().errors[0].find("not what was asked for") != std::string::npos);
    CHECK(fs::is_empty(top.path / "home"));  // nothing written, no directory made
  }
  // The name asked for arrives.
  auto r = send_named(home, "innocent.txt", want);
  REQUIRE(r.ok());
  CHECK(r.value().files_ok == 1);
  CHECK(exists(top.str("home/innocent.txt")));
}

TEST_CASE("lying source: rewriting the name of a real pull's file fails it, nothing written") {
  TempDir src, dst;
  const std::string p = src.str("innocent.txt");
  write_file(p, pattern(3 * kChunk + 5, 32));
  FakeLink link;
  link.set_hook(Side::a, [](wire::Message& m, std::vector<wire::Message>& out) {
    if (auto* fb = std::get_if<wire::FileBegin>(&m)) fb->name = ".ssh/authorized_keys";
    out.push_back(m);
  });
  SinkThread sink(link.b(), dst.str(), options(), ExpectedNames{"innocent.txt", false});
  Channel ch(link.a());
  auto src_r = run_source(ch, openers({p}), options());
  auto& r = sink.join();
  REQUIRE(r.ok());
  CHECK(r.value().files_failed == 1);
  REQUIRE(src_r.ok());
  CHECK(src_r.value().files_failed == 1);  // the source hears it failed
  CHECK(fs::is_empty(dst.path));
}

TEST_CASE("lying source: a recursive pull accepts only names beneath the requested base") {
  TempDir top;
  fs::create_directory(top.path / "dst");
  const std::string dst = top.str("dst");
  const ExpectedNames want{"tree", true};
  for (const char* name : {"other/x", "treex/y", "tree/../x", "../tree/x", "/tree/x", ".ssh/authorized_keys", "x"}) {
    INFO("name: ", std::string(name));
    auto r = send_named(dst, name, want);
    REQUIRE(r.ok());
    CHECK(r.value().files_failed == 1);
    CHECK(fs::is_empty(top.path / "dst"));
  }
  CHECK_FALSE(exists(top.str("x")));
  for (const char* name : {"tree", "tree/a", "tree/b/c"}) {
    INFO("name: ", std::string(name));
    auto r = send_named(dst, name, want);
    REQUIRE(r.ok());
    CHECK(r.value().files_ok == 1);
    fs::remove_all(top.path / "dst" / "tree");
  }
}

// ---------------------------------------------------------------- modes from the peer

TEST_CASE("sink: modes from the wire lose setuid, setgid and sticky and get the umask") {
  TempDir dst;
  const unsigned um = current_umask();
  auto r = send_named(dst.str(), "f", std::nullopt, 07777);
  REQUIRE(r.ok());
  REQUIRE(r.value().files_ok == 1);
  CHECK(mode_of(dst.str("f")) == (0777 & ~um));
}

TEST_CASE("sink: a file replacing an existing one keeps that file's mode") {
  TempDir dst;
  write_file(dst.str("f"), pattern(3, 33));
  REQUIRE(::chmod(dst.str("f").c_str(), 0600) == 0);
  auto r = send_named(dst.str(), "f", std::nullopt, 0666);
  REQUIRE(r.ok());
  REQUIRE(r.value().files_ok == 1);
  CHECK(mode_of(dst.str("f")) == 0600);
  CHECK(read_file(dst.str("f")).value().size() == 10);  // replaced all the same
}

TEST_CASE("sink: a directory entry never widens an existing directory; a new one gets mode less umask") {
  TempDir dst;
  const unsigned um = current_umask();
  fs::create_directory(dst.path / "d");
  REQUIRE(::chmod(dst.str("d").c_str(), 0700) == 0);
  FakeLink link;
  ScriptedSource s(link, pattern(kChunk, 34));
  SinkThread sink(link.b(), dst.str(), options());
  s.send(wire::FileBegin{1, 0, S_IFDIR | 0777, 0, "d"});
  s.send(wire::FileEnd{1, 0, ScriptedSource::file_digest(0, {})});
  s.send(wire::FileBegin{2, 0, S_IFDIR | 02777, 0, "n"});
  s.send(wire::FileEnd{2, 0, ScriptedSource::file_digest(0, {})});
  s.send(wire::Finish{});
  auto& r = sink.join();
  REQUIRE(r.ok());
  CHECK(r.value().files_ok == 2);
  CHECK(mode_of(dst.str("d")) == 0700);
  CHECK(mode_of(dst.str("n")) == (0777 & ~um));
}
