// The engine tests' harness: source and sink in one process over the fake
// transport (fake_transport.h), each on its own thread, or one of them played
// by hand (ScriptedSource, take_messages) to tell the other lies. Each
// engine_*_test.cc covers one area; together they prove that files of every
// edge size arrive byte-identical, that each end refuses every lie the other
// can tell, committing nothing and leaving no temp file, and that credits are
// never exceeded.
#pragma once

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

namespace rcp::engine_harness {

constexpr uint32_t kChunk = 64 * 1024;
/// Long enough that a run which returns did so because it finished or
/// refused, never because it sat idle until the timeout.
constexpr int kNoTimeout = 3600 * 1000;

inline SessionOptions options() {
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

inline std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
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

inline void write_file(const std::string& path, const std::vector<uint8_t>& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  REQUIRE(f.good());
}

inline std::optional<std::vector<uint8_t>> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

/// Temp files the sink left (".NAME.rcp-XXXXXXXX").
inline std::vector<std::string> temps_in(const fs::path& dir) {
  std::vector<std::string> v;
  for (auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 1 && n[0] == '.' && n.find(".rcp-") != std::string::npos) v.push_back(n);
  }
  return v;
}

inline bool exists(const std::string& p) { return fs::exists(fs::symlink_status(p)); }

inline std::vector<SourceOpener> openers(const std::vector<std::string>& paths) {
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
inline Copy copy(FakeLink& link, const std::vector<std::string>& paths, const std::string& dest_dir,
                 const SessionOptions& opt = options()) {
  Copy c;
  SinkThread sink(link.b(), dest_dir, opt);
  Channel ch(link.a());
  c.source.emplace(run_source(ch, openers(paths), opt));
  c.sink.emplace(std::move(sink.join()));
  return c;
}

/// Decodes every message waiting on one end (a test playing a peer).
inline std::vector<wire::Message> take_messages(Transport& t) {
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
inline bool await(Transport& t, std::vector<wire::Message>& got, Pred want) {
  for (int i = 0; i < 600; ++i) {
    for (auto& m : take_messages(t)) got.push_back(std::move(m));
    if (want(got)) return true;
    pollfd p{t.wait_fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
  }
  return false;
}

template <typename M>
inline size_t count_of(const std::vector<wire::Message>& v) {
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
inline void require_refused(Result<TransferStats>& r, const std::string& words) {
  CHECK_FALSE(r.ok());
  if (r.ok()) return;
  CHECK(r.error().code == EPROTO);
  INFO("error: ", r.error().context);
  CHECK(r.error().context.find(words) != std::string::npos);
}

inline void require_nothing_left(const TempDir& dir, const std::string& name) {
  CHECK_FALSE(exists(dir.str(name)));
  CHECK(temps_in(dir.path).empty());
}

inline void set_mtime(const std::string& path, int64_t sec, long nsec) {
  const struct timespec ts[2] = {{0, UTIME_OMIT}, {sec, nsec}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), ts, 0) == 0);
}
inline int64_t mtime_ns(const std::string& path) {
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
}

}  // namespace rcp::engine_harness
using namespace rcp::engine_harness;
