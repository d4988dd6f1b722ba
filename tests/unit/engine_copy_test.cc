// Whole copies: edge sizes, credits and sub-slots, corruption fetched again, cancellation, files the source cannot send, the bounds on files open, the pool.
#include <doctest/doctest.h>

#include "engine_harness.h"
#include "io/ring.h"
#include "session/loop.h"

// ---------------------------------------------------------------- good copies

TEST_CASE("engine: files of edge sizes arrive byte-identical, credits never exceeded") {
  TempDir src, dst;
  const std::vector<size_t> sizes = {0, 1, kChunk - 1, kChunk, kChunk + 1, 5 * kChunk + 7, 9 * kChunk};
  std::vector<std::string> paths;
  for (size_t i = 0; i < sizes.size(); ++i) {
    paths.push_back(src.str("f" + std::to_string(i)));
    write_file(paths.back(), pattern(sizes[i], static_cast<uint32_t>(i + 1)));
  }
  SessionOptions opt = options();
  FakeLink link({.reads_in_flight = 3, .max_sge = 2, .credit_limit = opt.slots});
  Copy c = copy(link, paths, dst.str(), opt);
  REQUIRE(c.source->ok());
  REQUIRE(c.sink->ok());
  CHECK(c.source->value().files_ok == sizes.size());
  CHECK(c.sink->value().files_ok == sizes.size());
  CHECK(c.source->value().files_failed == 0);
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto got = read_file(dst.str("f" + std::to_string(i)));
    REQUIRE(got.has_value());
    CHECK(*got == pattern(sizes[i], static_cast<uint32_t>(i + 1)));
  }
  CHECK(temps_in(dst.path).empty());
  auto seen = link.seen();
  INFO("violations: ", seen.violations.empty() ? "" : seen.violations.front());
  CHECK(seen.violations.empty());
  CHECK(seen.max_chunks_out >= 1);
  CHECK(seen.max_chunks_out <= opt.slots);
  CHECK(seen.reads_refused == 0);
}

TEST_CASE("engine: a sysfs file (not tmpfs, a page per read) is read through the ring byte-exact") {
  // The openers leave O_NONBLOCK on (fs/sources.h) and the source takes it
  // off before its first read through io_uring, which fails a buffered read
  // that would wait with EAGAIN on file systems without non-blocking read
  // support (NFS, FUSE). Linux 6.1 and 6.18 retry sysfs and ext4 reads in a
  // worker either way, so this copy does not prove the clear (the copy
  // suite does, with strace); it proves the ring path on a file that is not
  // tmpfs (not read inline), whose reads stop at a page (6.1), and whose
  // bytes must arrive exactly. An ACPI table: regular, its size true,
  // readable by root.
  const std::string table = "/sys/firmware/acpi/tables/DSDT";
  Fd probe(::open(table.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (probe.get() < 0 || ::fstat(probe.get(), &st) != 0 || st.st_size == 0 || read_inline(probe.get())) {
    MESSAGE("SKIPPED, NOT PROVEN: ", table, " is not readable here (root and ACPI needed)");
    return;
  }
  std::vector<uint8_t> want(static_cast<size_t>(st.st_size));
  for (size_t got = 0; got < want.size();) {  // (sysfs may answer a page per read)
    const ssize_t n = ::pread(probe.get(), want.data() + got, want.size() - got, static_cast<off_t>(got));
    REQUIRE(n > 0);
    got += static_cast<size_t>(n);
  }
  TempDir dst;
  FakeLink link;
  Copy c = copy(link, {table}, dst.str());
  INFO("source: ", c.source->ok() ? "" : c.source->error().message());
  REQUIRE(c.source->ok());
  INFO("errors: ", c.source->value().errors.empty() ? "" : c.source->value().errors.front());
  CHECK(c.source->value().files_failed == 0);
  REQUIRE(c.sink->ok());
  CHECK(c.sink->value().files_ok == 1);
  CHECK(read_file(dst.str("DSDT")) == want);
}

TEST_CASE("engine: sha256, no checksum, and chunks hashed off the loop all copy byte-identical") {
  TempDir src, dst;
  const std::string p = src.str("big");
  write_file(p, pattern(3 * 256 * 1024 + 5, 9));
  for (Checksum algo : {Checksum::sha256, Checksum::none, Checksum::xxh128}) {
    INFO("checksum: ", std::string(checksum_name(algo)));
    SessionOptions opt = options();
    opt.checksum = algo;
    opt.chunk_size = 256 * 1024;  // at least the off-loop threshold
    opt.blocks = 64;
    opt.hash_threads = 2;
    FakeLink link({.credit_limit = opt.slots});
    fs::remove(dst.str("big"));
    Copy c = copy(link, {p}, dst.str(), opt);
    REQUIRE(c.source->ok());
    REQUIRE(c.sink->ok());
    CHECK(read_file(dst.str("big")) == read_file(p));
    CHECK(link.seen().violations.empty());
  }
}

TEST_CASE("engine: nothing is renamed into place before its ledger is complete") {
  TempDir src, dst;
  const std::string p = src.str("f");
  write_file(p, pattern(6 * kChunk + 3, 4));
  FakeLink link;
  // Every message the sink sends is checked: until it sends the FILE_RESULT,
  // the file must not exist under its name (commit comes right before it).
  std::atomic<int> early{0}, results{0};
  const std::string target = dst.str("f");
  link.set_hook(Side::b, [&](wire::Message& m, std::vector<wire::Message>& out) {
    if (std::holds_alternative<wire::FileResult>(m)) {
      ++results;
      if (!exists(target)) ++early;  // a FILE_RESULT ok without the file is wrong too
    } else if (results == 0 && exists(target)) {
      ++early;
    }
    out.push_back(m);
  });
  Copy c = copy(link, {p}, dst.str());
  REQUIRE(c.sink->ok());
  CHECK(results == 1);
  CHECK(early == 0);
  CHECK(read_file(target) == read_file(p));
}

TEST_CASE("engine: the source lends no more chunks than its slots and refills only returned ones") {
  TempDir src;
  const std::string p = src.str("f");
  write_file(p, pattern(10 * kChunk, 5));
  SessionOptions opt = options();
  opt.slots = 3;
  FakeLink link({.credit_limit = 3});
  SourceThread source(link.a(), {p}, opt);
  // The test is the sink: it returns no credit until three chunks are out.
  std::vector<wire::Message> got;
  REQUIRE(await(link.b(), got, [](auto& v) { return count_of<wire::ChunkReady>(v) >= 3; }));
  uint32_t first_slot = 0;
  for (auto& m : got)
    if (auto* c = std::get_if<wire::ChunkReady>(&m)) {
      first_slot = c->slot;
      break;
    }
  // One slot back: exactly one more chunk may follow (the link flags a fourth before it).
  link.inject(Side::b, wire::ChunkDone{{first_slot}});
  REQUIRE(await(link.b(), got, [](auto& v) { return count_of<wire::ChunkReady>(v) >= 4; }));
  link.inject(Side::b, wire::ErrorMsg{ECANCELED, "test sink gives up"});
  auto& r = source.join();
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().context.find("test sink gives up") != std::string::npos);
  auto seen = link.seen();
  INFO("violations: ", seen.violations.empty() ? "" : seen.violations.front());
  CHECK(seen.violations.empty());
  CHECK(seen.max_chunks_out == 3);
}

TEST_CASE("engine: the source lets its transport move between reads (announces a free window a little at a time)") {
  // 16 free slots of 1 MiB at the start: read all, then announce all, and the
  // sink has nothing to pull until the 16th read is done. Reads through the
  // ring (ext4's $TMPDIR) and inline (tmpfs, io/write_inline.h) alike.
  fs::path where = fs::temp_directory_path();
  SUBCASE("read through the ring") {}
  SUBCASE("read inline from tmpfs") {
    if (!fs::is_directory("/dev/shm")) {
      MESSAGE("SKIPPED: no /dev/shm here");
      return;
    }
    where = "/dev/shm";
  }
  TempDir src(where);
  const std::string p = src.str("f");
  write_file(p, pattern(16u << 20, 9));
  SessionOptions opt = options();
  opt.chunk_size = 1u << 20;
  opt.slots = 16;
  FakeLink link({.credit_limit = 16});
  SourceThread source(link.a(), {p}, opt);
  std::vector<wire::Message> got;  // the test is a sink that pulls nothing
  REQUIRE(await(link.b(), got, [](auto& v) { return count_of<wire::ChunkReady>(v) >= 16; }));
  link.inject(Side::b, wire::ErrorMsg{ECANCELED, "test sink gives up"});
  REQUIRE_FALSE(source.join().ok());
  const uint32_t most = link.seen().most_chunks_per_poll[0];
  INFO("CHUNK_READYs in one turn: ", most);
  CHECK(most >= 1);
  CHECK(most <= kReadPerTurn / opt.chunk_size);
}

TEST_CASE("engine: a source reading from tmpfs polls its transport before it reads on through its window") {
  // Reads inline (pread on the loop) stop at kReadPerTurn for the turn, not
  // only the announcements: the file's last chunk, changed at the source's
  // first poll after it announced one, is read after the change.
  if (!fs::is_directory("/dev/shm")) {
    MESSAGE("SKIPPED: no /dev/shm here");
    return;
  }
  TempDir src("/dev/shm");
  const std::string p = src.str("f");
  constexpr uint32_t kMiB = 1u << 20;
  write_file(p, pattern(16 * kMiB, 9));
  {
    Fd f(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
    REQUIRE(f.valid());
    if (!read_inline(f.get())) {  // (through the ring, every read of the window is out at once)
      MESSAGE("SKIPPED: /dev/shm here is no file system the source reads inline");
      return;
    }
  }
  const std::vector<uint8_t> last = pattern(kMiB, 10);
  SessionOptions opt = options();
  opt.chunk_size = kMiB;
  opt.slots = 16;
  FakeLink link({.credit_limit = 16});
  bool changed = false;  // (the source's thread only)
  link.set_poll_hook(Side::a, [&] {
    if (changed) return;
    const auto sent = link.seen().sent[0];
    if (std::find(sent.begin(), sent.end(), wire::MsgType::chunk_ready) == sent.end()) return;
    Fd fd(::open(p.c_str(), O_WRONLY | O_CLOEXEC));
    REQUIRE(fd.valid());
    REQUIRE(::pwrite(fd.get(), last.data(), last.size(), 15 * kMiB) == static_cast<ssize_t>(kMiB));
    changed = true;
  });
  SourceThread source(link.a(), {p}, opt);
  std::vector<wire::Message> got;  // the test is a sink that pulls nothing
  REQUIRE(await(link.b(), got, [](auto& v) { return count_of<wire::ChunkReady>(v) >= 16; }));
  link.inject(Side::b, wire::ErrorMsg{ECANCELED, "test sink gives up"});
  REQUIRE_FALSE(source.join().ok());
  const wire::ChunkReady* c15 = nullptr;
  for (auto& m : got)
    if (auto* c = std::get_if<wire::ChunkReady>(&m); c && c->offset == 15 * kMiB) c15 = c;
  REQUIRE(c15 != nullptr);
  const std::span<const uint8_t> piece{last};
  CHECK(c15->digest == chunk_digest(opt, c15->file_id, c15->offset, {&piece, 1}));
}

TEST_CASE("engine: small files take sub-slots: more in flight than slots, each refilled only when returned") {
  // 2 slots of 256 KiB split into 4 sub-slots of 64 KiB each (session/slot_map.h).
  TempDir src;
  std::vector<std::string> paths;
  for (int i = 0; i < 20; ++i) {
    paths.push_back(src.str("s" + std::to_string(i)));
    write_file(paths.back(), pattern(4096, 40 + i));
  }
  SessionOptions opt = options();
  opt.chunk_size = 256 * 1024;
  opt.slots = 2;
  FakeLink link({.credit_limit = 8});
  SourceThread source(link.a(), paths, opt);
  std::vector<wire::Message> got;
  REQUIRE(await(link.b(), got, [](auto& v) { return count_of<wire::ChunkReady>(v) >= 8; }));
  std::set<uint32_t> slots;
  for (auto& m : got)
    if (auto* c = std::get_if<wire::ChunkReady>(&m)) {
      CHECK(c->slot >= opt.slots);  // a sub-slot id, not a whole slot
      CHECK(c->slot < opt.slots + opt.slots * 4);
      slots.insert(c->slot);
    }
  CHECK(slots.size() == 8);
  link.inject(Side::b, wire::ChunkDone{{*slots.begin()}});
  REQUIRE(await(link.b(), got, [](auto& v) { return count_of<wire::ChunkReady>(v) >= 9; }));
  link.inject(Side::b, wire::ErrorMsg{ECANCELED, "test sink gives up"});
  REQUIRE_FALSE(source.join().ok());
  auto seen = link.seen();
  INFO("violations: ", seen.violations.empty() ? "" : seen.violations.front());
  CHECK(seen.violations.empty());
  CHECK(seen.max_chunks_out == 8);
}

TEST_CASE("engine: small and big files mixed over sub-slots arrive byte-identical") {
  TempDir src, dst;
  std::vector<std::string> paths;
  for (int i = 0; i < 40; ++i) {
    paths.push_back(src.str("m" + std::to_string(i)));
    const size_t size = i % 7 == 3 ? 700 * 1024 + i : i % 5 == 0 ? 64 * 1024 + 1 : 1 + 997 * i;
    write_file(paths.back(), pattern(size, 90 + i));
  }
  SessionOptions opt = options();
  opt.chunk_size = 256 * 1024;
  opt.slots = 2;
  FakeLink link({.credit_limit = 8});
  Copy c = copy(link, paths, dst.str(), opt);
  REQUIRE(c.source->ok());
  REQUIRE(c.sink->ok());
  for (auto& p : paths) CHECK(read_file(dst.str(fs::path(p).filename().string())) == read_file(p));
  CHECK(link.seen().violations.empty());
}

TEST_CASE("lying sink: a sub-slot returned twice, or one never lent, is a protocol error") {
  for (int lie : {0, 1}) {
    CAPTURE(lie);
    TempDir src, dst;
    const std::string p = src.str("f");
    write_file(p, pattern(4096, 19));  // one small chunk: one sub-slot lent
    FakeLink link;
    SessionOptions opt = options();
    opt.chunk_size = 256 * 1024;
    opt.slots = 2;
    link.set_hook(Side::b, [&](wire::Message& m, std::vector<wire::Message>& out) {
      if (auto* d = std::get_if<wire::ChunkDone>(&m)) {
        if (lie == 0) d->slots.push_back(d->slots.front());      // the same sub-slot twice
        else d->slots.push_back(opt.slots + 4 * opt.slots - 1);  // a sub-slot of a slot never split
      }
      out.push_back(m);
    });
    Copy c = copy(link, {p}, dst.str(), opt);
    require_refused(*c.source, "that was not lent");
  }
}

TEST_CASE("fake link: flags a chunk beyond the slots lent and a slot lent twice") {
  FakeLink link({.credit_limit = 2});
  wire::ChunkReady c;
  c.length = 1;
  c.digest.len = 16;
  for (uint32_t s : {0u, 1u}) {
    c.slot = s;
    link.inject(Side::a, c);
  }
  CHECK(link.seen().violations.empty());
  c.slot = 1;
  link.inject(Side::a, c);  // slot 1 is still out
  c.slot = 2;
  link.inject(Side::a, c);  // a third chunk out
  CHECK(link.seen().violations.size() == 3);  // slot 1 twice, then 3 out (twice)
}

// ---------------------------------------------------------------- corruption

TEST_CASE("engine: a chunk corrupted once on the wire is fetched again and the copy succeeds") {
  TempDir src, dst;
  const std::string p = src.str("f");
  write_file(p, pattern(4 * kChunk + 100, 6));
  FakeLink link;
  link.set_read_hook([](uint64_t seq, uint64_t, uint32_t) { return seq == 2; });
  Copy c = copy(link, {p}, dst.str());
  REQUIRE(c.source->ok());
  REQUIRE(c.sink->ok());
  CHECK(c.source->value().files_ok == 1);
  CHECK(read_file(dst.str("f")) == read_file(p));
  CHECK(link.seen().reads == 5 + 1);  // five chunks, one of them twice
}

TEST_CASE("engine: a chunk corrupted every time fails its file promptly and keeps the old file") {
  TempDir src, dst;
  const std::string p = src.str("f");
  write_file(p, pattern(4 * kChunk + 100, 7));
  const std::vector<uint8_t> old = pattern(1000, 99);
  write_file(dst.str("f"), old);
  FakeLink link;
  // The chunk at offset 2*kChunk is always damaged on the wire. A slot is
  // lent again only once returned, so the last chunk announced at an address
  // is the one a read of that address fetches. (Both hooks run under the link's lock.)
  std::map<uint64_t, uint64_t> offset_at;
  int bad_reads = 0;
  link.set_hook(Side::a, [&](wire::Message& m, std::vector<wire::Message>& out) {
    if (auto* cr = std::get_if<wire::ChunkReady>(&m)) offset_at[cr->addr] = cr->offset;
    out.push_back(m);
  });
  link.set_read_hook([&](uint64_t, uint64_t addr, uint32_t) {
    if (offset_at[addr] != 2 * kChunk) return false;
    ++bad_reads;
    return true;
  });
  // idle_timeout_ms is an hour: these runs return because the failure was reported.
  Copy c = copy(link, {p}, dst.str());
  REQUIRE(c.source->ok());
  REQUIRE(c.sink->ok());
  CHECK(c.source->value().files_failed == 1);
  CHECK(c.sink->value().files_failed == 1);
  REQUIRE(c.source->value().errors.size() == 1);
  CHECK(c.source->value().errors[0].find("failed xxh128 verification twice") != std::string::npos);
  CHECK(bad_reads == 2);  // fetched once more, then given up
  CHECK(read_file(dst.str("f")) == old);
  CHECK(temps_in(dst.path).empty());
}

// ---------------------------------------------------------------- cancellation

TEST_CASE("engine: cancelling a sink mid-file removes its temp file and renames nothing") {
  // A new file is written unnamed (O_TMPFILE) and linked at commit; a file
  // that exists is replaced through a named temp file and a rename.
  for (bool existed : {false, true}) {
    CAPTURE(existed);
    TempDir dst;
    const std::vector<uint8_t> old = pattern(100, 19);
    if (existed) write_file(dst.str("f"), old);
    FakeLink link;
    ScriptedSource s(link, pattern(2 * kChunk, 20));
    std::atomic<bool> cancel{false};
    SessionOptions opt = options();
    opt.cancel = &cancel;
    SinkThread sink(link.b(), dst.str(), opt);
    s.send(wire::FileBegin{1, 2 * kChunk, 0644, 0, "f"});
    s.send(s.chunk(1, 0, 0, kChunk));  // the second chunk never comes
    std::vector<wire::Message> got;
    REQUIRE(await(link.a(), got, [](auto& v) { return count_of<wire::ChunkDone>(v) >= 1; }));
    CHECK(temps_in(dst.path).size() == (existed ? 1u : 0u));  // mid-file: a named temp file only to replace
    cancel = true;
    auto& r = sink.join();
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EINTR);
    if (existed) {
      CHECK(read_file(dst.str("f")) == old);
      CHECK(temps_in(dst.path).empty());
    } else {
      require_nothing_left(dst, "f");
    }
  }
}

namespace {
/// A role with work at every turn (pump always starts something) that
/// finishes after `limit` turns.
struct BusyRole {
  int turns = 0, limit = 1000;
  bool finished() const { return turns >= limit; }
  HashPool* hash_pool() const { return nullptr; }
  int pace_wait_ms() const { return 200; }
  Status on_event(TransportEvent&) { return {}; }
  Status on_io(uint64_t, int) { return {}; }
  Status on_hashed(uint64_t, const wire::Digest&) { return {}; }
  Status pump(bool& started) {
    ++turns;
    started = true;
    return {};
  }
};
}  // namespace

TEST_CASE("run_loop: a cancel is seen at the next turn, even when every turn has work") {
  // A loop that looked at the flag only when idle ran such a role to its
  // end: a fast pull's sink took 0.7-1.1 s to notice Ctrl-C, and a link
  // that never let it idle would not have let it notice at all.
  FakeLink link;
  Channel ch(link.b());
  auto ring = Ring::create(8);
  REQUIRE(ring.ok());
  std::atomic<bool> cancel{true};
  SessionOptions opt = options();
  opt.cancel = &cancel;
  BusyRole role;
  Status st = run_loop(ch, **ring, role, opt);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == EINTR);
  CHECK(role.turns == 0);
}

TEST_CASE("engine: cancelling a source waiting for credits ends it") {
  TempDir src;
  const std::string p = src.str("f");
  write_file(p, pattern(10 * kChunk, 21));
  std::atomic<bool> cancel{false};
  SessionOptions opt = options();
  opt.cancel = &cancel;
  FakeLink link;
  SourceThread source(link.a(), {p}, opt);
  std::vector<wire::Message> got;
  REQUIRE(await(link.b(), got, [&](auto& v) { return count_of<wire::ChunkReady>(v) >= opt.slots; }));
  cancel = true;
  auto& r = source.join();
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EINTR);
}

// ---------------------------------------------------------------- files the source cannot send

TEST_CASE("engine: a file the source cannot open is reported to the sink, the others copied") {
  TempDir src, dst;
  write_file(src.str("a"), pattern(kChunk + 1, 35));
  write_file(src.str("c"), pattern(10, 36));
  FakeLink link;
  auto c = copy(link, {src.str("a"), src.str("gone"), src.str("c")}, dst.str());
  REQUIRE(c.source->ok());
  REQUIRE(c.sink->ok());
  CHECK(c.sink->value().files_ok == 2);
  CHECK(c.sink->value().files_failed == 1);
  REQUIRE(c.sink->value().errors.size() == 1);
  CHECK(c.sink->value().errors[0].find(src.str("gone")) != std::string::npos);
  CHECK(c.sink->value().errors[0].find("No such file") != std::string::npos);
  CHECK(exists(dst.str("a")));
  CHECK(exists(dst.str("c")));
  const auto seen = link.seen();
  const auto& sent = seen.sent[0];
  CHECK(std::count(sent.begin(), sent.end(), wire::MsgType::file_skipped) == 1);
}

TEST_CASE("engine: a notice (err 0) is shown but is no failure") {
  TempDir dst;
  FakeLink link;
  SinkThread sink(link.b(), dst.str(), options());
  link.inject(Side::a, wire::FileSkipped{0, "skipping 'm/t/fifo': not a regular file or directory"});
  link.inject(Side::a, wire::Finish{});
  auto& r = sink.join();
  REQUIRE(r.ok());
  CHECK(r.value().files_failed == 0);
}

/// open() run on a thread of its own, which must return within 5 s: one that
/// blocked opening the FIFO at `fifo` is released by a writer and fails the test.
Result<SourceFile> opened_without_blocking(const std::string& fifo, std::function<Result<SourceFile>()> open) {
  auto fut = std::async(std::launch::async, std::move(open));
  if (fut.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    fut.wait();
    if (w >= 0) ::close(w);
    FAIL("opening a FIFO blocked");
  }
  return fut.get();
}

TEST_CASE("sources: a FIFO, socket or device is refused without being opened (no block)") {
  TempDir src;
  const std::string fifo = src.str("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  for (bool beneath : {false, true}) {
    CAPTURE(beneath);
    Fd dir(::open(src.str().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    auto r = opened_without_blocking(fifo, [&] { return open_source_file(dir.get(), "fifo", "m/fifo", beneath); });
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().context.find("'m/fifo' is a FIFO") != std::string::npos);
  }
  auto dev = open_source_file(AT_FDCWD, "/dev/null", "/dev/null", false);
  REQUIRE_FALSE(dev.ok());
  CHECK(dev.error().context.find("character device") != std::string::npos);
}

TEST_CASE("sources: a listed regular file swapped for a FIFO, a symlink or a directory is refused, never blocks") {
  TempDir src;
  write_file(src.str("reg"), pattern(100, 3));
  REQUIRE(::mkfifo(src.str("fifo").c_str(), 0644) == 0);
  REQUIRE(::symlink("reg", src.str("link").c_str()) == 0);
  REQUIRE(::mkdir(src.str("dir").c_str(), 0755) == 0);
  Fd dir(::open(src.str().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto ok = open_listed_file(dir.get(), "reg", "m/reg");
  REQUIRE(ok.ok());
  CHECK(ok->size == 100);
  // Left O_NONBLOCK (pread ignores it); a reader through io_uring clears it first.
  CHECK((::fcntl(ok->fd.get(), F_GETFL) & O_NONBLOCK) != 0);
  REQUIRE(clear_nonblock(ok->fd.get(), "m/reg").ok());
  CHECK((::fcntl(ok->fd.get(), F_GETFL) & O_NONBLOCK) == 0);
  auto fifo = opened_without_blocking(src.str("fifo"), [&] { return open_listed_file(dir.get(), "fifo", "m/fifo"); });
  REQUIRE_FALSE(fifo.ok());
  CHECK(fifo.error().context.find("'m/fifo' was replaced by a FIFO") != std::string::npos);
  CHECK_FALSE(open_listed_file(dir.get(), "link", "m/link").ok());  // O_NOFOLLOW
  auto d = open_listed_file(dir.get(), "dir", "m/dir");
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().context.find("replaced by") != std::string::npos);
  CHECK_FALSE(open_listed_file(dir.get(), "../" + src.path.filename().string() + "/reg", "m/x").ok());  // beneath
  // Not confined (a push's own path a stat called regular): a symlink is
  // followed, what is not a regular file is still refused, never blocks.
  auto followed = open_listed_file(dir.get(), "link", "link", false);
  REQUIRE(followed.ok());
  CHECK(followed->size == 100);
  auto fifo2 = opened_without_blocking(src.str("fifo"), [&] { return open_listed_file(dir.get(), "fifo", "fifo", false); });
  REQUIRE_FALSE(fifo2.ok());
  CHECK(fifo2.error().context.find("'fifo' was replaced by a FIFO") != std::string::npos);
  CHECK(open_listed_file(dir.get(), "dir", "dir", false).error().context.find("'dir' was replaced by") != std::string::npos);
}

TEST_CASE("sources: a push's argument its stat called regular is opened without a probe, and checked once open") {
  TempDir src;
  write_file(src.str("reg"), pattern(100, 3));
  REQUIRE(::mkfifo(src.str("fifo").c_str(), 0644) == 0);
  ExpandOptions o;
  o.known_regular = true;
  // (No assertion inside: it also runs on opened_without_blocking's thread.)
  auto one = [&](const std::string& p) -> Result<SourceFile> {
    auto set = expand_source(AT_FDCWD, p, p, o);
    if (!set.ok()) return set.error();
    auto all = drain(set->files);
    if (all.size() != 1) return make_error(EPROTO, "expanded into " + std::to_string(all.size()) + " entries");
    return all[0]();
  };
  auto ok = one(src.str("reg"));
  REQUIRE(ok.ok());
  CHECK(ok->name == "reg");
  CHECK(ok->size == 100);
  // swapped for a FIFO since the caller's stat: refused once open, and the open does not block
  auto fifo = opened_without_blocking(src.str("fifo"), [&] { return one(src.str("fifo")); });
  REQUIRE_FALSE(fifo.ok());
  CHECK(fifo.error().code == EAGAIN);
  // and gone since: the file's error, naming it
  auto gone = one(src.str("nothing"));
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.error().code == ENOENT);
  CHECK(gone.error().message().find("nothing") != std::string::npos);
}

// ---------------------------------------------------------------- bounds

TEST_CASE("lying source: more files begun and not ended than kMaxFilesOpen is a protocol error") {
  TempDir dst;
  FakeLink link;
  ScriptedSource s(link, pattern(kChunk, 37));
  SinkThread sink(link.b(), dst.str(), options());
  for (uint32_t i = 1; i <= kMaxFilesOpen + 1; ++i) s.send(wire::FileBegin{i, 10, 0644, 0, "f" + std::to_string(i)});
  require_refused(sink.join(), "files begun and not ended");
  CHECK(temps_in(dst.path).empty());
}

TEST_CASE("lying source: a chunk naming a slot already lent, or out of range, is a protocol error") {
  for (uint32_t second : {0u, kMaxSlots}) {
    CAPTURE(second);
    TempDir dst;
    FakeLink link;
    ScriptedSource s(link, pattern(kChunk, 38));
    SessionOptions opt = options();
    opt.blocks = 1;  // one chunk pulled at a time: the next stays queued
    SinkThread sink(link.b(), dst.str(), opt);
    s.send(wire::FileBegin{1, 2 * kChunk, 0644, 0, "f"});
    s.send(s.chunk(1, 0, 0, 10));
    s.send(s.chunk(1, second, 10, 10));
    require_refused(sink.join(), second == 0 ? "already lent" : "out of range");
    CHECK(temps_in(dst.path).empty());
  }
}

TEST_CASE("engine: a source with more slots than kMaxFilesOpen never begins more unended files") {
  TempDir src, dst;
  std::vector<std::string> paths;
  for (uint32_t i = 0; i < kMaxFilesOpen + 64; ++i) {
    paths.push_back(src.str("f" + std::to_string(i)));
    write_file(paths.back(), pattern(100, i));
  }
  SessionOptions opt = options();
  opt.slots = kMaxFilesOpen + 64;  // slots enough to begin every file at once
  FakeLink link;
  auto c = copy(link, paths, dst.str(), opt);
  REQUIRE(c.source->ok());
  REQUIRE(c.sink->ok());
  CHECK(c.sink->value().files_ok == paths.size());
}

TEST_CASE("engine: a source holds at most max_files_open files begun and not ended (rcpd's max_files_per_session)") {
  TempDir src, dst;
  std::vector<std::string> paths;
  for (uint32_t i = 0; i < 40; ++i) {
    paths.push_back(src.str("f" + std::to_string(i)));
    write_file(paths.back(), pattern(wire::kMaxFileData + 100, i));  // (a small file goes whole: nothing held open)
  }
  SessionOptions opt = options();
  opt.slots = 64;  // slots enough to begin every file at once
  opt.max_files_open = 3;
  FakeLink link;
  int open = 0, most = 0;
  link.set_hook(Side::a, [&](wire::Message& m, std::vector<wire::Message>& out) {
    if (std::holds_alternative<wire::FileBegin>(m)) most = std::max(most, ++open);
    if (std::holds_alternative<wire::FileEnd>(m)) --open;
    out.push_back(m);
  });
  auto c = copy(link, paths, dst.str(), opt);
  REQUIRE(c.source->ok());
  REQUIRE(c.sink->ok());
  CHECK(c.sink->value().files_ok == paths.size());
  CHECK(most == 3);
}

TEST_CASE("pool: memory that cannot be had is an error naming the pool and its size") {
  FakeLink link;
  auto ring = Ring::create(8);
  REQUIRE(ring.ok());
  Pool none(link.a(), 0, 1u << 20);
  const Status st = none.init(**ring, true);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == EINVAL);
  CHECK(st.error().context == "allocate buffer pool of 0 bytes");
}
