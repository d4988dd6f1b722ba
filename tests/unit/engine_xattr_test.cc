// Extended attributes and ACLs (-X/-A): values and names carried, and the lies a source can tell with XATTR pieces.
#include <doctest/doctest.h>

#include "engine_harness.h"

// ---------------------------------------------------------------- -X/-A (XATTR)

namespace {
SessionOptions xattr_options(bool xattrs = true, bool acls = false) {
  SessionOptions o = options();
  o.preserve.xattrs = xattrs;
  o.preserve.acls = acls;
  return o;
}
/// An empty file 'name' with id `id`, as an honest source begins and ends it.
wire::FileEnd empty_end(uint32_t id) { return wire::FileEnd{id, 0, ScriptedSource::file_digest(0, {})}; }
}  // namespace

TEST_CASE("engine: -X carries values of 0 B to 64 KiB and 100 names; -a alone carries none") {
  const fs::path shm = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  TempDir src(shm);
  const std::string p = src.str("f");
  write_file(p, pattern(3 * kChunk + 7, 51));
  std::vector<std::pair<std::string, size_t>> want = {{"user.zero", 0}, {"user.one", 1}, {"user.p3071", 3071},
                                                       {"user.p3072", 3072}, {"user.p3073", 3073}, {"user.k4", 4096},
                                                       {"user.k64", 65536}};
  for (auto& [n, size] : want)
    if (::setxattr(p.c_str(), n.c_str(), std::string(size, 'q').data(), size, 0) != 0) {
      MESSAGE("SKIP: ", shm.string(), " keeps no ", size, "-byte xattr next to the others");  // (ext4: one block)
      return;
    }
  for (int i = 0; i < 100; ++i)
    REQUIRE(::setxattr(p.c_str(), ("user.n" + std::to_string(i)).c_str(), "v", 1, 0) == 0);
  for (bool on : {true, false}) {
    CAPTURE(on);
    TempDir out(shm);
    FakeLink link;
    Copy c = copy(link, {p}, out.str(), on ? xattr_options() : options());
    REQUIRE(c.sink->ok());
    REQUIRE(c.source->ok());
    const std::string q = out.str("f");
    CHECK(read_file(q) == read_file(p));
    for (auto& [n, size] : want) {
      std::string v(70000, '\0');
      const ssize_t got = ::getxattr(q.c_str(), n.c_str(), v.data(), v.size());
      CHECK(got == (on ? static_cast<ssize_t>(size) : -1));
    }
    CHECK((::getxattr(q.c_str(), "user.n99", nullptr, 0) == 1) == on);
  }
}

TEST_CASE("lying source: XATTR pieces out of order, unasked, unknown, late or cut short are protocol errors") {
  struct Case {
    const char* what;
    SessionOptions opt;
    std::vector<wire::Message> msgs;  // after FILE_BEGIN{1, 0, .., "f"}
    const char* words;
  };
  const std::string big(3072, 'b');
  const Case cases[] = {
      {"without -X or -A", options(), {wire::XattrPiece{1, "user.x", 1, 0, "v"}}, "f' in a session without -X or -A"},
      {"for a file not begun", xattr_options(), {wire::XattrPiece{2, "user.x", 1, 0, "v"}}, "XATTR for unknown file 2"},
      {"an ACL with -X only", xattr_options(), {wire::XattrPiece{1, "system.posix_acl_access", 1, 0, "v"}}, "not asked for"},
      {"user.* with -A only", xattr_options(false, true), {wire::XattrPiece{1, "user.x", 1, 0, "v"}}, "not asked for"},
      {"another system.* name", xattr_options(true, true), {wire::XattrPiece{1, "system.sockprotoname", 1, 0, "v"}}, "not asked for"},
      {"a value starting midway", xattr_options(), {wire::XattrPiece{1, "user.x", 9000, 3072, big}}, "starts at offset 3072"},
      {"a piece skipped", xattr_options(),
       {wire::XattrPiece{1, "user.x", 10000, 0, big}, wire::XattrPiece{1, "user.x", 10000, 6144, big}}, "3072 of 10000"},
      {"a name repeated", xattr_options(),
       {wire::XattrPiece{1, "user.x", 1, 0, "v"}, wire::XattrPiece{1, "user.x", 1, 0, "v"}}, "sent twice"},
      {"FILE_END with a value cut short", xattr_options(), {wire::XattrPiece{1, "user.x", 6000, 0, big}, empty_end(1)},
       "with its xattr 'user.x' incomplete"},
  };
  for (const Case& k : cases) {
    INFO("case: ", std::string(k.what));
    TempDir dst;
    FakeLink link;
    ScriptedSource s(link, pattern(kChunk, 52));
    SinkThread sink(link.b(), dst.str(), k.opt);
    s.send(wire::FileBegin{1, 0, 0644, 0, "f"});
    for (const auto& m : k.msgs) s.send(m);
    s.send(wire::Finish{});
    auto& r = sink.join();
    require_refused(r, k.words);
    if (!r.ok() && std::string(k.words).find("unknown file") == std::string::npos)
      CHECK_MESSAGE(r.error().context.find("/f'") != std::string::npos, "the entry is named");
  }
}

TEST_CASE("lying source: an XATTR for a hard link (its first file carries them) is a protocol error") {
  TempDir dst;
  FakeLink link;
  ScriptedSource s(link, pattern(kChunk, 53));
  SessionOptions o = xattr_options();
  o.preserve.hard_links = true;
  SinkThread sink(link.b(), dst.str(), o);
  wire::FileBegin lead{1, 0, 0644, 0, "a"};
  lead.link_to = 1;
  s.send(lead);
  s.send(empty_end(1));
  wire::FileBegin follower{2, 0, 0644, 0, "b"};
  follower.link_to = 1;
  s.send(follower);
  s.send(wire::XattrPiece{2, "user.x", 1, 0, "v"});
  s.send(wire::Finish{});
  require_refused(sink.join(), "XATTR for the hard link");
}

TEST_CASE("lying source: an XATTR after its entry's FILE_END is a protocol error") {
  // A hard link ended while its first file is still open waits, ended, in the sink.
  TempDir dst;
  FakeLink link;
  ScriptedSource s(link, pattern(kChunk, 56));
  SessionOptions o = xattr_options();
  o.preserve.hard_links = true;
  SinkThread sink(link.b(), dst.str(), o);
  wire::FileBegin lead{1, 10, 0644, 0, "a"};
  lead.link_to = 1;
  s.send(lead);
  wire::FileBegin follower{2, 0, 0644, 0, "b"};
  follower.link_to = 1;
  s.send(follower);
  s.send(empty_end(2));
  s.send(wire::XattrPiece{2, "user.x", 1, 0, "v"});
  s.send(wire::Finish{});
  require_refused(sink.join(), "XATTR after FILE_END of");
}

TEST_CASE("lying source: more than 64 MiB of xattrs held for entries not yet complete is a protocol error") {
  // 70 files begun, none ended, each with 15 values of 64 KiB (within XattrTally's 1 MiB per
  // entry): 68.8 MB, past the 64 MiB (67.1 MB) at the 69th file.
  TempDir dst;
  FakeLink link;
  ScriptedSource s(link, pattern(kChunk, 54));
  SinkThread sink(link.b(), dst.str(), xattr_options());
  const std::string value(kMaxXattrValue, 'v');
  for (uint32_t id = 1; id <= 70; ++id) {
    s.send(wire::FileBegin{id, 0, 0644, 0, "f" + std::to_string(id)});
    for (int i = 0; i < 15; ++i)
      for (const auto& p : split_xattr(id, Xattr{"user.v" + std::to_string(i), value})) s.send(p);
  }
  s.send(wire::Finish{});
  require_refused(sink.join(), "bytes of xattrs held for entries not yet complete");
  CHECK(temps_in(dst.path).empty());
}

TEST_CASE("engine: a trusted.* xattr from a source is dropped quietly where the sink may not set it") {
  TempDir dst;
  FakeLink link;
  ScriptedSource s(link, pattern(kChunk, 55));
  SessionOptions o = xattr_options();
  o.preserve.trusted_sender = false;  // rcpd receiving a push: never trusted.* or security.*
  SinkThread sink(link.b(), dst.str(), o);
  s.send(wire::FileBegin{1, 0, 0644, 0, "f"});
  s.send(wire::XattrPiece{1, "trusted.t", 1, 0, "t"});
  s.send(wire::XattrPiece{1, "security.capability", 1, 0, "c"});
  s.send(wire::XattrPiece{1, "user.u", 1, 0, "u"});
  s.send(empty_end(1));
  s.send(wire::Finish{});
  auto& r = sink.join();
  REQUIRE(r.ok());
  CHECK(r.value().files_ok == 1);
  const std::string q = dst.str("f");
  char v[8];
  CHECK(::getxattr(q.c_str(), "user.u", v, sizeof v) == 1);
  CHECK(::getxattr(q.c_str(), "trusted.t", v, sizeof v) == -1);
  CHECK(::getxattr(q.c_str(), "security.capability", v, sizeof v) == -1);
}
