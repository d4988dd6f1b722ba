// Metadata and entries other than files (-a): symlinks that must not lead out, modes, times, hard links.
#include <doctest/doctest.h>

#include "engine_harness.h"

// ---------------------------------------------------------------- metadata and symlinks (-a)

namespace {

SessionOptions archive_options() {
  SessionOptions o = options();
  o.preserve = Preserve::archive();
  return o;
}

wire::FileBegin symlink_entry(uint32_t id, const std::string& name, const std::string& target) {
  wire::FileBegin fb{id, 0, S_IFLNK | 0777, 0, name};
  fb.link_target = target;
  return fb;
}

}  // namespace

TEST_CASE("lying source: a symlink, then entries through it, write nothing outside the destination") {
  TempDir top;
  fs::create_directory(top.path / "dst");
  fs::create_directory(top.path / "outside");
  fs::create_directory(top.path / "dst" / "inside");
  const std::string dst = top.str("dst");
  // Absolute, relative leading out, and even one that stays inside: the
  // sink never resolves a symlink it made (or found) in the destination.
  for (const std::string& target : {top.str("outside"), std::string("../outside"), std::string("inside")}) {
    INFO("target: ", target);
    FakeLink link;
    ScriptedSource s(link, pattern(kChunk, 23));
    SinkThread sink(link.b(), dst, archive_options());
    s.send(symlink_entry(1, "l", target));
    s.send(wire::FileEnd{1, 0, ScriptedSource::file_digest(0, {})});
    s.send(wire::FileBegin{2, 10, 0644, 0, "l/evil"});
    auto c = s.chunk(2, 0, 0, 10);
    s.send(c);
    s.send(wire::FileEnd{2, 10, ScriptedSource::file_digest(10, {c})});
    s.send(wire::FileBegin{3, 0, S_IFDIR | 0755, 0, "l/sub"});
    s.send(wire::FileEnd{3, 0, ScriptedSource::file_digest(0, {})});
    s.send(symlink_entry(4, "l/deeper", "/"));
    s.send(wire::FileEnd{4, 0, ScriptedSource::file_digest(0, {})});
    s.send(wire::Finish{});
    auto& r = sink.join();
    REQUIRE(r.ok());
    CHECK(r.value().files_ok == 1);  // the symlink itself
    CHECK(r.value().files_failed == 3);
    CHECK(fs::is_symlink(top.path / "dst" / "l"));
    CHECK(fs::read_symlink(top.path / "dst" / "l").string() == target);  // verbatim
    CHECK(fs::is_empty(top.path / "outside"));
    CHECK(fs::is_empty(top.path / "dst" / "inside"));
    CHECK(temps_in(top.path / "dst").empty());
    fs::remove(top.path / "dst" / "l");
  }
}

TEST_CASE("sink: names sent twice into a directory the session made replace what it put there, never through it") {
  // place() does not lstat in a directory this session created (nothing else is in it);
  // a second entry of one name must still replace the first, never follow it.
  TempDir top;
  fs::create_directory(top.path / "dst");
  fs::create_directory(top.path / "outside");
  const std::string dst = top.str("dst");
  const auto mem = pattern(kChunk, 29);
  FakeLink link;
  ScriptedSource s(link, mem);
  SinkThread sink(link.b(), dst, archive_options());
  s.send(wire::FileBegin{1, 0, S_IFDIR | 0755, 0, "d"});
  s.send(wire::FileEnd{1, 0, ScriptedSource::file_digest(0, {})});
  s.send_file(2, "d/a", 10, 0);
  s.send(symlink_entry(3, "d/l", top.str("outside") + "/x"));
  s.send(wire::FileEnd{3, 0, ScriptedSource::file_digest(0, {})});
  s.send_file(4, "d/a", 20, 1);  // "a" again, longer
  s.send_file(5, "d/l", 7, 2);   // a file where it made a symlink
  s.send(wire::Finish{});
  auto& r = sink.join();
  REQUIRE(r.ok());
  CHECK(r.value().files_failed == 0);
  CHECK(read_file(top.str("dst/d/a")) == std::vector<uint8_t>(mem.begin(), mem.begin() + 20));
  CHECK_FALSE(fs::is_symlink(top.path / "dst" / "d" / "l"));
  CHECK(read_file(top.str("dst/d/l")) == std::vector<uint8_t>(mem.begin(), mem.begin() + 7));
  CHECK(fs::is_empty(top.path / "outside"));
  CHECK(temps_in(top.path / "dst" / "d").empty());
}

TEST_CASE("sink: a file or symlink replaces a symlink in the destination, never writes through it") {
  TempDir top;
  fs::create_directory(top.path / "dst");
  write_file(top.str("victim"), {'o', 'l', 'd'});
  fs::create_symlink(top.path / "victim", top.path / "dst" / "f");
  fs::create_symlink(top.path / "victim", top.path / "dst" / "g");
  FakeLink link;
  ScriptedSource s(link, pattern(kChunk, 24));
  SinkThread sink(link.b(), top.str("dst"), archive_options());
  s.send(wire::FileBegin{1, 10, 0644, 0, "f"});
  auto c = s.chunk(1, 0, 0, 10);
  s.send(c);
  s.send(wire::FileEnd{1, 10, ScriptedSource::file_digest(10, {c})});
  s.send(symlink_entry(2, "g", "elsewhere"));
  s.send(wire::FileEnd{2, 0, ScriptedSource::file_digest(0, {})});
  s.send(wire::Finish{});
  auto& r = sink.join();
  REQUIRE(r.ok());
  CHECK(r.value().files_ok == 2);
  CHECK(read_file(top.str("victim")) == std::vector<uint8_t>{'o', 'l', 'd'});
  CHECK(fs::is_regular_file(fs::symlink_status(top.path / "dst" / "f")));
  CHECK(fs::read_symlink(top.path / "dst" / "g") == "elsewhere");
}

TEST_CASE("sink: a symlink or special the copy did not ask for (-l, -D) is refused") {
  TempDir dst;
  FakeLink link;
  ScriptedSource s(link, pattern(kChunk, 25));
  SinkThread sink(link.b(), dst.str(), options());  // no -l, no -D
  s.send(symlink_entry(1, "l", "/etc/passwd"));
  s.send(wire::FileEnd{1, 0, ScriptedSource::file_digest(0, {})});
  s.send(wire::FileBegin{2, 0, S_IFIFO | 0644, 0, "p"});
  s.send(wire::FileEnd{2, 0, ScriptedSource::file_digest(0, {})});
  s.send(wire::Finish{});
  auto& r = sink.join();
  REQUIRE(r.ok());
  CHECK(r.value().files_failed == 2);
  CHECK_FALSE(exists(dst.str("l")));
  CHECK_FALSE(exists(dst.str("p")));
}

TEST_CASE("sink with -a: exact modes, nanosecond mtimes, directories' times after their contents") {
  TempDir dst;
  FakeLink link;
  ScriptedSource s(link, pattern(kChunk, 26));
  SinkThread sink(link.b(), dst.str(), archive_options());
  const int64_t t_dir = 981173106123456789, t_file = 1000000000000000001, t_link = 1234567890987654321;
  s.send(wire::FileBegin{1, 0, S_IFDIR | 0555, t_dir, "d"});  // read-only: still filled, then 0555
  s.send(wire::FileEnd{1, 0, ScriptedSource::file_digest(0, {})});
  s.send(wire::FileBegin{2, 10, S_IFREG | 0444, t_file, "d/f"});
  auto c = s.chunk(2, 0, 0, 10);
  s.send(c);
  s.send(wire::FileEnd{2, 10, ScriptedSource::file_digest(10, {c})});
  wire::FileBegin l = symlink_entry(3, "d/l", "f");
  l.mtime_ns = t_link;
  s.send(l);
  s.send(wire::FileEnd{3, 0, ScriptedSource::file_digest(0, {})});
  s.send(wire::FileBegin{4, 0, S_IFIFO | 0640, t_file, "d/p"});
  s.send(wire::FileEnd{4, 0, ScriptedSource::file_digest(0, {})});
  s.send(wire::Finish{});
  auto& r = sink.join();
  REQUIRE(r.ok());
  CHECK(r.value().files_failed == 0);
  auto ns = [](const struct stat& st) { return to_ns(st.st_mtim); };
  struct stat st {};
  REQUIRE(::lstat(dst.str("d").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0555);
  CHECK(ns(st) == t_dir);
  REQUIRE(::lstat(dst.str("d/f").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0444);
  CHECK(ns(st) == t_file);
  REQUIRE(::lstat(dst.str("d/l").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  CHECK(ns(st) == t_link);
  REQUIRE(::lstat(dst.str("d/p").c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK((st.st_mode & 07777) == 0640);
  ::chmod(dst.str("d").c_str(), 0755);  // so the TempDir can go
}

TEST_CASE("sink with -H: a link waits for its group's first file; a link to a file not sent as one fails") {
  TempDir dst;
  FakeLink link;
  ScriptedSource s(link, pattern(kChunk, 27));
  SessionOptions o = archive_options();
  o.preserve.hard_links = true;
  SinkThread sink(link.b(), dst.str(), o);
  wire::FileBegin first{1, 10, S_IFREG | 0644, 0, "a"};
  first.link_to = 1;
  s.send(first);
  wire::FileBegin second{2, 0, S_IFREG | 0644, 0, "b"};
  second.link_to = 1;
  s.send(second);  // ends before its first file has its data
  s.send(wire::FileEnd{2, 0, ScriptedSource::file_digest(0, {})});
  s.send(wire::FileBegin{3, 0, S_IFREG | 0644, 0, "plain"});
  s.send(wire::FileEnd{3, 0, ScriptedSource::file_digest(0, {})});
  wire::FileBegin liar{4, 0, S_IFREG | 0644, 0, "c"};
  liar.link_to = 3;  // a file that was not sent as a group's first
  s.send(liar);
  s.send(wire::FileEnd{4, 0, ScriptedSource::file_digest(0, {})});
  auto c = s.chunk(1, 0, 0, 10);
  s.send(c);
  s.send(wire::FileEnd{1, 10, ScriptedSource::file_digest(10, {c})});
  s.send(wire::Finish{});
  auto& r = sink.join();
  REQUIRE(r.ok());
  CHECK(r.value().files_ok == 3);
  CHECK(r.value().files_failed == 1);
  struct stat a {}, b {};
  REQUIRE(::stat(dst.str("a").c_str(), &a) == 0);
  REQUIRE(::stat(dst.str("b").c_str(), &b) == 0);
  CHECK(a.st_ino == b.st_ino);
  CHECK(a.st_nlink == 2);
  CHECK_FALSE(exists(dst.str("c")));
  CHECK(temps_in(dst.path).empty());
}

TEST_CASE("sink with --fsync: files appear once synced, with their bits and mtime; a link waits for its first file's fsync") {
  // The fsyncs go through the ring and complete later (session/sink.cc
  // commit_file): a file is in place, and its FILE_RESULT sent, only then,
  // and a hard link to it waits for that as it waits for the data.
  TempDir dst;
  FakeLink link;
  ScriptedSource s(link, pattern(kChunk, 29));
  SessionOptions o = archive_options();
  o.preserve.hard_links = true;
  o.fsync = true;
  SinkThread sink(link.b(), dst.str(), o);
  const int64_t t = 1'600'000'000'123'456'789;
  wire::FileBegin first{1, 10, S_IFREG | 0640, t, "a"};
  first.link_to = 1;
  s.send(first);
  auto c = s.chunk(1, 0, 0, 10);
  s.send(c);
  s.send(wire::FileEnd{1, 10, ScriptedSource::file_digest(10, {c})});
  wire::FileBegin second{2, 0, S_IFREG | 0640, t, "b"};
  second.link_to = 1;
  s.send(second);
  s.send(wire::FileEnd{2, 0, ScriptedSource::file_digest(0, {})});
  s.send(wire::FileBegin{3, 0, S_IFREG | 0600, t, "empty"});
  s.send(wire::FileEnd{3, 0, ScriptedSource::file_digest(0, {})});
  s.send(wire::Finish{});
  auto& r = sink.join();
  REQUIRE(r.ok());
  CHECK(r.value().files_ok == 3);
  CHECK(r.value().files_failed == 0);
  struct stat a {}, b {}, e {};
  REQUIRE(::stat(dst.str("a").c_str(), &a) == 0);
  REQUIRE(::stat(dst.str("b").c_str(), &b) == 0);
  REQUIRE(::stat(dst.str("empty").c_str(), &e) == 0);
  CHECK(a.st_ino == b.st_ino);
  CHECK(a.st_size == 10);
  CHECK((a.st_mode & 07777) == 0640);
  CHECK((e.st_mode & 07777) == 0600);
  CHECK(to_ns(a.st_mtim) == t);
  CHECK(to_ns(e.st_mtim) == t);
  CHECK(temps_in(dst.path).empty());
}

TEST_CASE("sink without -H: a hard link is refused") {
  TempDir dst;
  FakeLink link;
  ScriptedSource s(link, pattern(kChunk, 28));
  SinkThread sink(link.b(), dst.str(), archive_options());
  wire::FileBegin first{1, 0, S_IFREG | 0644, 0, "a"};
  first.link_to = 1;
  s.send(first);
  s.send(wire::FileEnd{1, 0, ScriptedSource::file_digest(0, {})});
  s.send(wire::Finish{});
  auto& r = sink.join();
  REQUIRE(r.ok());
  CHECK(r.value().files_failed == 1);
  CHECK_FALSE(exists(dst.str("a")));
}
