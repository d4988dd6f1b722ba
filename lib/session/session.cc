#include "session/session.h"

#include "util/test_faults.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fmt/core.h>
#include <map>
#include <thread>
#include <unordered_map>

#include "fs/tempfile.h"
#include "hash/hash_pool.h"
#include "io/ring.h"
#include "session/ledger.h"
#include "session/plan.h"
#include "util/log.h"

namespace rcp {

using wire::Message;

Result<SourceFile> open_source_file(int dir_fd, const std::string& path, std::string shown, bool beneath) {
  SourceFile f;
  if (beneath) {
    RCP_ASSIGN(f.fd, open_beneath(dir_fd, path, O_RDONLY));
  } else {
    int fd = ::openat(dir_fd, path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return sys_error("'" + shown + "'");
    f.fd.reset(fd);
  }
  struct stat st;
  if (::fstat(f.fd.get(), &st) != 0) return sys_error("stat '" + shown + "'");
  if (S_ISDIR(st.st_mode)) return make_error(EISDIR, "'" + shown + "' is a directory");
  if (!S_ISREG(st.st_mode)) return make_error(EINVAL, "'" + shown + "' is not a regular file");
  f.size = static_cast<uint64_t>(st.st_size);
  f.mode = st.st_mode & 0777;
  f.name = base_name(path);
  f.shown = std::move(shown);
  return f;
}

Result<std::vector<SourceOpener>> tree_sources(std::shared_ptr<Fd> dir, const std::string& base, unsigned mode,
                                               const std::string& shown, std::vector<std::string>& skipped) {
  RCP_ASSIGN(auto entries, walk_tree(dir->get(), skipped));
  auto dir_entry = [](std::string name, std::string eshown, unsigned m) -> SourceOpener {
    return [name, eshown, m]() -> Result<SourceFile> {
      SourceFile f;
      f.is_dir = true;
      f.mode = m & 0777;
      f.name = name;
      f.shown = eshown;
      return f;
    };
  };
  std::vector<SourceOpener> files;
  if (!base.empty()) files.push_back(dir_entry(base, shown, mode));
  for (auto& e : entries) {
    std::string name = base.empty() ? e.rel : base + "/" + e.rel, eshown = shown + "/" + e.rel;
    if (e.is_dir) {
      files.push_back(dir_entry(std::move(name), std::move(eshown), e.mode));
    } else {
      files.push_back([dir, rel = e.rel, name, eshown]() -> Result<SourceFile> {
        RCP_ASSIGN(SourceFile f, open_source_file(dir->get(), rel, eshown, true));
        f.name = name;
        return f;
      });
    }
  }
  return files;
}

// ---------------------------------------------------------------- Channel

Status Channel::send(const Message& m) {
  std::vector<uint8_t> buf;
  RCP_TRY(wire::encode(m, buf));
  log_debug("send {} to {}", wire::type_name(wire::type_of(m)), t_.peer());
  return t_.send(buf);
}

Status Channel::poll(std::vector<TransportEvent>& out) {
  if (!backlog_.empty()) {
    for (auto& e : backlog_) out.push_back(std::move(e));
    backlog_.clear();
  }
  return t_.poll(out);
}

Result<Message> Channel::receive(int timeout_ms, const std::atomic<bool>* cancel) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  Fd ep(::epoll_create1(EPOLL_CLOEXEC));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ::epoll_ctl(ep.get(), EPOLL_CTL_ADD, t_.wait_fd(), &ev);
  for (;;) {
    if (backlog_.empty()) RCP_TRY(t_.poll(backlog_));
    if (!backlog_.empty()) {
      TransportEvent e = std::move(backlog_.front());
      backlog_.erase(backlog_.begin());
      if (e.kind == TransportEvent::Kind::closed) return make_error(e.status, e.detail);
      if (e.kind != TransportEvent::Kind::message)
        return make_error(EPROTO, "unexpected read completion before the transfer started");
      auto m = wire::decode(e.message);
      if (!m.ok()) return make_error(m.error().code, "from " + t_.peer() + ": " + m.error().context);
      if (auto* em = std::get_if<wire::ErrorMsg>(&m.value()))
        return make_error(em->err, t_.peer() + ": " + em->message);
      return m;
    }
    if (cancel && cancel->load()) return make_error(EINTR, "interrupted");
    RCP_TRY(t_.arm());
    RCP_TRY(t_.poll(backlog_));
    if (!backlog_.empty()) continue;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return make_error(ETIMEDOUT, "no answer from " + t_.peer());
    epoll_event out;
    ::epoll_wait(ep.get(), &out, 1, static_cast<int>(std::min<long>(left, 200)));
  }
}

namespace {

/// Anonymous memory for a pool: registered with the transport (the NIC) and
/// with io_uring as fixed buffers, one iovec per slot or block.
class Pool {
 public:
  Pool(Transport& t, uint32_t units, uint32_t unit_size) : t_(t), units_(units), unit_(unit_size) {}
  Pool(const Pool&) = delete;
  ~Pool() {
    if (key_) t_.deregister_memory(key_);
    if (base_) ::munmap(base_, len_);
  }
  Status init(Ring& ring, bool remote_read) {
    len_ = size_t{units_} * unit_;
    void* p = ::mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) return sys_error(fmt::format("allocate buffer pool of {} bytes", len_));
    base_ = static_cast<uint8_t*>(p);
    RCP_ASSIGN(key_, t_.register_memory(base_, len_, remote_read));
    // One fixed buffer for the whole pool when io_uring allows it (≤ 1 GiB
    // per buffer), so a run of adjacent blocks can be written with one
    // WRITE_FIXED; otherwise one buffer per unit.
    single_ = len_ <= (size_t{1} << 30);
    std::vector<iovec> iov;
    if (single_) {
      iov.push_back({base_, len_});
    } else {
      for (uint32_t i = 0; i < units_; ++i) iov.push_back({base_ + size_t{i} * unit_, unit_});
    }
    return ring.register_buffers(iov);
  }
  /// The fixed-buffer index that holds unit i.
  int buf_index(uint32_t i) const { return single_ ? 0 : static_cast<int>(i); }
  /// Whether a write may span several units (they share one fixed buffer).
  bool spans_units() const { return single_; }
  uint8_t* at(uint32_t i) const { return base_ + size_t{i} * unit_; }
  uint32_t key() const { return key_; }
  uint32_t unit() const { return unit_; }

 private:
  Transport& t_;
  uint32_t units_, unit_;
  uint8_t* base_ = nullptr;
  size_t len_ = 0;
  uint32_t key_ = 0;
  bool single_ = false;
};

/// The loop both roles share: drain transport events and disk completions,
/// let the role start new work, and sleep in epoll only when nothing moved.
template <typename Role>
Status run_loop(Channel& ch, Ring& ring, Role& role, const SessionOptions& opt) {
  Transport& t = ch.transport();
  Fd ep(::epoll_create1(EPOLL_CLOEXEC));
  if (!ep.valid()) return sys_error("epoll_create1");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u32 = 0;
  if (::epoll_ctl(ep.get(), EPOLL_CTL_ADD, t.wait_fd(), &ev) != 0) return sys_error("epoll_ctl transport");
  ev.data.u32 = 1;
  if (::epoll_ctl(ep.get(), EPOLL_CTL_ADD, ring.event_fd(), &ev) != 0) return sys_error("epoll_ctl ring");
  if (HashPool* hp = role.hash_pool()) {
    ev.data.u32 = 2;
    if (::epoll_ctl(ep.get(), EPOLL_CTL_ADD, hp->event_fd(), &ev) != 0) return sys_error("epoll_ctl hash");
  }
  std::vector<HashPool::Done> hashed;
  std::vector<TransportEvent> events;
  auto last_progress = std::chrono::steady_clock::now();
  bool armed = false;
  while (!role.finished()) {
    bool progress = false;
    events.clear();
    RCP_TRY(ch.poll(events));
    for (auto& e : events) {
      // Once the role is done, a close that arrived with its last message is
      // the peer hanging up as agreed, not a failure.
      if (role.finished()) break;
      progress = true;
      RCP_TRY(role.on_event(e));
    }
    Status io_status;
    ring.reap([&](uint64_t ud, int res) {
      progress = true;
      if (io_status.ok()) io_status = role.on_io(ud, res);
    });
    RCP_TRY(io_status);
    if (HashPool* hp = role.hash_pool()) {  // digests the workers finished
      hashed.clear();
      hp->take(hashed);
      for (auto& d : hashed) {
        progress = true;
        RCP_TRY(role.on_hashed(d.id, d.digest));
      }
    }
    bool started = false;
    RCP_TRY(role.pump(started));
    if (started) progress = true;
    RCP_TRY(ring.submit());
    if (progress) {
      last_progress = std::chrono::steady_clock::now();
      armed = false;
      continue;
    }
    if (opt.cancel && opt.cancel->load()) return make_error(EINTR, "interrupted");
    if (!armed) {  // arm, then look once more before sleeping: no lost wakeup
      RCP_TRY(t.arm());
      armed = true;
      continue;
    }
    epoll_event out[4];
    int n = ::epoll_wait(ep.get(), out, 4, 200);
    for (int i = 0; i < n; ++i)
      if (out[i].data.u32 == 1) ring.drain_event_fd();
    armed = false;
    const auto idle = std::chrono::steady_clock::now() - last_progress;
    if (idle > std::chrono::milliseconds(opt.idle_timeout_ms) && ring.in_flight() == 0)
      return make_error(ETIMEDOUT, fmt::format("no progress from {} for {} s", t.peer(), opt.idle_timeout_ms / 1000));
  }
  // Let the last messages leave before the connection is torn down.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (t.send_pending() && std::chrono::steady_clock::now() < deadline) {
    events.clear();
    RCP_TRY(t.poll(events));
    if (t.send_pending()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return {};
}

/// Starts a role's digest workers unless digests are off or kept on the loop.
Status start_hash_pool(const SessionOptions& opt, std::unique_ptr<HashPool>& hp) {
  if (opt.checksum == Checksum::none || opt.hash_threads == 0) return {};
  RCP_ASSIGN(hp, HashPool::create(opt.checksum, opt.hash_threads));
  return {};
}

/// Chunks smaller than this are hashed on the loop: handing a 4 KiB chunk to
/// a worker cost ~20 µs of CPU more per file than hashing it (10,000 small
/// files: 9.0k/s with the hand-off vs 11.2k/s without, bench/run).
constexpr uint32_t kOffloadMin = 128 * 1024;

Error proto_error(Transport& t, std::string what) { return make_error(EPROTO, fmt::format("{}: {}", t.peer(), what)); }

// ---------------------------------------------------------------- source

class Source {
 public:
  Source(Channel& ch, Ring& ring, std::vector<SourceOpener> files, const SessionOptions& opt)
      : ch_(ch), t_(ch.transport()), ring_(ring), opt_(opt), openers_(files.begin(), files.end()),
        pool_(t_, opt.slots, opt.chunk_size), free_(opt.slots), slots_(opt.slots) {}

  Status init() {
    RCP_TRY(pool_.init(ring_, true));
    return start_hash_pool(opt_, hp_);
  }
  bool finished() const { return done_; }
  HashPool* hash_pool() const { return hp_.get(); }

  TransferStats& stats() { return stats_; }

  Status on_event(TransportEvent& e) {
    if (e.kind == TransportEvent::Kind::closed)
      return make_error(e.status, fmt::format("connection to {} lost: {}", t_.peer(), e.detail));
    if (e.kind != TransportEvent::Kind::message) return proto_error(t_, "read completion on the sending side");
    auto m = wire::decode(e.message);
    if (!m.ok()) return make_error(m.error().code, t_.peer() + ": " + m.error().context);
    if (auto* d = std::get_if<wire::ChunkDone>(&m.value())) {
      for (uint32_t s : d->slots)
        if (!free_.give(s)) return proto_error(t_, fmt::format("returned slot {} that was not lent", s));
      return {};
    }
    if (auto* r = std::get_if<wire::FileResult>(&m.value())) {
      auto it = files_.find(r->file_id);
      if (it == files_.end() || !it->second.end_sent) return proto_error(t_, "result for a file not sent");
      if (r->err == 0) {
        ++stats_.files_ok;
        stats_.bytes += it->second.size;
      } else {
        ++stats_.files_failed;
        stats_.errors.push_back(fmt::format("{}: {}", it->second.shown, r->message));
      }
      files_.erase(it);
      return {};
    }
    if (std::holds_alternative<wire::Done>(m.value())) {
      if (!finish_sent_ || !files_.empty()) return proto_error(t_, "DONE before every file was answered");
      done_ = true;
      return {};
    }
    if (auto* em = std::get_if<wire::ErrorMsg>(&m.value())) return make_error(em->err, t_.peer() + ": " + em->message);
    return proto_error(t_, fmt::format("unexpected {}", wire::type_name(wire::type_of(m.value()))));
  }

  Status on_io(uint64_t slot_index, int res) {
    Slot& s = slots_[slot_index];
    File& f = files_.at(s.file_id);
    if (res < 0) return make_error(-res, "read '" + f.shown + "'");
    if (res == 0) return make_error(EIO, fmt::format("'{}' shrank while being sent (EOF at {})", f.shown, s.offset + s.done));
    s.done += static_cast<uint32_t>(res);
    if (s.done < s.length) {  // short read: ask for the rest
      submit_read(static_cast<uint32_t>(slot_index), f);
      return {};
    }
    uint8_t* p = pool_.at(static_cast<uint32_t>(slot_index));
    if (hp_ && s.length >= kOffloadMin) {
      hp_->submit({slot_index, {{p, s.length}}});
      return {};
    }
    return on_hashed(slot_index, digest_of(opt_.checksum, {p, s.length}));
  }

  /// The chunk in this slot is read and hashed: announce it.
  Status on_hashed(uint64_t slot_index, const wire::Digest& digest) {
    Slot& s = slots_[slot_index];
    File& f = files_.at(s.file_id);
    uint8_t* p = pool_.at(static_cast<uint32_t>(slot_index));
    wire::ChunkReady c;
    c.file_id = s.file_id;
    c.slot = static_cast<uint32_t>(slot_index);
    c.offset = s.offset;
    c.length = s.length;
    c.addr = reinterpret_cast<uint64_t>(p);
    c.rkey = pool_.key();
    c.digest = digest;
    if (chunk_seq_++ == test_faults().source_corrupt) p[s.length / 2] ^= 0x5a;
    if (test_faults().source_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(test_faults().source_delay_ms));
    f.ledger.add_digest(s.offset, s.length, c.digest);
    --f.reads_out;
    RCP_TRY(ch_.send(c));
    return maybe_end(f);
  }

  Status pump(bool& started) {
    for (;;) {
      if (!cur_) {
        if (openers_.empty()) break;
        RCP_TRY(open_next(started));
        continue;
      }
      File& f = files_.at(*cur_);
      if (f.next_chunk == f.nchunks) {
        cur_.reset();
        RCP_TRY(maybe_end(f));
        continue;
      }
      uint32_t slot;
      if (!free_.take_one(slot)) break;
      ChunkSpan c = chunk_at(f.size, opt_.chunk_size, f.next_chunk++);
      slots_[slot] = {f.id, c.offset, c.length, 0};
      ++f.reads_out;
      submit_read(slot, f);
      started = true;
    }
    if (!cur_ && openers_.empty() && !finish_sent_ && all_ended()) {
      RCP_TRY(ch_.send(wire::Finish{}));
      finish_sent_ = true;
      started = true;
    }
    return {};
  }

 private:
  struct File {
    uint32_t id;
    Fd fd;
    uint64_t size;
    std::string shown;
    uint64_t nchunks;
    uint64_t next_chunk = 0;
    uint32_t reads_out = 0;
    bool end_sent = false;
    FileLedger ledger;
  };
  struct Slot {
    uint32_t file_id = 0;
    uint64_t offset = 0;
    uint32_t length = 0;
    uint32_t done = 0;
  };

  void submit_read(uint32_t slot, File& f) {
    Slot& s = slots_[slot];
    uint8_t* p = pool_.at(slot) + s.done;
    while (!ring_.read_fixed(f.fd.get(), p, s.length - s.done, s.offset + s.done, pool_.buf_index(slot), slot))
      (void)ring_.submit();
  }

  Status open_next(bool& started) {
    SourceOpener op = std::move(openers_.front());
    openers_.pop_front();
    auto sf = op();
    if (!sf.ok()) {
      ++stats_.files_failed;
      stats_.errors.push_back(sf.error().message());
      return {};
    }
    const uint32_t id = next_id_++;
    File f{id, std::move(sf->fd), sf->size, sf->shown, chunk_count(sf->size, opt_.chunk_size), 0, 0, false,
           FileLedger(opt_.checksum, sf->size)};
    // A directory entry is a FILE_BEGIN with S_IFDIR in its mode and no data.
    const uint32_t mode = sf->is_dir ? (S_IFDIR | (sf->mode & 0777)) : (sf->mode & 0777);
    wire::FileBegin fb{id, sf->size, mode, sf->name};
    RCP_TRY(ch_.send(fb));
    files_.emplace(id, std::move(f));
    cur_ = id;
    started = true;
    return {};
  }

  Status maybe_end(File& f) {
    if (f.end_sent || f.next_chunk < f.nchunks || f.reads_out > 0) return {};
    if (!f.ledger.complete()) return make_error(EIO, "internal: '" + f.shown + "' not fully hashed");
    f.end_sent = true;
    f.fd.reset();
    return ch_.send(wire::FileEnd{f.id, f.size, f.ledger.file_digest()});
  }

  bool all_ended() const {
    for (auto& [id, f] : files_)
      if (!f.end_sent) return false;
    return true;
  }

  Channel& ch_;
  Transport& t_;
  Ring& ring_;
  const SessionOptions& opt_;
  std::deque<SourceOpener> openers_;
  Pool pool_;
  std::unique_ptr<HashPool> hp_;  // after pool_: its workers stop before the pool goes
  IndexPool free_;
  std::vector<Slot> slots_;
  std::map<uint32_t, File> files_;
  std::optional<uint32_t> cur_;
  uint32_t next_id_ = 1;
  int64_t chunk_seq_ = 0;
  bool finish_sent_ = false;
  bool done_ = false;
  TransferStats stats_;
};

// ---------------------------------------------------------------- sink

class Sink {
 public:
  Sink(Channel& ch, Ring& ring, Destination& dest, const SessionOptions& opt)
      : ch_(ch), t_(ch.transport()), ring_(ring), dest_(dest), opt_(opt),
        pool_(t_, opt.blocks, opt.block_size), free_(opt.blocks) {}

  Status init() {
    RCP_TRY(pool_.init(ring_, false));
    return start_hash_pool(opt_, hp_);
  }
  bool finished() const { return done_sent_; }
  HashPool* hash_pool() const { return hp_.get(); }

  TransferStats& stats() { return stats_; }

  Status on_event(TransportEvent& e) {
    if (e.kind == TransportEvent::Kind::closed)
      return make_error(e.status, fmt::format("connection to {} lost: {}", t_.peer(), e.detail));
    if (e.kind == TransportEvent::Kind::read_done) return on_read_done(e);
    auto m = wire::decode(e.message);
    if (!m.ok()) return make_error(m.error().code, t_.peer() + ": " + m.error().context);
    return std::visit([&](auto& msg) { return handle(msg); }, m.value());
  }

  Status on_io(uint64_t ud, int res) {
    auto wit = writes_.find(ud);
    if (wit == writes_.end()) return make_error(EIO, "internal: unknown write completion");
    Write w = wit->second;
    writes_.erase(wit);
    Pending& p = pending_.at(w.cookie);
    File& f = files_.at(p.c.file_id);
    if (res < 0 && !f.failed) fail_file(f, make_error(-res, "write '" + f.shown + "'").message());
    if (res > 0 && static_cast<uint32_t>(res) < w.len && !f.failed) {  // short write: the rest
      Write rest{w.cookie, w.block, w.file_off + static_cast<uint32_t>(res), w.buf_off + static_cast<uint32_t>(res),
                 w.len - static_cast<uint32_t>(res)};
      submit_write(f, rest);
      return {};
    }
    if (res == 0 && !f.failed) fail_file(f, "write '" + f.shown + "': no progress");
    if (--p.writes_out == 0) {
      if (!f.failed) f.written += p.c.length;
      finish_chunk(w.cookie);
      return check_file(f.id);
    }
    return {};
  }

  Status pump(bool& started) {
    while (!queue_.empty()) {
      wire::ChunkReady& c = queue_.front();
      File& f = files_.at(c.file_id);
      if (f.failed) {
        done_slots_.push_back(c.slot);
        queue_.pop_front();
        --f.chunks_active;
        RCP_TRY(check_file(f.id));
        continue;
      }
      const uint32_t nblocks = blocks_for(c.length, opt_.block_size);
      const uint32_t nwrs = (nblocks + t_.negotiated().max_sge - 1) / t_.negotiated().max_sge;
      if (free_.available() < nblocks || t_.read_capacity() < nwrs) break;
      Pending p;
      p.c = std::move(c);
      queue_.pop_front();
      free_.take(nblocks, p.blocks);
      // Ascending order turns adjacent free blocks into one contiguous run,
      // which is then written with one WRITE_FIXED instead of one per block.
      std::sort(p.blocks.begin(), p.blocks.end());
      const uint64_t cookie = next_cookie_++;
      auto [it, ok] = pending_.emplace(cookie, std::move(p));
      RCP_TRY(post_read(cookie, it->second));
      started = true;
    }
    while (!done_slots_.empty()) {
      wire::ChunkDone d;
      size_t n = std::min(done_slots_.size(), wire::kMaxDoneBatch);
      d.slots.assign(done_slots_.begin(), done_slots_.begin() + static_cast<long>(n));
      done_slots_.erase(done_slots_.begin(), done_slots_.begin() + static_cast<long>(n));
      RCP_TRY(ch_.send(d));
      started = true;
    }
    if (finish_seen_ && files_.empty() && !done_sent_) {
      RCP_TRY(ch_.send(wire::Done{stats_.files_ok, stats_.files_failed}));
      done_sent_ = true;
      started = true;
    }
    return {};
  }

 private:
  struct File {
    File(uint32_t id_, uint64_t size_, uint32_t mode_, Checksum algo)
        : id(id_), size(size_), mode(mode_), ledger(algo, size_) {}
    uint32_t id = 0;
    uint64_t size = 0;
    uint32_t mode = 0644;
    std::string shown;
    bool is_dir = false;  // a directory entry: created at FILE_END
    std::string rel;      // its path below the destination
    std::shared_ptr<Fd> parent;  // the file's directory when below the destination (outlives tmp)
    TempFile tmp;
    FileLedger ledger;
    uint64_t written = 0;
    uint32_t chunks_active = 0;
    bool end_seen = false;
    bool failed = false;
    std::string error;
    wire::Digest expected;
  };
  struct Pending {
    wire::ChunkReady c;
    std::vector<uint32_t> blocks;
    int attempts = 0;
    uint32_t writes_out = 0;
  };
  struct Write {
    uint64_t cookie;
    uint32_t block;
    uint64_t file_off;
    uint32_t buf_off;
    uint32_t len;
  };

  Status handle(wire::FileBegin& fb) {
    if (finish_seen_) return proto_error(t_, "FILE_BEGIN after FINISH");
    if (files_.count(fb.file_id) || fb.file_id < next_file_id_) return proto_error(t_, "file id reused");
    next_file_id_ = fb.file_id + 1;
    File f(fb.file_id, fb.size, fb.mode, opt_.checksum);
    f.is_dir = S_ISDIR(fb.mode);
    std::string target;
    int dir_fd = dest_.dir.get();
    if (dest_.is_dir) {
      f.shown = dest_.shown + (dest_.shown.empty() || dest_.shown.back() == '/' ? "" : "/") + fb.name;
      // A name may carry directories (recursive copies), but only plain
      // components: no "..", no absolute path, nothing to clean away.
      auto clean = clean_relative(fb.name);
      if (!clean.ok() || clean->empty() || clean.value() != fb.name) {
        f.failed = true;
        f.error = fmt::format("refused unsafe file name '{}' from {}", fb.name, t_.peer());
      } else if (f.is_dir) {
        f.rel = fb.name;
        if (f.size != 0) return proto_error(t_, "directory entry with a size");
      } else {
        target = base_name(fb.name);
        const std::string parent = dir_name(fb.name);
        if (!parent.empty()) {
          auto pd = subdir(parent, 0755);
          if (pd.ok()) {
            f.parent = std::move(pd.value());
            dir_fd = f.parent->get();
          } else {
            f.failed = true;
            f.error = pd.error().message();
          }
        }
      }
    } else {
      f.shown = dest_.shown;
      target = dest_.leaf;
      if (files_seen_ > 0 || f.is_dir) {
        f.failed = true;
        f.error = f.is_dir ? "a directory was sent to the file destination '" + dest_.shown + "'"
                           : "several files sent to the single-file destination '" + dest_.shown + "'";
      }
    }
    ++files_seen_;
    if (!f.failed && !f.is_dir && !is_plain_name(target)) {
      f.failed = true;
      f.error = fmt::format("refused unsafe file name '{}' from {}", fb.name, t_.peer());
    }
    if (!f.failed && !f.is_dir) {
      auto tmp = TempFile::create(dir_fd, target, f.shown, f.mode & 0777);
      if (tmp.ok()) {
        f.tmp = std::move(tmp.value());
      } else {
        f.failed = true;
        f.error = tmp.error().message();
      }
    }
    files_.emplace(fb.file_id, std::move(f));
    return {};
  }

  Status handle(wire::ChunkReady& c) {
    auto it = files_.find(c.file_id);
    if (it == files_.end()) return proto_error(t_, fmt::format("chunk for unknown file {}", c.file_id));
    File& f = it->second;
    if (f.end_seen) return proto_error(t_, "chunk after FILE_END");
    if (c.length > opt_.chunk_size || blocks_for(c.length, opt_.block_size) > free_.capacity())
      return proto_error(t_, fmt::format("chunk of {} bytes exceeds the agreed {}", c.length, opt_.chunk_size));
    if (!f.ledger.claim(c.offset, c.length))
      return proto_error(t_, fmt::format("chunk [{}, +{}) overlaps another or lies outside '{}' ({} bytes)", c.offset,
                                         c.length, f.shown, f.size));
    if (c.digest.len != digest_of(opt_.checksum, {}).len) return proto_error(t_, "chunk digest has the wrong length");
    ++f.chunks_active;
    queue_.push_back(std::move(c));
    return {};
  }

  Status handle(wire::FileEnd& fe) {
    auto it = files_.find(fe.file_id);
    if (it == files_.end() || it->second.end_seen) return proto_error(t_, "FILE_END for an unknown file");
    File& f = it->second;
    if (fe.size != f.size) return proto_error(t_, "FILE_END size differs from FILE_BEGIN");
    f.end_seen = true;
    f.expected = fe.digest;
    return check_file(f.id);
  }

  Status handle(wire::Finish&) {
    finish_seen_ = true;
    return {};
  }
  Status handle(wire::ErrorMsg& e) { return make_error(e.err, t_.peer() + ": " + e.message); }
  template <typename M>
  Status handle(M& m) {
    return proto_error(t_, fmt::format("unexpected {}", wire::type_name(wire::type_of(m))));
  }

  Status post_read(uint64_t cookie, Pending& p) {
    std::vector<uint64_t> addrs;
    addrs.reserve(p.blocks.size());
    for (uint32_t b : p.blocks) addrs.push_back(reinterpret_cast<uint64_t>(pool_.at(b)));
    auto wrs = plan_reads(p.c.addr, p.c.length, addrs, opt_.block_size, t_.negotiated().max_sge);
    ++p.attempts;
    return t_.read(cookie, p.c.rkey, wrs);
  }

  Status on_read_done(TransportEvent& e) {
    auto it = pending_.find(e.cookie);
    if (it == pending_.end()) return make_error(EIO, "internal: unknown read completion");
    Pending& p = it->second;
    File& f = files_.at(p.c.file_id);
    if (e.status != 0)
      return make_error(e.status, fmt::format("pulling '{}' at offset {} from {}: {}", f.shown, p.c.offset, t_.peer(), e.detail));
    if (opt_.checksum == Checksum::none) return on_hashed(e.cookie, p.c.digest);
    if (read_seq_++ == test_faults().sink_corrupt_once && p.attempts == 1) pool_.at(p.blocks.front())[0] ^= 0x5a;
    HashPool::Job job{e.cookie, {}};
    uint32_t left = p.c.length;
    for (uint32_t b : p.blocks) {
      uint32_t n = std::min(left, opt_.block_size);
      job.pieces.push_back({pool_.at(b), n});
      left -= n;
    }
    if (hp_ && p.c.length >= kOffloadMin) {
      hp_->submit(std::move(job));
      return {};
    }
    Hasher h(opt_.checksum);
    for (auto piece : job.pieces) h.update(piece);
    return on_hashed(e.cookie, h.finish());
  }

 public:
  /// A pulled chunk was hashed: verify it, then write it or fetch it again.
  Status on_hashed(uint64_t cookie, const wire::Digest& got) {
    Pending& p = pending_.at(cookie);
    File& f = files_.at(p.c.file_id);
    {
      if (!(got == p.c.digest)) {
        if (p.attempts < 2) {
          log_info("chunk at offset {} of '{}' failed verification; fetching it again", p.c.offset, f.shown);
          return post_read(cookie, p);
        }
        fail_file(f, fmt::format("chunk at offset {} failed {} verification twice (expected {}, got {})", p.c.offset,
                                 checksum_name(opt_.checksum), to_hex(p.c.digest), to_hex(got)));
      }
    }
    done_slots_.push_back(p.c.slot);  // the source may refill that slot now
    if (f.failed) {
      finish_chunk(cookie);
      return check_file(f.id);
    }
    f.ledger.add_digest(p.c.offset, p.c.length, p.c.digest);
    // One write per run of consecutive blocks (a run is contiguous memory).
    uint32_t left = p.c.length;
    size_t i = 0;
    while (i < p.blocks.size()) {
      size_t j = i + 1;
      while (pool_.spans_units() && j < p.blocks.size() && p.blocks[j] == p.blocks[j - 1] + 1) ++j;
      const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(left, uint64_t{j - i} * opt_.block_size));
      Write w{cookie, p.blocks[i], p.c.offset + uint64_t{i} * opt_.block_size, 0, n};
      ++p.writes_out;
      submit_write(f, w);
      left -= n;
      i = j;
    }
    return {};
  }

 private:
  void submit_write(File& f, const Write& w) {
    const uint64_t id = next_write_++;
    writes_.emplace(id, w);
    while (!ring_.write_fixed(f.tmp.fd(), pool_.at(w.block) + w.buf_off, w.len, w.file_off, pool_.buf_index(w.block), id))
      (void)ring_.submit();
  }

  void finish_chunk(uint64_t cookie) {
    auto it = pending_.find(cookie);
    for (uint32_t b : it->second.blocks) free_.give(b);
    File& f = files_.at(it->second.c.file_id);
    --f.chunks_active;
    pending_.erase(it);
  }

  /// The directory `rel` below the destination, created where missing and
  /// opened beneath it once per session: a tree of 10,000 files in one
  /// directory otherwise costs 2 openat2 + mkdirat + 2 close per file (about
  /// a third of the sink's syscalls per small file, strace -c).
  Result<std::shared_ptr<Fd>> subdir(const std::string& rel, unsigned mode) {
    if (auto it = dirs_.find(rel); it != dirs_.end()) return it->second;
    RCP_ASSIGN(Fd fd, make_dirs_beneath(dest_.dir.get(), rel, mode));
    // Bounded: a cleared cache costs one reopen per directory, never a leak
    // of fds for a tree with many directories.
    if (dirs_.size() >= kDirCache) dirs_.clear();
    auto p = std::make_shared<Fd>(std::move(fd));
    dirs_.emplace(rel, p);
    return p;
  }

  void fail_file(File& f, std::string why) {
    if (f.failed) return;
    f.failed = true;
    f.error = std::move(why);
  }

  Status check_file(uint32_t id) {
    File& f = files_.at(id);
    if (!f.end_seen || f.chunks_active > 0) return {};
    if (!f.failed) {
      if (f.written != f.size || !f.ledger.complete()) {
        fail_file(f, fmt::format("'{}' incomplete: {} of {} bytes", f.shown, f.written, f.size));
      } else if (wire::Digest d = f.ledger.file_digest(); !(d == f.expected)) {
        fail_file(f, fmt::format("'{}' file digest mismatch", f.shown));
      } else if (f.is_dir) {
        // mkdir applies the umask; the copy gets the source's mode exactly,
        // as files do (and as rsync -a does).
        auto dir = subdir(f.rel, f.mode & 0777);
        if (!dir.ok())
          fail_file(f, dir.error().message());
        else if (::fchmod(dir.value()->get(), f.mode & 0777) != 0)
          fail_file(f, sys_error("chmod '" + f.shown + "'").message());
      } else if (Status st = f.tmp.commit(f.mode, opt_.fsync); !st.ok()) {
        // (written == size and the ledger is complete, so the temp file holds
        // exactly the file: commit() need not truncate.)
        fail_file(f, st.error().message());
      }
    }
    wire::FileResult r{id, 0, ""};
    if (f.failed) {
      f.tmp.discard();
      r.err = EIO;
      r.message = f.error;
      ++stats_.files_failed;
      stats_.errors.push_back(fmt::format("{}: {}", f.shown, f.error));
      log_error("{}: {}", f.shown, f.error);
    } else {
      ++stats_.files_ok;
      stats_.bytes += f.size;
    }
    files_.erase(id);
    return ch_.send(r);
  }

  Channel& ch_;
  Transport& t_;
  Ring& ring_;
  Destination& dest_;
  const SessionOptions& opt_;
  Pool pool_;
  std::unique_ptr<HashPool> hp_;  // after pool_: its workers stop before the pool goes
  IndexPool free_;
  static constexpr size_t kDirCache = 64;
  std::unordered_map<std::string, std::shared_ptr<Fd>> dirs_;  // before files_: outlives their temp files
  std::map<uint32_t, File> files_;
  std::deque<wire::ChunkReady> queue_;
  std::unordered_map<uint64_t, Pending> pending_;
  std::unordered_map<uint64_t, Write> writes_;
  std::vector<uint32_t> done_slots_;
  uint64_t next_cookie_ = 1;
  uint64_t next_write_ = 1;
  uint32_t next_file_id_ = 0;
  uint32_t files_seen_ = 0;
  int64_t read_seq_ = 0;
  bool finish_seen_ = false;
  bool done_sent_ = false;
  TransferStats stats_;
};

}  // namespace

Result<TransferStats> run_source(Channel& ch, std::vector<SourceOpener> files, const SessionOptions& opt) {
  RCP_ASSIGN(auto ring, Ring::create(256));
  Source s(ch, *ring, std::move(files), opt);
  RCP_TRY(s.init());
  Status st = run_loop(ch, *ring, s, opt);
  ring->drain();  // before s (and its pool) goes
  if (!st.ok()) {
    (void)ch.send(wire::ErrorMsg{st.error().code, st.error().context});
    return st.error();
  }
  return std::move(s.stats());
}

Result<TransferStats> run_sink(Channel& ch, Destination& dest, const SessionOptions& opt) {
  RCP_ASSIGN(auto ring, Ring::create(256));
  Sink s(ch, *ring, dest, opt);
  RCP_TRY(s.init());
  Status st = run_loop(ch, *ring, s, opt);
  ring->drain();  // before s (and its pool) goes
  if (!st.ok()) {
    (void)ch.send(wire::ErrorMsg{st.error().code, st.error().context});
    return st.error();
  }
  return std::move(s.stats());
}

}  // namespace rcp
