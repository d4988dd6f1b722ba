// The sink: a complete entry checked and put in place (session/sink_role.h).
#include "session/sink_role.h"

namespace rcp {

/// Every file is in: the directories still open are complete, and
/// --delete-after's deletions are done now.
void Sink::prune() {
  pruner_->finish();
  stats_.files_deleted = pruner_->deleted();
  for (const auto& e : pruner_->errors()) {
    ++stats_.files_failed;
    stats_.note_error(e);
  }
  stats_.files_failed += static_cast<uint32_t>(pruner_->errors_dropped());
  stats_.errors_dropped += pruner_->errors_dropped();
}

Status Sink::check_file(uint32_t id) {
  File& f = files_.at(id);
  // (A file whose fsync is in flight is not checked again: nothing of it
  // may arrive after its FILE_END, and it is no hard link that waits.)
  if (!f.end_seen || f.chunks_active > 0) return {};
  if (f.link_to != 0 && f.link_to != f.id && !f.failed) {  // a hard link: its first file must be in place
    auto lt = leaders_.find(f.link_to);
    if (lt == leaders_.end()) {
      fail_file(f, fmt::format("hard link '{}' to a file not sent as one", f.shown));
    } else if (lt->second.state == Leader::pending) {
      if (!f.waiting) lt->second.waiting.push_back(f.id);
      f.waiting = true;
      return {};
    } else if (lt->second.state == Leader::failed) {
      fail_file(f, fmt::format("hard link '{}': the file it links to failed", f.shown));
    }
  }
  const bool follower = f.link_to != 0 && f.link_to != f.id;
  if (!f.failed && !follower) xattrs_before(f);
  // The destination's file stays as it is (a dry run: the rules skip it).
  bool kept = opt_.rules.dry_run ? (f.type == S_IFREG && !follower && !f.dry_write) : f.skip;
  if (!f.failed && f.skip && !opt_.rules.dry_run && f.type == S_IFREG && !follower) update_kept_xattrs(f);
  if (!f.failed && !f.skip) {
    if (f.written != f.size || !f.ledger.complete()) {
      fail_file(f, fmt::format("'{}' incomplete: {} of {} bytes", f.shown, f.written, f.size));
    } else if (wire::Digest d = f.ledger.file_digest(); !(d == f.expected)) {
      fail_file(f, fmt::format("'{}' file digest mismatch", f.shown));
    } else if (f.is_dir || f.type != S_IFREG || f.skip_device || (f.link_to != 0 && f.link_to != f.id)) {
      if (Status st = commit(f); !st.ok()) fail_file(f, st.error().message());
    } else if (f.basis.valid() && f.basis_matched == f.size && f.basis_size == f.size) {
      // Every chunk matched: the file is the same, keep it (as rsync -c
      // does) with the source's mtime, so the next quick check skips it.
      kept = true;
      f.tmp.remove();
      keep_meta(f);
    } else if (Status z = f.tmp.is_partial() || f.left_zeros ? f.tmp.set_size(f.size) : Status{}; !z.ok()) {
      fail_file(f, z.error().message());  // (a kept partial file may be longer than the file now)
    } else if (Status t = set_mtime_ns(f.tmp.fd(), f.mtime_ns); !t.ok()) {
      fail_file(f, fmt::format("{} of '{}': {}", t.error().context, f.shown, t.error().message()));
    } else if (Status st = commit_file(f); !st.ok()) {
      fail_file(f, st.error().message());
    } else if (f.syncing) {
      return {};
    }
  }
  return finish_file(f, kept, follower);
}

/// The end of an entry, in place or failed: its FILE_RESULT, the stats,
/// and the hard links that waited for it.
Status Sink::finish_file(File& f, bool kept, bool follower) {
  const uint32_t id = f.id;
  wire::FileResult r{id, 0, 0, f.pulled, f.matched, "", 0};
  stats_.bytes_pulled += f.pulled;
  stats_.bytes_matched += f.matched;
  if (f.failed) {
    // A device is written in place: what reached it stays there.
    if (f.tmp.is_device() && f.touched)
      f.error += fmt::format("; block device '{}' is left partially written", f.shown);
    f.tmp.discard();
    r.err = EIO;
    r.message = f.error;
    ++stats_.files_failed;
    // Not logged here: the stats carry it to rcp and rcpd, which print each once.
    stats_.note_error(fmt::format("{}: {}", f.shown, f.error));
  } else {
    ++stats_.files_ok;
    if (f.is_dir) ++stats_.dirs_ok;
    if (kept) ++stats_.files_skipped;
    r.skipped = kept ? 1 : 0;
    stats_.bytes += f.size;
    if (!f.skip_device) r.changes = changes_of(f, !kept && f.type == S_IFREG && !follower, follower) | f.xattr_bits;
    if (r.changes && opt_.on_item) opt_.on_item(f.name, f.type, r.changes, false);
  }
  // The rest of a skipped or failed file is done too: the progress line's
  // bytes reach the announced total.
  progress_bytes_ += f.size - std::min(f.counted, f.size);
  if (opt_.on_progress) opt_.on_progress(progress_bytes_, stats_.files_ok + stats_.files_failed, {});
  const bool leader = f.link_to == id;
  xattr_buffered_ -= f.xattr_bytes;
  files_.erase(id);
  RCP_TRY(ch_.send(r));
  if (auto lt = leaders_.find(id); leader && lt != leaders_.end()) {
    lt->second.state = r.err == 0 ? Leader::ok : Leader::failed;
    const std::vector<uint32_t> waiting = std::move(lt->second.waiting);
    for (uint32_t w : waiting)
      if (files_.count(w)) RCP_TRY(check_file(w));
  }
  return {};
}

/// What this entry changes at the destination (fs/itemize.h), decided from
/// what stood there when it began: its owner and group as they will be
/// (mapped; the owner only where it is applied, as root).
uint16_t Sink::changes_of(const File& f, bool data, bool follower) const {
  return changes_of(f.old, f.type, f.size, f.meta, data, follower);
}

uint16_t Sink::changes_of(const OldEntry& old, unsigned type, uint64_t size, const EntryMeta& meta, bool data,
                          bool follower) const {
  EntryMeta in = meta;
  Preserve p = opt_.preserve;
  p.owner = p.owner && running_as_root();
  if (p.owner) in.uid = map_uid(in.user, in.uid, p.numeric_ids);
  if (p.group) in.gid = map_gid(in.group, in.gid, p.numeric_ids);
  return item_changes(old, type, size, in, p, data, opt_.rules.checksum, follower);
}

/// The entry is complete and verified: puts it in place with its metadata.
Status Sink::commit(File& f) {
  const Preserve& p = opt_.preserve;
  if (f.is_dir) {
    // With -p the directory is made writable for its contents; its own
    // bits, like its mtime, are set once everything in it is (fix_dirs).
    RCP_TRY(tree_.make_dir(f.rel, p.perms ? (f.mode | 0700) : f.mode, f.shown));
    DirFix fix{f.rel, f.shown, f.meta, {}};
    if (p.xattrs || p.acls) RCP_TRY(dir_xattrs(f, fix.acl));  // (the access ACL sets bits: with them, at fix_dirs)
    if (p.perms || p.times || p.owner || p.group || !fix.acl.empty()) dirs_.push_back(std::move(fix));
    return {};
  }
  if (f.link_to != 0 && f.link_to != f.id) {
    const Leader& l = leaders_.at(f.link_to);
    RCP_ASSIGN(auto from, tree_.parent_of(l.name));
    return make_hardlink(from->get(), base_name(l.name), f.dir_fd, f.leaf, f.shown);
  }
  if (f.skip_device) {
    log_info("skipping device '{}': only root creates devices", f.shown);
    return {};
  }
  if (f.type == S_IFLNK) {
    RCP_TRY(make_symlink(f.dir_fd, f.leaf, f.meta.link_target, f.shown));
    return apply_entry_meta(f.dir_fd, f.leaf, f.meta, p, f.shown);
  }
  // (A regular file goes through commit_file().)
  RCP_TRY(make_special(f.dir_fd, f.leaf, f.meta.mode, f.meta.rdev, f.shown));
  return apply_entry_meta(f.dir_fd, f.leaf, f.meta, p, f.shown);
}

/// A regular file, complete and verified, into place. Owner first (chown
/// clears setuid), then the bits; the mtime was set last of all writes.
/// With --fsync the fsync goes through the ring, and on_fsynced() puts the
/// file in place: io_uring runs several at once on its workers, where one
/// at a time on this thread held every file behind each disk flush (ext4
/// here: 4,000 files/s in turn, 9,000 four at a time; bench/README.md).
Status Sink::commit_file(File& f) {
  const Preserve& p = opt_.preserve;
  RCP_TRY(apply_fd_meta(f.tmp.fd(), f.meta, p, -1, f.shown));
  // xattrs after the owner (a chown clears security.capability), before
  // the bits (which set an ACL's mask as the source's group bits are).
  if ((p.xattrs || p.acls) && !f.tmp.is_device()) RCP_TRY(set_xattrs(f, f.tmp.fd()));
  // (written == size and the ledger is complete, so the temp file holds
  // exactly the file: commit() need not truncate.)
  // Past kMaxFsyncsQueued this thread fsyncs the file itself, which also
  // slows what it takes in until the disk catches up.
  if (!opt_.fsync || f.tmp.is_device() || fsyncs_.size() >= kMaxFsyncsQueued)
    return f.tmp.commit(f.mode, opt_.fsync, p.perms);
  RCP_TRY(f.tmp.set_bits(f.mode, p.perms));
  const uint64_t id = next_write_++;
  fsyncs_.emplace(id, f.id);
  f.syncing = true;
  if (test_faults().fsync_park) {  // held until FINISH (submit_parked_fsyncs)
    parked_fsyncs_.push_back({id, f.tmp.fd()});
    return {};
  }
  while (!ring_.fsync(f.tmp.fd(), id)) (void)ring_.submit();
  return {};
}

/// RCP_TEST_FAULT fsync-park: the fsyncs held back (each file still open)
/// go to the ring once the source has sent everything, so a suite can pile
/// up as many as the bound allows, whatever the disk's speed.
void Sink::submit_parked_fsyncs() {
  for (auto [id, fd] : parked_fsyncs_)
    while (!ring_.fsync(fd, id)) (void)ring_.submit();
  parked_fsyncs_.clear();
}

/// A file's --fsync completed: in place now, or failed (nothing of it
/// appears), then finished like any other.
Status Sink::on_fsynced(std::unordered_map<uint64_t, uint32_t>::iterator sy, int res) {
  File& f = files_.at(sy->second);
  fsyncs_.erase(sy);
  f.syncing = false;
  if (fsync_seq_++ == test_faults().fsync_fail) res = -EIO;
  if (res < 0)
    fail_file(f, make_error(-res, "fsync '" + f.shown + "'").message());
  else if (Status st = f.tmp.publish(); !st.ok())
    fail_file(f, st.error().message());
  return finish_file(f, false, false);
}

/// A file kept as it is (every chunk matched): the source's mtime, and
/// with -p/-o/-g its bits and owner, as rsync updates an unchanged file.
/// Best effort: the content is right anyway.
void Sink::keep_meta(File& f) {
  const Preserve& p = opt_.preserve;
  const int bits =
      p.perms ? static_cast<int>(preserved_bits(f.meta.mode, false, running_as_root() && p.trusted_sender)) : -1;
  if (p.xattrs || p.acls) (void)set_xattrs(f, f.basis.get());
  if (p.perms || p.owner || p.group) (void)apply_fd_meta(f.basis.get(), f.meta, p, bits, f.shown);
  (void)set_mtime_ns(f.basis.get(), f.mtime_ns);
}

/// After every entry of the session: each directory received gets its
/// owner, bits and mtime (creating its contents changed its mtime).
void Sink::fix_dirs() {
  for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
    auto fd = open_beneath(dest_.dir.get(), it->rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    for (const Xattr& acl : it->acl) {  // (before the bits: chmod then sets the ACL's mask from them)
      if (!fd.ok()) break;
      if (Status a = set_xattr(fd->get(), acl); !a.ok()) xattr_failed(it->shown, a.error());
    }
    Status st = fd.ok() ? apply_fd_meta(fd->get(), it->meta, opt_.preserve,
                                        opt_.preserve.perms ? static_cast<int>(preserved_bits(it->meta.mode, true, running_as_root() && opt_.preserve.trusted_sender)) : -1, it->shown)
                        : Status(fd.error());
    if (!st.ok()) {
      ++stats_.files_failed;
      stats_.note_error(fmt::format("{}: {}", it->shown, st.error().message()));
    }
  }
  dirs_.clear();
  dir_acls_held_ = 0;
}

}  // namespace rcp
