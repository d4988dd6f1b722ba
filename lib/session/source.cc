#include "session/source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <deque>
#include <fmt/core.h>
#include <map>
#include <optional>
#include <thread>
#include <unordered_map>
#include <variant>

#include "hash/hash_pool.h"
#include "io/direct.h"
#include "io/ring.h"
#include "auth/message_mac.h"
#include "io/write_inline.h"
#include "session/hole_scan.h"
#include "session/ledger.h"
#include "session/loop.h"
#include "session/plan.h"
#include "session/pool.h"
#include "session/slot_map.h"
#include "session/small_file.h"
#include "session/walk_totals.h"
#include "session/xattr_pieces.h"
#include "transport/backlog.h"
#include "util/log.h"
#include "util/overloaded.h"
#include "util/test_faults.h"

namespace rcp {
namespace {

/// A chunk of at most this many bytes (a small file's) takes a sub-slot
/// (session/slot_map.h): one block of the sink's pool (kMaxBlockSize), so
/// the sink's blocks, 256 by default, bound the small files in flight
/// rather than the 16 slots of the window.
constexpr uint32_t kSubSlot = 64u << 10;

class Source {
 public:
  Source(Channel& ch, Ring& ring, SourceStream files, const SessionOptions& opt)
      : ch_(ch), t_(ch.transport()), ring_(ring), opt_(opt), stream_(std::move(files)),
        pool_(t_, opt.slots, opt.chunk_size),
        free_(opt.slots, opt.chunk_size, kSubSlot, kMaxSlots),
        slots_(free_.ids()) {}

  Status init() {
    tally_.start(now_s());
    RCP_TRY(pool_.init(ring_, true));
    return start_hash_pool(opt_, hp_);
  }
  bool finished() const { return done_; }
  HashPool* hash_pool() const { return hp_.get(); }

  TransferStats& stats() { return stats_; }
  int pace_wait_ms() const { return pacer_.wait_ms(); }

  Status on_event(TransportEvent& e) {
    if (e.kind == TransportEvent::Kind::read_done) return proto_error(t_, "read completion on the sending side");
    RCP_ASSIGN(wire::Message m, message_of(t_, e));
    return on_message(m);
  }

  /// One handler per wire message, and no generic one: a message added to
  /// wire::Message does not compile until it is handled (or refused) here.
  Status on_message(wire::Message& m) {
    return std::visit(overloaded{
                          [&](wire::ChunkDone& d) { return on_chunk_done(d); },
                          [&](wire::FileResult& r) { return on_file_result(r); },
                          [&](wire::Done& d) { return on_done(d); },
                          [&](wire::StopFile& x) { return on_stop(x); },
                          [&](wire::EntryDeleted& x) { return on_deleted(x); },
                          [&](wire::ErrorMsg& em) -> Status { return make_error(em.err, t_.peer() + ": " + em.message); },
                          // What only a source sends, or only comes before the session:
                          [&](wire::Open& x) { return unexpected(x); },
                          [&](wire::OpenOk& x) { return unexpected(x); },
                          [&](wire::FileBegin& x) { return unexpected(x); },
                          [&](wire::ChunkReady& x) { return unexpected(x); },
                          [&](wire::FileEnd& x) { return unexpected(x); },
                          [&](wire::Finish& x) { return unexpected(x); },
                          [&](wire::FileSkipped& x) { return unexpected(x); },
                          [&](wire::ModuleList& x) { return unexpected(x); },
                          [&](wire::WalkTotals& x) { return unexpected(x); },
                          [&](wire::Hole& x) { return unexpected(x); },
                          [&](wire::XattrPiece& x) { return unexpected(x); },
                          [&](wire::SmallFile& x) { return unexpected(x); },
                      },
                      m);
  }

  /// A read through the ring completed: handled in pump(), as the inline
  /// ones are, so that one turn hashes and announces at most kReadPerTurn.
  Status on_io(uint64_t slot_index, int res) {
    reads_done_.push_back({static_cast<uint32_t>(slot_index), res});
    return {};
  }

  Status on_read(uint32_t slot_index, int res) {
    Slot& s = slots_[slot_index];
    File& f = files_.at(s.file_id);
    if (res < 0) return make_error(-res, "read '" + f.shown + "'");
    if (res == 0) return make_error(EIO, fmt::format("'{}' shrank while being sent (EOF at {})", f.shown, s.offset + s.done));
    s.done += static_cast<uint32_t>(res);
    if (s.done < s.length) {  // short read: ask for the rest
      submit_read(static_cast<uint32_t>(slot_index), f);
      return {};
    }
    uint8_t* p = slot_at(static_cast<uint32_t>(slot_index));
    if (hp_ && s.length >= kOffloadMin) {
      hp_->submit({slot_index, {{p, s.length}}, s.file_id, s.offset});
      return {};
    }
    const std::span<const uint8_t> piece{p, s.length};
    return on_hashed(slot_index, chunk_digest(opt_, s.file_id, s.offset, {&piece, 1}));
  }

  /// The chunk in this slot is read and hashed: announce it.
  Status on_hashed(uint64_t slot_index, const wire::Digest& digest) {
    Slot& s = slots_[slot_index];
    File& f = files_.at(s.file_id);
    uint8_t* p = slot_at(static_cast<uint32_t>(slot_index));
    wire::ChunkReady c;
    c.file_id = s.file_id;
    c.slot = static_cast<uint32_t>(slot_index);
    c.offset = s.offset;
    c.length = s.length;
    c.addr = reinterpret_cast<uint64_t>(p);
    c.rkey = pool_.key();
    c.digest = digest;
    chunk_faults(p, s.length);
    f.ledger.add_digest(s.offset, s.length, c.digest);
    --f.reads_out;
    RCP_TRY(ch_.send(c));
    return maybe_end(f);
  }

  /// RCP_TEST_FAULT's source switches, applied to each chunk (a SMALL_FILE's
  /// data too) once it is hashed: corrupt the N-th, pause before each, hold
  /// every one after the first while a file exists.
  void chunk_faults(uint8_t* p, uint32_t length) {
    if (chunk_seq_++ == test_faults().source_corrupt) p[length / 2] ^= 0x5a;
    if (test_faults().source_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(test_faults().source_delay_ms));
    if (!test_faults().source_hold.empty() && chunk_seq_ > 1)
      while (::access(test_faults().source_hold.c_str(), F_OK) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  /// Hashes and announces the chunks whose reads completed (a short one's
  /// rest may add more), until this turn's bytes reach kReadPerTurn.
  Status drain_reads(uint64_t& turn, bool& started) {
    while (!reads_done_.empty() && turn < kReadPerTurn) {
      const auto [slot, res] = reads_done_.front();
      reads_done_.pop_front();
      if (res > 0) turn += static_cast<uint64_t>(res);
      RCP_TRY(on_read(slot, res));
      started = true;
    }
    return {};
  }

  Status pump(bool& started) {
    uint64_t turn = 0;  // bytes hashed and announced in this turn
    RCP_TRY(drain_reads(turn, started));
    for (;;) {
      if (turn >= kReadPerTurn) {  // the loop comes back at once (started)
        started = true;
        break;
      }
      // What this side says of its own accord (files, skips, holes: a
      // million unreadable files are a million FILE_SKIPPED in one turn)
      // waits while the peer has not read what it was sent (transport/backlog.h).
      if (t_.unsent_bytes() >= kUnsentSoft) break;
      if (!cur_) {
        if (!more() || files_.size() + whole_.size() >= kMaxFilesInFlight || unended_ >= std::clamp<uint32_t>(opt_.max_files_open, 1, kMaxFilesOpen)) break;
        RCP_TRY(open_next(started));
        RCP_TRY(announce_totals(started));
        continue;
      }
      File& f = files_.at(*cur_);
      if (f.next_chunk == f.nchunks) {
        cur_.reset();
        RCP_TRY(maybe_end(f));
        continue;
      }
      if (f.scan) {  // chunks wholly in a hole are neither read nor sent
        RCP_ASSIGN(ChunkRun run, f.scan->run_at(f.next_chunk));
        if (run.hole && run.count > 0) {
          RCP_TRY(send_hole(f, run.count));
          started = true;
          continue;
        }
      }
      ChunkSpan c = chunk_at(f.size, opt_.chunk_size, f.next_chunk);
      std::optional<uint32_t> taken = free_.take(c.length);
      if (!taken) break;
      const uint32_t slot = *taken;
      if (!pacer_.take(c.length)) {  // --bwlimit: read and announce it later (pace_wait_ms)
        free_.give(slot);
        break;
      }
      ++f.next_chunk;
      slots_[slot] = {f.id, c.offset, c.length, 0};
      ++f.reads_out;
      submit_read(slot, f);
      // A chunk read inline is hashed and announced now, while its bytes
      // are still in this core's cache: reading every free slot first and
      // hashing after (a CHUNK_DONE often frees several) hashed from memory.
      RCP_TRY(drain_reads(turn, started));
      started = true;
    }
    RCP_TRY(announce_totals(started));
    if (!cur_ && !more() && !finish_sent_ && all_ended()) {
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
    bool is_dir = false;
    DirectFile direct;  // O_DIRECT twin of fd (--direct), for whole granules
    bool stopped = false;  // STOP_FILE: the sink has it; no more reads
    uint64_t counted = 0;  // of its bytes, counted in progress_bytes_ so far
    std::optional<HoleScan> scan;  // its data extents (regular files and devices with data)
    std::string name;      // as sent (for -i)
    unsigned type = 0;     // S_IFMT, as sent
    int inline_reads = -1;  // io/write_inline.h: pread on the loop; -1: not asked yet
    bool blocking = false;  // O_NONBLOCK taken off fd, for reads through the ring (fs/sources.h)
    uint64_t dev = 0;       // st_dev of a regular file (0: a device sent as a file)
  };
  struct Whole {  // a SMALL_FILE sent, not yet answered
    uint64_t size;
    std::string shown;
    std::string name;  // as sent (for -i)
  };
  struct LinkGroup {
    uint32_t leader;
    uint64_t left;  // links not seen yet
  };
  struct Slot {
    uint32_t file_id = 0;
    uint64_t offset = 0;
    uint32_t length = 0;
    uint32_t done = 0;
  };

  static double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  /// WALK_TOTALS when due: after each entry opened (the FILE_BEGIN it counts
  /// is sent) and once more per pump (an empty walk), always before FINISH.
  Status announce_totals(bool& started) {
    if (tally_.final_sent()) return {};
    auto t = tally_.due(!more(), now_s());
    if (!t) return {};
    if (opt_.on_totals) opt_.on_totals(t->files, t->bytes, t->final != 0);
    started = true;
    return ch_.send(*t);
  }

  Status on_chunk_done(const wire::ChunkDone& d) {
    for (uint32_t s : d.slots) {
      if (!free_.give(s)) return proto_error(t_, fmt::format("returned slot {} that was not lent", s));
      progress_bytes_ += slots_[s].length;
      if (auto it = files_.find(slots_[s].file_id); it != files_.end()) it->second.counted += slots_[s].length;
    }
    report_progress(slots_.empty() || d.slots.empty() ? 0 : slots_[d.slots.back()].file_id);
    return {};
  }

  void report_progress(uint32_t file_id) {
    if (!opt_.on_progress) return;
    auto it = files_.find(file_id);
    opt_.on_progress(progress_bytes_, stats_.files_ok + stats_.files_failed,
                     it == files_.end() ? std::string_view{} : std::string_view{it->second.shown});
  }

  Status on_stop(const wire::StopFile& x) {
    auto it = files_.find(x.file_id);
    if (it == files_.end()) return proto_error(t_, "STOP_FILE for a file not begun");
    File& f = it->second;
    if (f.is_dir) return proto_error(t_, "STOP_FILE for a directory");
    if (f.end_sent || f.stopped) return {};
    f.stopped = true;
    f.next_chunk = f.nchunks;  // chunks in flight still come back (unread by the sink)
    if (cur_ == f.id) cur_.reset();
    return maybe_end(f);
  }

  Status on_file_result(const wire::FileResult& r) {
    if (auto w = whole_.find(r.file_id); w != whole_.end()) return on_whole_result(r, w);
    auto it = files_.find(r.file_id);
    if (it == files_.end() || !it->second.end_sent) return proto_error(t_, "result for a file not sent");
    const File& f = it->second;
    // What the sink says it pulled and reused is bounded by what there was:
    // each chunk is pulled at most twice (one re-fetch) or reused once.
    // A dry run stops every file and answers "would write" (skipped 0) with nothing pulled.
    const bool dry = opt_.rules.dry_run;
    if (r.matched > f.size || r.pulled / 2 > f.size || (f.stopped && r.err == 0 && !r.skipped && !dry) ||
        (dry && (r.pulled != 0 || r.matched != 0)))
      return proto_error(t_, fmt::format("result for '{}' does not fit the file ({} pulled, {} reused of {} bytes{})",
                                         f.shown, r.pulled, r.matched, f.size, f.stopped ? ", stopped" : ""));
    stats_.bytes_pulled += r.pulled;
    stats_.bytes_matched += r.matched;
    if (r.err == 0) {
      if (r.changes && opt_.on_item) opt_.on_item(f.name, f.type, r.changes, false);
      ++stats_.files_ok;
      if (it->second.is_dir) ++stats_.dirs_ok;
      if (r.skipped) ++stats_.files_skipped;
      stats_.bytes += it->second.size;
    } else {
      ++stats_.files_failed;
      stats_.note_error(fmt::format("{}: {}", it->second.shown, r.message));
    }
    // The rest of a skipped, stopped or failed file is done too: the
    // progress line's bytes reach the announced total.
    progress_bytes_ += f.size - std::min(f.counted, f.size);
    files_.erase(it);
    report_progress(0);
    return {};
  }

  /// A SMALL_FILE's answer: nothing reused, at most its size pulled (one
  /// send: the sink does not fetch it again).
  Status on_whole_result(const wire::FileResult& r, std::unordered_map<uint32_t, struct Whole>::iterator w) {
    const uint64_t size = w->second.size;
    if (r.matched != 0 || r.pulled > size)
      return proto_error(t_, fmt::format("result for '{}' does not fit the file ({} pulled, {} reused of {} bytes)",
                                         w->second.shown, r.pulled, r.matched, size));
    stats_.bytes_pulled += r.pulled;
    if (r.err == 0) {
      if (r.changes && opt_.on_item) opt_.on_item(w->second.name, S_IFREG, r.changes, false);
      ++stats_.files_ok;
      if (r.skipped) ++stats_.files_skipped;
      stats_.bytes += size;
    } else {
      ++stats_.files_failed;
      stats_.note_error(fmt::format("{}: {}", w->second.shown, r.message));
    }
    progress_bytes_ += size;
    whole_.erase(w);
    report_progress(0);
    return {};
  }

  /// Is there another entry to send? (Asks the stream for it, once.)
  bool more() {
    if (!next_ && stream_) {
      next_ = stream_();
      if (!next_) stream_ = nullptr;
    }
    return next_.has_value();
  }

  Status on_deleted(const wire::EntryDeleted& x) {
    // (Nothing reaches the role after DONE: the loop stops at finished().)
    if (!opt_.deleting) return proto_error(t_, "ENTRY_DELETED in a session without --delete");
    ++deleted_seen_;
    if (opt_.on_item) opt_.on_item(x.name, x.is_dir ? S_IFDIR : 0, 0, true);
    return {};
  }

  Status on_done(const wire::Done& d) {
    if (!finish_sent_ || !files_.empty() || !whole_.empty()) return proto_error(t_, "DONE before every file was answered");
    if (d.files_deleted < deleted_seen_)
      return proto_error(t_, fmt::format("DONE counts {} deletions after {} ENTRY_DELETED", d.files_deleted, deleted_seen_));
    stats_.files_deleted = d.files_deleted;
    done_ = true;
    return {};
  }

  template <typename M>
  Status unexpected(const M&) {
    return proto_error(t_, fmt::format("unexpected {}", wire::MsgTraits<M>::name));
  }

  /// read_inline() asked once per file system, not per file (an fstatfs
  /// per file was 2 % of a small-file push's sending side).
  bool reads_inline(const File& f) {
    if (f.dev != 0 && f.dev == inline_dev_) return inline_dev_reads_;
    const bool r = read_inline(f.fd.get());
    if (f.dev != 0) {
      inline_dev_ = f.dev;
      inline_dev_reads_ = r;
    }
    return r;
  }

  uint8_t* slot_at(uint32_t id) const { return pool_.at(0) + free_.offset(id); }

  void submit_read(uint32_t slot, File& f) {
    Slot& s = slots_[slot];
    uint8_t* p = slot_at(slot) + s.done;
    // O_DIRECT only when the whole rest of the chunk is whole granules (a
    // file's tail and odd chunk sizes are read buffered, in one piece).
    const uint32_t want = s.length - s.done;
    const int fd = f.direct.direct_part(s.offset + s.done, p, want) == want ? f.direct.fd.get() : f.fd.get();
    if (fd == f.fd.get()) {  // buffered: from tmpfs pread here, not via io-wq (io/write_inline.h)
      if (f.inline_reads < 0) f.inline_reads = reads_inline(f);
      if (f.inline_reads) {
        // Completed by drain_reads() once this returns, not here (the
        // caller is in the middle of its file), nor through a NOP on the ring.
        const ssize_t r = ::pread(fd, p, want, static_cast<off_t>(s.offset + s.done));
        reads_done_.push_back({slot, r < 0 ? -errno : static_cast<int>(r)});
        return;
      }
      if (!f.blocking) {
        if (Status st = clear_nonblock(fd, f.shown); !st.ok()) {
          reads_done_.push_back({slot, -(st.error().code != 0 ? st.error().code : EIO)});
          return;
        }
        f.blocking = true;
      }
    }
    while (!ring_.read_fixed(fd, p, want, s.offset + s.done, pool_.buf_index(free_.whole(slot)), slot))
      (void)ring_.submit();
  }

  Status open_next(bool& started) {
    SourceOpener op = std::move(*next_);
    next_.reset();
    auto sf = op();
    if (!sf.ok()) {
      // Told to the sink too: a get's client must not think it has everything.
      ++stats_.files_failed;
      tally_.begun(0);  // an entry of the walk too (the sink counts it as a failed file)
      const std::string why = sf.error().message();
      stats_.note_error(why);
      started = true;
      return ch_.send(wire::FileSkipped{sf.error().code != 0 ? sf.error().code : EIO, why});
    }
    if (sf->vanished_err != 0) {  // listed, gone before its turn: a failure that vanished
      ++stats_.files_failed;
      ++stats_.files_vanished;
      tally_.begun(0);
      stats_.note_error(sf->skip_note);
      started = true;
      return ch_.send(wire::FileSkipped{sf->vanished_err, sf->skip_note, 1});
    }
    if (!sf->skip_note.empty()) {
      started = true;
      return ch_.send(wire::FileSkipped{0, sf->skip_note});
    }
    wire::FileBegin fb = file_begin(*sf);
    if (!fits(fb)) {
      ++stats_.files_failed;
      tally_.begun(0);
      const std::string why = fmt::format("'{}': name and link target too long for one FILE_BEGIN", sf->shown);
      stats_.note_error(why);
      started = true;
      return ch_.send(wire::FileSkipped{ENAMETOOLONG, why});
    }
    // -X/-A: read before anything is sent, so an entry whose xattrs cannot
    // be read (or exceed what a sink accepts: E2BIG) fails as a whole.
    std::vector<Xattr> xattrs;
    if (opt_.preserve.xattrs || opt_.preserve.acls) {
      auto x = source_xattrs(*sf);
      if (!x.ok()) {
        ++stats_.files_failed;
        tally_.begun(0);
        const std::string why = fmt::format("'{}': {}", sf->shown, x.error().message());
        stats_.note_error(why);
        started = true;
        return ch_.send(wire::FileSkipped{x.error().code, why});
      }
      xattrs = std::move(x.value());
    }
    const uint32_t id = next_id_++;
    fb.file_id = id;
    if (small_whole_ && !sf->is_dir && (fb.mode & S_IFMT) == S_IFREG && sf->fd.valid() && sf->size > 0 &&
        sf->size <= wire::kMaxFileData && !(opt_.preserve.hard_links && sf->nlink > 1))
      return send_whole(*sf, std::move(fb), started);
    return begin_chunked(*sf, std::move(fb), std::move(xattrs), started);
  }

  /// An entry through the general path: FILE_BEGIN (and its XATTRs), its
  /// chunks as slots free up (pump), FILE_END once all are hashed.
  Status begin_chunked(SourceFile& sf, wire::FileBegin fb, std::vector<Xattr> xattrs, bool& started) {
    const uint32_t id = fb.file_id;
    if (opt_.preserve.hard_links && !sf.is_dir && (sf.meta.mode & S_IFMT) == S_IFREG && sf.nlink > 1)
      hard_link(sf, fb);
    File f{id, std::move(sf.fd), sf.size, sf.shown, chunk_count(sf.size, opt_.chunk_size), 0, 0, false,
           FileLedger(opt_.checksum, sf.size), sf.is_dir, {}};
    if (!f.is_dir && f.size > 0 && f.fd.valid() && !sf.no_holes)
      f.scan.emplace(f.size, opt_.chunk_size, [fd = f.fd.get(), size = f.size](uint64_t from) -> Result<DataExtent> {
        return find_data(fd, from, size);
      });
    f.name = fb.name;
    f.type = fb.mode & S_IFMT;
    f.dev = sf.dev;
    if (opt_.direct && !f.is_dir && f.size > 0) f.direct = direct_or_buffered(f.fd.get(), O_RDONLY, f.shown, direct_noted_);
    RCP_TRY(ch_.send(fb));
    // A hard link's xattrs are its group's first file's (the same inode).
    if (fb.link_to == 0 || fb.link_to == id)
      for (const Xattr& x : xattrs)
        for (const wire::XattrPiece& p : split_xattr(id, x)) RCP_TRY(ch_.send(p));
    tally_.begun(sf.size);
    files_.emplace(id, std::move(f));
    ++unended_;
    cur_ = id;
    started = true;
    return {};
  }

  /// A small file whole, in one SMALL_FILE: read, hashed and sent from one
  /// buffer, with no File, slot or FILE_END (wire/messages.h). What is
  /// kept until its FILE_RESULT: its size and names.
  Status send_whole(SourceFile& sf, wire::FileBegin fb, bool& started) {
    wire::SmallFile m;
    m.begin = std::move(fb);
    m.data.resize(sf.size);
    m.digest.len = chunk_digest_len(opt_);  // (its size, for the fit below)
    if (wire::small_file_size(m) + auth::kTagSize > t_.max_message())  // (RDMA; a long name)
      return begin_chunked(sf, std::move(m.begin), {}, started);
    const ssize_t n = ::pread(sf.fd.get(), m.data.data(), sf.size, 0);
    if (n < 0) return make_error(errno, "read '" + sf.shown + "'");
    if (static_cast<uint64_t>(n) < sf.size)
      return make_error(EIO, fmt::format("'{}' shrank while being sent (EOF at {})", sf.shown, n));
    sf.fd.reset();
    auto* p = reinterpret_cast<uint8_t*>(m.data.data());
    const std::span<const uint8_t> piece{p, m.data.size()};
    m.digest = chunk_digest(opt_, m.begin.file_id, 0, {&piece, 1});
    chunk_faults(p, static_cast<uint32_t>(m.data.size()));
    whole_.emplace(m.begin.file_id, Whole{sf.size, std::move(sf.shown), m.begin.name});
    tally_.begun(sf.size);
    started = true;
    return ch_.send(m);
  }

  /// -X/-A: the xattrs of a regular file (through its fd) or a directory
  /// (through the directory the walk opened). trusted.*/security.* are read
  /// when this side runs as root; the sink sets what its own rules allow.
  /// Symlinks and special files carry none: Linux allows no user.* xattr on
  /// them and no ACL on a symlink (rsync sends a root's security.* ones;
  /// rcp does not read them, see the man page).
  Result<std::vector<Xattr>> source_xattrs(const SourceFile& sf) const {
    const XattrScope scope{opt_.preserve.xattrs, opt_.preserve.acls, running_as_root()};
    const int fd = sf.is_dir ? (sf.dir ? sf.dir->get() : -1) : sf.fd.get();
    if (fd < 0) return std::vector<Xattr>{};
    return read_xattrs(fd, scope);
  }

  /// The FILE_BEGIN announcing sf (file_id left 0): its type (a directory
  /// entry is S_IFDIR with no data), permission bits, mtime and owner — with
  /// names when the sink is to map them — and a symlink's target.
  wire::FileBegin file_begin(const SourceFile& sf) const {
    wire::FileBegin fb;
    const uint32_t type = sf.is_dir ? S_IFDIR : (sf.meta.mode & S_IFMT) ? (sf.meta.mode & S_IFMT) : S_IFREG;
    fb.size = sf.size;
    fb.mode = type | (sf.meta.mode & 07777);
    fb.mtime_ns = sf.meta.mtime_ns;
    fb.name = sf.name;
    fb.uid = sf.meta.uid;
    fb.gid = sf.meta.gid;
    if (opt_.preserve.owner && !opt_.preserve.numeric_ids) fb.user = user_name(sf.meta.uid);
    if (opt_.preserve.group && !opt_.preserve.numeric_ids) fb.group = group_name(sf.meta.gid);
    if (fb.user.size() > wire::kMaxIdName) fb.user.clear();  // (the number then stands alone)
    if (fb.group.size() > wire::kMaxIdName) fb.group.clear();
    fb.link_target = sf.meta.link_target;
    fb.rdev = sf.meta.rdev;
    return fb;
  }

  /// -H: the first file of a hard-link group is its leader (link_to = its
  /// own id); a later one is a link to it, sent without data. Only files
  /// with nlink > 1 are remembered, each until all its links were seen.
  void hard_link(SourceFile& sf, wire::FileBegin& fb) {
    const auto key = std::make_pair(sf.dev, sf.ino);
    auto it = links_.find(key);
    if (it == links_.end()) {
      links_.emplace(key, LinkGroup{fb.file_id, sf.nlink - 1});
      fb.link_to = fb.file_id;
      return;
    }
    fb.link_to = it->second.leader;
    fb.size = sf.size = 0;
    sf.fd.reset();
    if (--it->second.left == 0) links_.erase(it);
  }

  /// Does fb fit one control message (a long name plus a long symlink target may not)?
  static bool fits(const wire::FileBegin& fb) {
    return fb.name.size() <= wire::kMaxPath && fb.link_target.size() <= wire::kMaxPath &&
           wire::kHeaderSize + 64 + fb.name.size() + fb.user.size() + fb.group.size() + fb.link_target.size() <=
               wire::kMaxMessage;
  }

  /// The next `count` chunks of f are a hole: one HOLE for them, folded
  /// into the file digest where their chunk digests would be, and done at
  /// once for the progress line.
  Status send_hole(File& f, uint64_t count) {
    const uint64_t first = f.next_chunk, last = std::min(f.nchunks, first + count);
    const uint64_t offset = first * opt_.chunk_size;
    const uint64_t length = (last == f.nchunks ? f.size : last * opt_.chunk_size) - offset;
    f.next_chunk = last;
    f.ledger.add_digest(offset, length, hole_digest(opt_, f.id, offset, length));
    progress_bytes_ += length;
    f.counted += length;
    report_progress(f.id);
    return ch_.send(wire::Hole{f.id, offset, length});
  }

  Status maybe_end(File& f) {
    if (f.end_sent || f.next_chunk < f.nchunks || f.reads_out > 0) return {};
    if (!f.stopped && !f.ledger.complete()) return make_error(EIO, "internal: '" + f.shown + "' not fully hashed");
    f.end_sent = true;
    --unended_;
    f.fd.reset();
    f.direct.fd.reset();
    // A stopped file's digest means nothing (the sink keeps its own copy).
    return ch_.send(wire::FileEnd{f.id, f.size, f.stopped ? wire::Digest{} : f.ledger.file_digest()});
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
  SourceStream stream_;
  std::optional<SourceOpener> next_;  // taken from stream_, not yet opened
  Pool pool_;
  std::unique_ptr<HashPool> hp_;  // after pool_: its workers stop before the pool goes
  SlotMap free_;  // slots lent to the sink, by id (session/slot_map.h)
  std::deque<std::pair<uint32_t, int>> reads_done_;  // (slot, the read's result or -errno), for pump()
  uint64_t inline_dev_ = 0;  // the file system read_inline() was last asked about, and its answer
  bool inline_dev_reads_ = false;
  std::vector<Slot> slots_;
  std::map<uint32_t, File> files_;
  std::unordered_map<uint32_t, Whole> whole_;  // SMALL_FILEs sent, by id (bounded with files_ by kMaxFilesInFlight)
  // (--direct reads whole granules O_DIRECT; --bwlimit paces what is announced, chunk by chunk.)
  const bool small_whole_ = small_files_whole(opt_) && !opt_.direct && opt_.bwlimit == 0;
  std::map<std::pair<uint64_t, uint64_t>, LinkGroup> links_;  // (dev, ino) of files with more links to come (-H)
  std::optional<uint32_t> cur_;
  uint32_t next_id_ = 1;
  bool direct_noted_ = false;  // the O_DIRECT fallback was logged (once per session)
  uint32_t unended_ = 0;  // files begun whose FILE_END is not sent: each may hold an fd
  int64_t chunk_seq_ = 0;
  bool finish_sent_ = false;
  bool done_ = false;
  uint64_t deleted_seen_ = 0;  // ENTRY_DELETEDs received (DONE's u32 count must reach these; 64 bits never wrap)
  uint64_t progress_bytes_ = 0;
  WalkTally tally_;
  Pacer pacer_{opt_};  // --bwlimit
  TransferStats stats_;
};
}  // namespace

Result<TransferStats> run_source(Channel& ch, std::vector<SourceOpener> files, const SessionOptions& opt) {
  return run_source(ch, stream_of(std::move(files)), opt);
}

Result<TransferStats> run_source(Channel& ch, SourceStream files, const SessionOptions& opt) {
  return run_role<Source>(ch, std::move(files), opt);
}

}  // namespace rcp
