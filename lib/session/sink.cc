#include "session/sink.h"

#include "session/sink_role.h"

namespace rcp {

static_assert(kChangeKnown == wire::kResultChangesKnown, "FILE_RESULT carries fs/itemize.h's bits");
static_assert(Preserve::kKnown == wire::kPreserveKnown, "OPEN carries fs/metadata.h's Preserve bits");

Sink::Sink(Channel& ch, Ring& ring, Destination& dest, const SessionOptions& opt)
    : ch_(ch), t_(ch.transport()), ring_(ring), opt_(opt),
      pool_(t_, opt.blocks, opt.block_size), free_(opt.blocks), dest_(dest), tree_(dest, opt.preserve) {
  // What a source may send (trusted.*/security.* too: a root source reads
  // them) and what this sink sets: those only as root, and never from a
  // pushing client (a file capability is as much a privilege as setuid).
  xarrive_ = XattrScope{opt.preserve.xattrs, opt.preserve.acls, true};
  xscope_ = XattrScope{opt.preserve.xattrs, opt.preserve.acls, running_as_root() && opt.preserve.trusted_sender};
  if (dest.prune && dest.is_dir && dest.dir.valid()) {
    PruneOptions po = *dest.prune;
    po.dry_run = opt.rules.dry_run;
    pruner_.emplace(dest.dir.get(), std::move(po));
    // Listed here (a pull) and reported to the source (a push), in order.
    pruner_->on_delete([this](const std::string& rel, bool is_dir) {
      if (opt_.on_item) opt_.on_item(rel, is_dir ? S_IFDIR : 0, 0, true);
      deleted_.push_back(wire::EntryDeleted{rel, static_cast<uint8_t>(is_dir)});
    });
  }
}

Status Sink::init() {
  RCP_TRY(pool_.init(ring_, false));
  return start_hash_pool(opt_, hp_);
}

Status Sink::on_event(TransportEvent& e) {
  if (e.kind == TransportEvent::Kind::read_done) return on_read_done(e);
  RCP_ASSIGN(wire::Message m, message_of(t_, e));
  return on_message(m);
}

/// One handler per wire message, and no generic one: a message added to
/// wire::Message does not compile until it is handled (or refused) here.
Status Sink::on_message(wire::Message& m) {
  return std::visit(overloaded{
                        [&](wire::FileBegin& x) { return handle(x); },
                        [&](wire::ChunkReady& x) { return handle(x); },
                        [&](wire::FileEnd& x) { return handle(x); },
                        [&](wire::Finish&) { return on_finish(); },
                        [&](wire::FileSkipped& x) { return handle(x); },
                        [&](wire::WalkTotals& x) { return handle(x); },
                        [&](wire::Hole& x) { return handle(x); },
                        [&](wire::XattrPiece& x) { return handle(x); },
                        [&](wire::SmallFile& x) { return handle(x); },
                        [&](wire::ErrorMsg& e) -> Status { return make_error(e.err, t_.peer() + ": " + e.message); },
                        // What only a sink sends, or only comes before the session:
                        [&](wire::Open& x) { return unexpected(x); },
                        [&](wire::OpenOk& x) { return unexpected(x); },
                        [&](wire::ChunkDone& x) { return unexpected(x); },
                        [&](wire::FileResult& x) { return unexpected(x); },
                        [&](wire::Done& x) { return unexpected(x); },
                        [&](wire::ModuleList& x) { return unexpected(x); },
                        [&](wire::StopFile& x) { return unexpected(x); },
                        [&](wire::EntryDeleted& x) { return unexpected(x); },
                    },
                    m);
}

Status Sink::handle(wire::FileBegin& fb) {
  if (finish_seen_) return proto_error(t_, "FILE_BEGIN after FINISH");
  if (files_.count(fb.file_id) || fb.file_id < next_file_id_) return proto_error(t_, "file id reused");
  next_file_id_ = fb.file_id + 1;
  if (Status st = totals_.begin(fb.size); !st.ok()) return proto_error(t_, st.error().context);
  if (unended_ >= kMaxFilesOpen)
    return proto_error(t_, fmt::format("more than {} files begun and not ended", kMaxFilesOpen));
  File f(fb.file_id, fb.size, fb.mode, opt_.checksum);
  f.type = (fb.mode & S_IFMT) ? (fb.mode & S_IFMT) : S_IFREG;  // (the decoder admits known types only)
  f.is_dir = f.type == S_IFDIR;
  f.mtime_ns = fb.mtime_ns;
  f.meta = EntryMeta{fb.mode, fb.mtime_ns, fb.uid, fb.gid, fb.user, fb.group, fb.link_target, fb.rdev};
  f.link_to = fb.link_to;
  f.name = fb.name;
  const bool follower = fb.link_to != 0 && fb.link_to != fb.file_id;
  PlacedEntry e = tree_.place(fb.name, f.type, f.mode, t_.peer(), IncomingFile{fb.size, fb.mtime_ns, &opt_.rules},
                              follower);
  // (A directory entry carries no data: the decoder admits a size on
  // regular files only, wire/messages.cc.)
  f.mode = e.mode;
  f.shown = std::move(e.shown);
  f.rel = std::move(e.rel);
  f.parent = std::move(e.parent);
  f.tmp = std::move(e.tmp);
  f.dir_fd = e.dir_fd;
  f.leaf = std::move(e.leaf);
  f.failed = !e.error.empty();
  f.old = std::move(e.old);
  f.dry_write = e.dry_write;
  // Every name sent is kept from deletion; only a directory that was
  // accepted (asked for, placed) is pruned.
  if (pruner_) pruner_->saw(fb.name, f.is_dir && !f.failed);
  f.error = std::move(e.error);
  if (opt_.direct && !f.failed && !f.is_dir && f.size > 0 && f.tmp.fd() >= 0)
    f.direct = direct_or_buffered(f.tmp.fd(), O_WRONLY, f.shown, direct_noted_);
  f.skip = e.skip && !f.failed;
  // A dry run changes nothing: every entry is "kept", its chunks returned
  // unread (check_file tells the source which files would be written).
  const bool dry = opt_.rules.dry_run;
  if (dry) f.skip = !f.failed;
  if (can_reuse_chunks(opt_) && !dry) {
    f.basis = std::move(e.basis);
    f.basis_size = e.basis_size;
    struct stat ps;
    if (f.tmp.is_partial() && ::fstat(f.tmp.fd(), &ps) == 0) f.partial_size = static_cast<uint64_t>(ps.st_size);
    // --partial onto a device (written in place, no temp file): what an
    // interrupted run left there is the partial copy. Every chunk is read
    // back and kept only when its digest matches (a device holds at least
    // the file: place_on_device refuses a smaller one), so a rerun moves
    // only what is missing or different.
    if (f.tmp.is_device() && opt_.rules.partial) f.partial_size = f.size;
  }
  // Only the kinds this copy asked for: a source cannot plant a symlink or
  // a device in a copy made without -l or -D.
  const Preserve& p = opt_.preserve;
  const bool device = f.type == S_IFCHR || f.type == S_IFBLK, special = f.type == S_IFIFO || f.type == S_IFSOCK;
  if (!f.failed && ((f.type == S_IFLNK && !p.links) || (device && !(p.devices && p.trusted_sender)) || (special && !p.specials)))
    fail_file(f, fmt::format("refused {} '{}' from {}: not asked for ({})", f.type == S_IFLNK ? "symlink" : "special file",
                             fb.name, t_.peer(), f.type == S_IFLNK ? "-l" : "-D"));
  f.skip_device = !f.failed && device && !running_as_root();
  if (!f.failed && fb.link_to != 0 && !p.hard_links)
    fail_file(f, fmt::format("refused hard link '{}' from {}: not asked for (-H)", fb.name, t_.peer()));
  if (fb.link_to == fb.file_id && p.hard_links) {
    // Bounded by the files with several links the source sends; their names only.
    if (leaders_.size() >= opt_.max_link_groups)
      return proto_error(t_, fmt::format("more than {} hard-link groups", opt_.max_link_groups));
    leaders_[fb.file_id] = Leader{fb.name, Leader::pending, {}};
  }
  files_.emplace(fb.file_id, std::move(f));
  ++unended_;
  if (e.skip || (dry && !f.is_dir && fb.size > 0)) return ch_.send(wire::StopFile{fb.file_id});
  return {};
}

Status Sink::handle(wire::WalkTotals& x) {
  if (finish_seen_) return proto_error(t_, "WALK_TOTALS after FINISH");
  if (Status st = totals_.announce(x); !st.ok()) return proto_error(t_, st.error().context);
  if (opt_.on_totals) opt_.on_totals(x.files, x.bytes, x.final != 0);
  return {};
}

Status Sink::handle(wire::FileSkipped& x) {
  if (finish_seen_) return proto_error(t_, "FILE_SKIPPED after FINISH");
  if (x.err == 0) {  // a notice: skipped by design (a symlink or special file in a tree)
    log_warning("{}", x.message);
    return {};
  }
  if (Status st = totals_.begin(0); !st.ok()) return proto_error(t_, st.error().context);
  ++stats_.files_failed;
  if (x.vanished) ++stats_.files_vanished;
  stats_.note_error(fmt::format("{} (not sent by {})", x.message, t_.peer()));
  if (pruner_) pruner_->source_error();
  return {};
}

Status Sink::handle(wire::ChunkReady& c) {
  auto it = files_.find(c.file_id);
  if (it == files_.end()) return proto_error(t_, fmt::format("chunk for unknown file {}", c.file_id));
  File& f = it->second;
  if (f.end_seen) return proto_error(t_, "chunk after FILE_END");
  if (c.length > opt_.chunk_size || blocks_for(c.length, opt_.block_size) > free_.capacity())
    return proto_error(t_, fmt::format("chunk of {} bytes exceeds the agreed {}", c.length, opt_.chunk_size));
  if (!f.ledger.claim(c.offset, c.length))
    return proto_error(t_, fmt::format("chunk [{}, +{}) overlaps another or lies outside '{}' ({} bytes)", c.offset,
                                       c.length, f.shown, f.size));
  if (c.digest.len != chunk_digest_len(opt_)) return proto_error(t_, "chunk digest has the wrong length");
  // Each chunk names a slot of the source's pool not already lent: what a
  // sink queues is bounded by kMaxSlots, whatever a source announces.
  if (c.slot >= kMaxSlots || lent_[c.slot])
    return proto_error(t_, fmt::format("chunk in slot {}, which is {}", c.slot,
                                       c.slot >= kMaxSlots ? "out of range" : "already lent"));
  lent_[c.slot] = true;
  ++f.chunks_active;
  queue_.push_back(std::move(c));
  return {};
}

/// A range the source found no data in: zeros, made here (fs/sparse.h
/// HoleFill says how), never pulled.
Status Sink::handle(wire::Hole& h) {
  auto it = files_.find(h.file_id);
  if (it == files_.end()) return proto_error(t_, fmt::format("HOLE for unknown file {}", h.file_id));
  File& f = it->second;
  if (f.end_seen) return proto_error(t_, "HOLE after FILE_END");
  if (!f.ledger.claim(h.offset, h.length))
    return proto_error(t_, fmt::format("hole [{}, +{}) overlaps another range or lies outside '{}' ({} bytes)",
                                       h.offset, h.length, f.shown, f.size));
  if (!f.failed && !f.skip) {
    const bool device = f.tmp.is_device();
    const HoleFill how = device ? (opt_.preserve.discard ? HoleFill::discard : HoleFill::zero)
                                : (opt_.preserve.sparse ? HoleFill::leave : HoleFill::allocate);
    Status st;
    // A hole at the end: the file gets its size here (nothing is written there).
    if (!device && h.offset + h.length == f.size) st = f.tmp.set_size(f.size);
    if (st.ok()) st = fill_hole(f.tmp.fd(), h.offset, h.length, how, f.partial_size > h.offset);
    if (!st.ok()) fail_file(f, fmt::format("{} of '{}': {}", st.error().context, f.shown, st.error().message()));
    f.touched = f.touched || device;
    if (!f.failed) f.written += h.length;
    // A hole where the old file has one too is content found equal: an
    // unchanged sparse file is then kept (-c), not rebuilt from itself.
    if (!f.failed && f.basis.valid() && h.offset + h.length <= f.basis_size) {
      Result<DataExtent> d = find_data(f.basis.get(), h.offset, f.basis_size);
      if (d.ok() && d.value().begin >= h.offset + h.length) f.basis_matched += h.length;
    }
  }
  f.ledger.add_digest(h.offset, h.length, hole_digest(opt_, f.id, h.offset, h.length));
  progress_bytes_ += h.length;
  f.counted += h.length;
  if (opt_.on_progress) opt_.on_progress(progress_bytes_, stats_.files_ok + stats_.files_failed, f.shown);
  return {};
}

Status Sink::handle(wire::FileEnd& fe) {
  auto it = files_.find(fe.file_id);
  if (it == files_.end() || it->second.end_seen) return proto_error(t_, "FILE_END for an unknown file");
  File& f = it->second;
  if (fe.size != f.size) return proto_error(t_, "FILE_END size differs from FILE_BEGIN");
  if (f.xa && f.xa->in_progress())
    return proto_error(t_, fmt::format("FILE_END of '{}' with its xattr '{}' incomplete", f.shown, f.xa->pending_name()));
  f.end_seen = true;
  --unended_;
  f.expected = fe.digest;
  return check_file(f.id);
}

Result<TransferStats> run_sink(Channel& ch, Destination& dest, const SessionOptions& opt) {
  return run_role<Sink>(ch, dest, opt);
}

}  // namespace rcp
