// Proves, with source and sink running in one process over the fake transport, that files of
// every edge size arrive byte-identical, that the sink refuses every lie a source can tell
// (wrong digests, short or resized files, overlapping, out-of-file and oversize chunks) and the
// source every lie a sink can tell (credits for slots it never lent or already got back), each
// time committing nothing and leaving no temp file, and that credits are never exceeded.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <future>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <chrono>
#include <thread>
#include <vector>

#include "fake_transport.h"
#include "fs/itemize.h"
#include "hash/digest.h"
#include "io/ring.h"
#include "io/write_inline.h"
#include "session/ledger.h"
#include "session/pool.h"
#include "session/session.h"
#include "session/xattr_pieces.h"
#include "transport/backlog.h"
#include "wire/messages.h"

using namespace rcp;
using rcp::test::FakeLink;
using rcp::test::Side;
namespace fs = std::filesystem;

namespace {

constexpr uint32_t kChunk = 64 * 1024;
/// Long enough that a run which returns did so because it finished or
/// refused, never because it sat idle until the timeout.
constexpr int kNoTimeout = 3600 * 1000;

SessionOptions options() {
  SessionOptions o;
  o.chunk_size = kChunk;
  o.slots = 4;
  o.block_size = 16 * 1024;
  o.blocks = 16;
  o.hash_threads = 0;
  o.idle_timeout_ms = kNoTimeout;
  return o;
}

struct TempDir {
  fs::path path;
  /// in: another parent than $TMPDIR (the -X test wants tmpfs: ext4 keeps an inode's xattrs in one 4 KiB block).
  explicit TempDir(const fs::path& in = fs::temp_directory_path()) {
    std::string t = (in / "rcp-engine.XXXXXX").string();
    REQUIRE(::mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string str(const std::string& name = "") const { return name.empty() ? path.string() : (path / name).string(); }
};

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<uint8_t>(x);
  }
  return v;
}

void write_file(const std::string& path, const std::vector<uint8_t>& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  REQUIRE(f.good());
}

std::optional<std::vector<uint8_t>> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

/// Temp files the sink left (".NAME.rcp-XXXXXXXX").
std::vector<std::string> temps_in(const fs::path& dir) {
  std::vector<std::string> v;
  for (auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 1 && n[0] == '.' && n.find(".rcp-") != std::string::npos) v.push_back(n);
  }
  return v;
}

bool exists(const std::string& p) { return fs::exists(fs::symlink_status(p)); }

std::vector<SourceOpener> openers(const std::vector<std::string>& paths) {
  std::vector<SourceOpener> v;
  for (auto& p : paths)
    v.push_back([p]() { return open_source_file(AT_FDCWD, p, p, false); });
  return v;
}

/// The sink running on its own thread over one end of the link.
class SinkThread {
 public:
  SinkThread(Transport& t, const std::string& dest_dir, const SessionOptions& opt,
             std::optional<ExpectedNames> expect = std::nullopt, std::optional<PruneOptions> prune = std::nullopt)
      : ch_(t), opt_(opt) {
    auto d = resolve_destination_local(dest_dir, true);
    REQUIRE(d.ok());
    dest_ = std::move(d.value());
    dest_.expect = std::move(expect);
    dest_.prune = std::move(prune);
    th_ = std::thread([this] { result_.emplace(run_sink(ch_, dest_, opt_)); });
  }
  ~SinkThread() {
    if (th_.joinable()) th_.join();
  }
  Result<TransferStats>& join() {
    if (th_.joinable()) th_.join();
    return *result_;
  }

 private:
  Channel ch_;
  SessionOptions opt_;
  Destination dest_;
  std::optional<Result<TransferStats>> result_;
  std::thread th_;
};

/// The source running on its own thread.
class SourceThread {
 public:
  SourceThread(Transport& t, std::vector<std::string> paths, const SessionOptions& opt) : ch_(t), opt_(opt) {
    th_ = std::thread([this, paths] { result_.emplace(run_source(ch_, openers(paths), opt_)); });
  }
  ~SourceThread() {
    if (th_.joinable()) th_.join();
  }
  Result<TransferStats>& join() {
    if (th_.joinable()) th_.join();
    return *result_;
  }

 private:
  Channel ch_;
  SessionOptions opt_;
  std::optional<Result<TransferStats>> result_;
  std::thread th_;
};

struct Copy {
  std::optional<Result<TransferStats>> source, sink;
};

/// Runs a whole copy of `paths` into `dest_dir`: sink on a thread, source on this one.
Copy copy(FakeLink& link, const std::vector<std::string>& paths, const std::string& dest_dir,
          const SessionOptions& opt = options()) {
  Copy c;
  SinkThread sink(link.b(), dest_dir, opt);
  Channel ch(link.a());
  c.source.emplace(run_source(ch, openers(paths), opt));
  c.sink.emplace(std::move(sink.join()));
  return c;
}

/// Decodes every message waiting on one end (a test playing a peer).
std::vector<wire::Message> take_messages(Transport& t) {
  std::vector<TransportEvent> ev;
  REQUIRE(t.poll(ev).ok());
  std::vector<wire::Message> out;
  for (auto& e : ev) {
    if (e.kind != TransportEvent::Kind::message) continue;
    auto m = wire::decode(e.message);
    REQUIRE(m.ok());
    out.push_back(std::move(m.value()));
  }
  return out;
}

/// Waits (on the end's fd, no fixed sleep) until `want` says enough has
/// arrived; everything taken is appended to `got`. Gives up after a minute.
template <typename Pred>
bool await(Transport& t, std::vector<wire::Message>& got, Pred want) {
  for (int i = 0; i < 600; ++i) {
    for (auto& m : take_messages(t)) got.push_back(std::move(m));
    if (want(got)) return true;
    pollfd p{t.wait_fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
  }
  return false;
}

template <typename M>
size_t count_of(const std::vector<wire::Message>& v) {
  size_t n = 0;
  for (auto& m : v) n += std::holds_alternative<M>(m);
  return n;
}

/// A test playing the source: its memory registered on end a, messages sent by hand.
struct ScriptedSource {
  FakeLink& link;
  std::vector<uint8_t> mem;
  uint32_t key = 0;

  ScriptedSource(FakeLink& l, std::vector<uint8_t> data) : link(l), mem(std::move(data)) {
    auto k = link.a().register_memory(mem.data(), mem.size(), true);
    REQUIRE(k.ok());
    key = k.value();
  }
  void send(const wire::Message& m) {
    std::vector<uint8_t> buf;
    REQUIRE(wire::encode(m, buf).ok());
    REQUIRE(link.a().send(buf).ok());
  }
  /// A truthful CHUNK_READY for file bytes [offset, offset+length) held at the same offset of mem.
  wire::ChunkReady chunk(uint32_t file_id, uint32_t slot, uint64_t offset, uint32_t length) const {
    wire::ChunkReady c;
    c.file_id = file_id;
    c.slot = slot;
    c.offset = offset;
    c.length = length;
    c.addr = reinterpret_cast<uint64_t>(mem.data()) + offset;
    c.rkey = key;
    c.digest = digest_of(Checksum::xxh128, {mem.data() + offset, length});
    return c;
  }
  /// The file digest over the given chunks, as an honest source computes it.
  static wire::Digest file_digest(uint64_t size, const std::vector<wire::ChunkReady>& chunks) {
    FileLedger l(Checksum::xxh128, size);
    for (auto& c : chunks) l.add_digest(c.offset, c.length, c.digest);
    return l.file_digest();
  }
  /// An honest file of one chunk: FILE_BEGIN, its CHUNK_READY (mem's first `size` bytes, in `slot`), FILE_END.
  void send_file(uint32_t id, const std::string& name, uint32_t size, uint32_t slot) {
    send(wire::FileBegin{id, size, 0644, 0, name});
    auto c = chunk(id, slot, 0, size);
    send(c);
    send(wire::FileEnd{id, size, file_digest(size, {c})});
  }
};

/// Checks the run failed with a protocol error naming `words` (not fatal, so
/// every case of a table is tried).
void require_refused(Result<TransferStats>& r, const std::string& words) {
  CHECK_FALSE(r.ok());
  if (r.ok()) return;
  CHECK(r.error().code == EPROTO);
  INFO("error: ", r.error().context);
  CHECK(r.error().context.find(words) != std::string::npos);
}

void require_nothing_left(const TempDir& dir, const std::string& name) {
  CHECK_FALSE(exists(dir.str(name)));
  CHECK(temps_in(dir.path).empty());
}

}  // namespace

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

TEST_CASE("sources: a FIFO, socket or device is refused without being opened (no block)") {
  TempDir src;
  const std::string fifo = src.str("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  for (bool beneath : {false, true}) {
    CAPTURE(beneath);
    Fd dir(::open(src.str().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    auto fut = std::async(std::launch::async, [&] { return open_source_file(dir.get(), "fifo", "m/fifo", beneath); });
    if (fut.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
      // It blocked in open(): a writer releases it so the test can end.
      int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      FAIL("opening a FIFO blocked");
      if (w >= 0) ::close(w);
    }
    auto r = fut.get();
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
  auto fut = std::async(std::launch::async, [&] { return open_listed_file(dir.get(), "fifo", "m/fifo"); });
  if (fut.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    int w = ::open(src.str("fifo").c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    FAIL("opening a FIFO blocked");
    if (w >= 0) ::close(w);
  }
  auto fifo = fut.get();
  REQUIRE_FALSE(fifo.ok());
  CHECK(fifo.error().context.find("'m/fifo' was replaced by a FIFO") != std::string::npos);
  CHECK_FALSE(open_listed_file(dir.get(), "link", "m/link").ok());  // O_NOFOLLOW
  auto d = open_listed_file(dir.get(), "dir", "m/dir");
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().context.find("replaced by") != std::string::npos);
  CHECK_FALSE(open_listed_file(dir.get(), "../" + src.path.filename().string() + "/reg", "m/x").ok());  // beneath
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
    write_file(paths.back(), pattern(100, i));
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

// ---------------------------------------------------------------- updating existing files

namespace {
void set_mtime(const std::string& path, int64_t sec, long nsec) {
  const struct timespec ts[2] = {{0, UTIME_OMIT}, {sec, nsec}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), ts, 0) == 0);
}
int64_t mtime_ns(const std::string& path) {
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
}
}  // namespace

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
  CHECK(real_sink.lines == sink_items.lines);  // the real run did what the dry run listed
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

// ---------------------------------------------------------------- sparse files (HOLE, wire v7)

namespace {

/// A file of `size` bytes with `pieces` (offset, bytes) written and holes elsewhere.
void write_sparse(const std::string& path, uint64_t size, const std::vector<std::pair<uint64_t, std::vector<uint8_t>>>& pieces) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, static_cast<off_t>(size)) == 0);
  for (auto& [off, bytes] : pieces)
    REQUIRE(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(off)) == static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

uint64_t allocated(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

}  // namespace

TEST_CASE("sparse: holes are neither read nor sent; -S leaves them unallocated, else they are allocated") {
  // data in chunk 0, 6 chunks of hole, a chunk with data at its last byte, a hole to the end (not chunk-aligned)
  const uint64_t size = 20 * kChunk + 123;
  const auto a = pattern(kChunk, 70), b = pattern(1, 71);
  for (bool sparse : {true, false}) {
    INFO("sparse: ", sparse);
    TempDir src, dst;
    const std::string p = src.str("f");
    write_sparse(p, size, {{0, a}, {8 * kChunk - 1, b}});
    SessionOptions opt = options();
    opt.preserve.sparse = sparse;
    std::vector<wire::Hole> holes;
    FakeLink link;
    link.set_hook(Side::a, [&](wire::Message& m, std::vector<wire::Message>& out) {
      if (auto* h = std::get_if<wire::Hole>(&m)) holes.push_back(*h);
      out.push_back(m);
    });
    Copy c = copy(link, {p}, dst.str(), opt);
    REQUIRE(c.sink->ok());
    REQUIRE(c.source->ok());
    CHECK(c.sink->value().files_ok == 1);
    CHECK(c.sink->value().bytes_pulled == 2 * kChunk);  // chunks 0 and 7; never the holes
    REQUIRE(holes.size() == 2);
    CHECK(holes[0].offset == kChunk);
    CHECK(holes[0].length == 6 * kChunk);
    CHECK(holes[1].offset == 8 * kChunk);
    CHECK(holes[1].length == size - 8 * kChunk);
    CHECK(read_file(dst.str("f")) == read_file(p));
    if (sparse)
      CHECK(allocated(dst.str("f")) <= 4 * kChunk);
    else
      CHECK(allocated(dst.str("f")) >= size - kChunk);
  }
}

TEST_CASE("sparse: an all-hole file and a file of one hole chunk arrive as zeros, nothing pulled") {
  TempDir src, dst;
  write_sparse(src.str("h"), 3 * kChunk + 5, {});
  write_sparse(src.str("t"), kChunk - 1, {});
  SessionOptions opt = options();
  opt.preserve.sparse = true;
  FakeLink link;
  Copy c = copy(link, {src.str("h"), src.str("t")}, dst.str(), opt);
  REQUIRE(c.sink->ok());
  CHECK(c.sink->value().files_ok == 2);
  CHECK(c.sink->value().bytes_pulled == 0);
  CHECK(read_file(dst.str("h")) == std::vector<uint8_t>(3 * kChunk + 5));
  CHECK(read_file(dst.str("t")) == std::vector<uint8_t>(kChunk - 1));
  CHECK(allocated(dst.str("h")) == 0);
}

TEST_CASE("sparse: with -S, blocks of zeros inside sent data become holes; a zero tail keeps the size") {
  // Written, not sparse: every byte is a data extent for the source, so all of it is sent.
  const uint64_t size = 8 * kChunk + 2 * 4096;
  std::vector<uint8_t> data(size, 0);
  const auto head = pattern(kChunk, 72);
  std::copy(head.begin(), head.end(), data.begin());
  data[5 * kChunk + 100] = 7;  // one block of data among the zeros
  for (bool sparse : {true, false}) {
    INFO("sparse: ", sparse);
    TempDir src, dst;
    const std::string p = src.str("f");
    write_file(p, data);
    SessionOptions opt = options();
    opt.preserve.sparse = sparse;
    FakeLink link;
    Copy c = copy(link, {p}, dst.str(), opt);
    REQUIRE(c.sink->ok());
    CHECK(c.sink->value().files_ok == 1);
    CHECK(c.sink->value().bytes_pulled == size);
    CHECK(read_file(dst.str("f")) == data);
    if (sparse)
      CHECK(allocated(dst.str("f")) <= 2 * kChunk);
    else
      CHECK(allocated(dst.str("f")) >= size - 4096);
  }
}

TEST_CASE("sparse: with -S, zeros over a kept --partial file's old bytes are written, not skipped") {
  TempDir src, dst;
  const std::string p = src.str("f");
  std::vector<uint8_t> data = pattern(4 * kChunk, 73);
  std::fill(data.begin() + kChunk, data.begin() + 2 * kChunk, 0);  // chunk 1: zeros
  write_file(p, data);
  std::vector<uint8_t> kept(data.begin(), data.begin() + 3 * kChunk);
  std::fill(kept.begin() + kChunk, kept.begin() + 2 * kChunk, 0x5a);  // old bytes where zeros belong
  write_file(dst.str(".f.rcp-partial"), kept);
  SessionOptions opt = options();
  opt.rules.partial = true;
  opt.preserve.sparse = true;
  FakeLink link;
  Copy c = copy(link, {p}, dst.str(), opt);
  REQUIRE(c.sink->ok());
  CHECK(c.sink->value().files_ok == 1);
  CHECK(c.sink->value().bytes_pulled == 2 * kChunk);  // chunk 1 (wrong) and chunk 3 (missing)
  CHECK(read_file(dst.str("f")) == data);
  CHECK(temps_in(dst.path).empty());
}

TEST_CASE("sparse: -c keeps an unchanged sparse file (its holes count as equal), nothing pulled") {
  TempDir src, dst;
  const std::string p = src.str("f");
  write_sparse(p, 10 * kChunk + 9, {{2 * kChunk, pattern(kChunk, 74)}});
  SessionOptions opt = options();
  opt.preserve.sparse = true;
  {
    FakeLink link;
    Copy c = copy(link, {p}, dst.str(), opt);
    REQUIRE(c.sink->ok());
    REQUIRE(c.sink->value().files_ok == 1);
  }
  struct stat before;
  REQUIRE(::stat(dst.str("f").c_str(), &before) == 0);
  opt.rules.checksum = true;
  FakeLink link;
  Copy c = copy(link, {p}, dst.str(), opt);
  REQUIRE(c.sink->ok());
  CHECK(c.sink->value().files_skipped == 1);
  CHECK(c.sink->value().bytes_pulled == 0);
  struct stat after;
  REQUIRE(::stat(dst.str("f").c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);  // kept, not rebuilt from itself
  CHECK(read_file(dst.str("f")) == read_file(p));
}

TEST_CASE("lying source: a HOLE outside the file, over a chunk, over a hole, after FILE_END or for no file is refused") {
  struct Case {
    const char* name;
    std::function<void(wire::Message&, std::vector<wire::Message>&, bool&)> lie;
    const char* words;
    bool may_commit = false;  // the file may be complete before the lie arrives
  };
  const uint64_t size = 4 * kChunk;
  const Case cases[] = {
      {"beyond the size",
       [&](wire::Message& m, std::vector<wire::Message>& out, bool& lied) {
         out.push_back(m);
         if (auto* fb = std::get_if<wire::FileBegin>(&m); fb && !lied) {
           out.push_back(wire::Hole{fb->file_id, size - 10, 11});
           lied = true;
         }
       },
       "lies outside"},
      {"over a chunk",
       [&](wire::Message& m, std::vector<wire::Message>& out, bool& lied) {
         out.push_back(m);
         if (auto* c = std::get_if<wire::ChunkReady>(&m); c && !lied) {
           out.push_back(wire::Hole{c->file_id, c->offset + 1, 1});
           lied = true;
         }
       },
       "overlaps another range"},
      {"over another hole",
       [&](wire::Message& m, std::vector<wire::Message>& out, bool& lied) {
         out.push_back(m);
         if (std::holds_alternative<wire::Hole>(m) && !lied) {
           out.push_back(m);
           lied = true;
         }
       },
       "overlaps another range"},
      {"after FILE_END",
       [&](wire::Message& m, std::vector<wire::Message>& out, bool& lied) {
         out.push_back(m);
         if (auto* e = std::get_if<wire::FileEnd>(&m); e && !lied) {
           out.push_back(wire::Hole{e->file_id, 0, 1});
           lied = true;
         }
       },
       // (committed and forgotten by then, or still pulling its chunk)
       "HOLE ", true},
      {"for no file",
       [&](wire::Message& m, std::vector<wire::Message>& out, bool& lied) {
         if (!lied) out.push_back(wire::Hole{999, 0, 1});
         lied = true;
         out.push_back(m);
       },
       "HOLE for unknown file 999"},
  };
  for (const Case& k : cases) {
    INFO("case: ", std::string(k.name));
    TempDir src, dst;
    const std::string p = src.str("f");
    write_sparse(p, size, {{kChunk, pattern(kChunk, 72)}});  // hole, data, hole
    FakeLink link;
    bool lied = false;
    link.set_hook(Side::a, [&](wire::Message& m, std::vector<wire::Message>& out) { k.lie(m, out, lied); });
    Copy c = copy(link, {p}, dst.str());
    REQUIRE(lied);
    require_refused(*c.sink, k.words);
    if (!k.may_commit) require_nothing_left(dst, "f");
  }
}

TEST_CASE("lying source: a chunk turned into a HOLE fails the file digest; nothing is committed") {
  TempDir src, dst;
  const std::string p = src.str("f");
  write_file(p, pattern(3 * kChunk, 73));
  FakeLink link;
  bool lied = false;
  link.set_hook(Side::a, [&](wire::Message& m, std::vector<wire::Message>& out) {
    if (auto* c = std::get_if<wire::ChunkReady>(&m); c && !lied && c->offset == kChunk) {
      out.push_back(wire::Hole{c->file_id, c->offset, c->length});  // "these bytes are zeros"
      lied = true;
      return;
    }
    out.push_back(m);
  });
  SessionOptions opt = options();
  opt.idle_timeout_ms = 2000;  // the source's slot never comes back; the sink's verdict is what counts
  SinkThread sink(link.b(), dst.str(), opt);
  Channel ch(link.a());
  auto s = run_source(ch, openers({p}), opt);
  auto& k = sink.join();
  REQUIRE(lied);
  if (k.ok()) {
    CHECK(k.value().files_failed == 1);
    REQUIRE_FALSE(k.value().errors.empty());
    CHECK(k.value().errors[0].find("file digest mismatch") != std::string::npos);
  }
  require_nothing_left(dst, "f");
}

TEST_CASE("source: refuses a HOLE from a sink") {
  TempDir src;
  const std::string p = src.str("f");
  write_file(p, pattern(3 * kChunk, 74));
  FakeLink link;
  SourceThread source(link.a(), {p}, options());
  link.inject(Side::b, wire::Hole{1, 0, 1});
  auto& r = source.join();
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EPROTO);
  CHECK(r.error().context.find("unexpected HOLE") != std::string::npos);
}

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
