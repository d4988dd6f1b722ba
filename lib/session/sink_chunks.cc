// The sink: a chunk from its READ to the disk (session/sink_role.h).
#include "session/sink_role.h"

namespace rcp {

Status Sink::on_io(uint64_t ud, int res) {
  if (auto sy = fsyncs_.find(ud); sy != fsyncs_.end()) return on_fsynced(sy, res);
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
  if (--p.writes_out == 0) return chunk_written(w.cookie);
  return {};
}

/// Every write of a chunk completed (or it needed none: -S, all zeros).
Status Sink::chunk_written(uint64_t cookie) {
  Pending& p = pending_.at(cookie);
  File& f = files_.at(p.c.file_id);
  if (!f.failed) f.written += p.c.length;
  progress_bytes_ += p.c.length;
  f.counted += p.c.length;
  if (opt_.on_progress) opt_.on_progress(progress_bytes_, stats_.files_ok + stats_.files_failed, f.shown);
  finish_chunk(cookie);
  return check_file(f.id);
}

Status Sink::pump(bool& started) {
  // Writes done inline by submit_one() (a short one's rest may add more).
  while (!written_inline_.empty()) {
    std::vector<std::pair<uint64_t, int>> done;
    done.swap(written_inline_);
    for (auto [id, res] : done) RCP_TRY(on_io(id, res));
    started = true;
  }
  while (!queue_.empty()) {
    wire::ChunkReady& c = queue_.front();
    File& f = files_.at(c.file_id);
    if (f.failed || f.skip) {  // returned unread
      give_back(c.slot);
      queue_.pop_front();
      --f.chunks_active;
      RCP_TRY(check_file(f.id));
      continue;
    }
    if (f.partial_size > 0 || f.basis.valid()) {
      // A partial file's own chunks first (in place), then the old file's (copied).
      Result<bool> same = false;
      if (f.partial_size > 0)
        same = reuse_.try_reuse(opt_, f.tmp.fd(), f.partial_size, -1, f.id, c.offset, c.length, c.digest);
      if (same.ok() && !same.value() && f.basis.valid()) {
        same = reuse_.try_reuse(opt_, f.basis.get(), f.basis_size, f.tmp.fd(), f.id, c.offset, c.length, c.digest);
        if (same.ok() && same.value()) f.basis_matched += c.length;
      }
      if (!same.ok()) fail_file(f, same.error().context + " '" + f.shown + "': " + same.error().message());
      if (!same.ok() || same.value()) {
        if (same.ok()) {
          f.ledger.add_digest(c.offset, c.length, c.digest);
          f.written += c.length;
          f.matched += c.length;
          progress_bytes_ += c.length;
          f.counted += c.length;
        }
        give_back(c.slot);
        queue_.pop_front();
        --f.chunks_active;
        RCP_TRY(check_file(f.id));
        started = true;
        continue;
      }
    }
    const uint32_t nblocks = blocks_for(c.length, opt_.block_size);
    const uint32_t nwrs = (nblocks + t_.negotiated().max_sge - 1) / t_.negotiated().max_sge;
    if (free_.available() < nblocks || t_.read_capacity() < nwrs) break;
    if (!pacer_.take(c.length)) break;  // --bwlimit: the reads wait (pace_wait_ms)
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
  if (finish_seen_ && !parked_fsyncs_.empty()) {
    submit_parked_fsyncs();
    started = true;
  }
  if (finish_seen_ && files_.empty() && !pruned_) {
    if (pruner_) prune();
    fix_dirs();  // (after pruning: deleting an entry changes its directory's mtime)
    pruned_ = true;
    started = true;
  }
  // --delete's removals are this side's own bulk (a million entries, a
  // million messages): queued only while the peer keeps up with what it
  // was sent (transport/backlog.h), the rest on later turns, DONE last.
  for (; !deleted_.empty() && t_.unsent_bytes() < kUnsentSoft; deleted_.pop_front()) {
    RCP_TRY(ch_.send(deleted_.front()));
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
  if (pruned_ && deleted_.empty() && !done_sent_) {
    RCP_TRY(ch_.send(wire::Done{stats_.files_ok, stats_.files_failed, stats_.files_deleted}));
    done_sent_ = true;
    started = true;
  }
  return {};
}

Status Sink::post_read(uint64_t cookie, Pending& p) {
  std::vector<uint64_t> addrs;
  addrs.reserve(p.blocks.size());
  for (uint32_t b : p.blocks) addrs.push_back(reinterpret_cast<uint64_t>(pool_.at(b)));
  auto wrs = plan_reads(p.c.addr, p.c.length, addrs, opt_.block_size, t_.negotiated().max_sge);
  ++p.attempts;
  return t_.read(cookie, p.c.rkey, wrs);
}

Status Sink::on_read_done(TransportEvent& e) {
  auto it = pending_.find(e.cookie);
  if (it == pending_.end()) return make_error(EIO, "internal: unknown read completion");
  Pending& p = it->second;
  File& f = files_.at(p.c.file_id);
  if (e.status != 0)
    return make_error(e.status, fmt::format("pulling '{}' at offset {} from {}: {}", f.shown, p.c.offset, t_.peer(), e.detail));
  f.pulled += p.c.length;
  if (opt_.checksum == Checksum::none && !opt_.chunk_key) return on_hashed(e.cookie, p.c.digest);
  if (read_seq_++ == test_faults().sink_corrupt_once && p.attempts == 1) pool_.at(p.blocks.front())[0] ^= 0x5a;
  HashPool::Job job{e.cookie, {}, p.c.file_id, p.c.offset};
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
  return on_hashed(e.cookie, chunk_digest(opt_, p.c.file_id, p.c.offset, job.pieces));
}

/// A pulled chunk was hashed: verify it, then write it or fetch it again.
Status Sink::on_hashed(uint64_t cookie, const wire::Digest& got) {
  Pending& p = pending_.at(cookie);
  File& f = files_.at(p.c.file_id);
  {
    if (!chunk_digest_equal(opt_, got, p.c.digest)) {
      if (p.attempts < 2) {
        log_info("chunk at offset {} of '{}' failed verification; fetching it again", p.c.offset, f.shown);
        return post_read(cookie, p);
      }
      fail_file(f, fmt::format("chunk at offset {} failed {} verification twice (expected {}, got {})", p.c.offset,
                               opt_.chunk_key ? "keyed (HMAC-SHA256)" : checksum_name(opt_.checksum),
                               to_hex(p.c.digest), to_hex(got)));
    }
  }
  give_back(p.c.slot);  // the source may refill that slot now
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
    if (zeros_become_holes(f, w.file_off)) {
      // -S: write around whole blocks of zeros; the file's size is set
      // before the rename, so a zero tail reads back too.
      for (const Span& s : nonzero_spans(pool_.at(w.block), w.file_off, w.len, kHoleGranule)) {
        ++p.writes_out;
        submit_write(f, Write{cookie, w.block, s.offset, static_cast<uint32_t>(s.offset - w.file_off), s.length});
      }
      f.left_zeros = f.left_zeros || f.size > 0;
    } else {
      ++p.writes_out;
      submit_write(f, w);
    }
    left -= n;
    i = j;
  }
  if (p.writes_out == 0) return chunk_written(cookie);  // nothing but zeros
  return {};
}

/// One write, or with O_DIRECT two: the whole granules from its start
/// through the direct fd, the rest (a file's unaligned tail) buffered.
/// Direct I/O thus only ever covers whole pages no buffered write touches.
void Sink::submit_write(File& f, const Write& w) {
  const uint32_t head = f.direct.direct_part(w.file_off, pool_.at(w.block) + w.buf_off, w.len);
  if (head > 0 && head < w.len) {
    ++pending_.at(w.cookie).writes_out;  // the tail is one more write of this chunk
    submit_one(f, Write{w.cookie, w.block, w.file_off, w.buf_off, head}, f.direct.fd.get());
    submit_one(f, Write{w.cookie, w.block, w.file_off + head, w.buf_off + head, w.len - head}, f.tmp.fd());
    return;
  }
  submit_one(f, w, head > 0 ? f.direct.fd.get() : f.tmp.fd());
}

void Sink::submit_one(File& f, const Write& w, int fd) {
  const uint64_t id = next_write_++;
  writes_.emplace(id, w);
  f.touched = true;
  if (fd == f.tmp.fd()) {  // buffered (the O_DIRECT twin always goes through the ring)
    if (f.inline_writes < 0) f.inline_writes = writes_inline(f);
    if (f.inline_writes) {
      // Completed in pump(), not here: the caller still walks the chunk's
      // blocks. No NOP through the ring for it (an SQE and a CQE per
      // small file).
      const ssize_t r = ::pwrite(fd, pool_.at(w.block) + w.buf_off, w.len, static_cast<off_t>(w.file_off));
      written_inline_.push_back({id, r < 0 ? -errno : static_cast<int>(r)});
      return;
    }
  }
  while (!ring_.write_fixed(fd, pool_.at(w.block) + w.buf_off, w.len, w.file_off, pool_.buf_index(w.block), id))
    (void)ring_.submit();
}

/// write_inline() asked once per directory, not per file: a directory's
/// files are on its file system (an fstatfs per file was 2 % of the
/// daemon's time receiving 10,000 x 4 KiB files). f.parent null: the
/// destination directory itself.
bool Sink::writes_inline(const File& f) {
  const bool same = inline_asked_ && (f.parent ? !inline_dir_.expired() && inline_dir_.lock() == f.parent : inline_top_);
  if (same) return inline_answer_;
  inline_answer_ = write_inline(f.tmp.fd());
  inline_asked_ = true;
  inline_top_ = !f.parent;
  inline_dir_ = f.parent;
  return inline_answer_;
}

void Sink::finish_chunk(uint64_t cookie) {
  auto it = pending_.find(cookie);
  for (uint32_t b : it->second.blocks) free_.give(b);
  File& f = files_.at(it->second.c.file_id);
  --f.chunks_active;
  pending_.erase(it);
}

}  // namespace rcp
