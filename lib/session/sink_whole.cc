// The sink: a small file sent whole in one SMALL_FILE (session/sink_role.h,
// wire/messages.h). It is placed, verified, written, put in place and
// answered while its message is handled: no File, pending read, write in
// flight or FILE_END, which were ≈ 20 % of the sink's CPU a file of 4 KiB
// (bench/README.md, "Small files sent whole").
#include <chrono>
#include <thread>

#include "session/sink_role.h"

namespace rcp {
namespace {

/// Writes the bytes into the temp file (a short write writes the rest),
/// then its mtime, owner and bits, and links it into place.
Status put_whole(TempFile& tmp, std::span<const uint8_t> data, const EntryMeta& meta, unsigned mode, const Preserve& p,
                 const std::string& shown) {
  for (size_t done = 0; done < data.size();) {
    const ssize_t n = ::pwrite(tmp.fd(), data.data() + done, data.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error(n < 0 ? errno : EIO, "write '" + shown + "'");  // (0: no progress)
    done += static_cast<size_t>(n);
  }
  if (Status t = set_mtime_ns(tmp.fd(), meta.mtime_ns); !t.ok())
    return make_error(t.error().code, fmt::format("{} of '{}': {}", t.error().context, shown, t.error().message()));
  RCP_TRY(apply_fd_meta(tmp.fd(), meta, p, -1, shown));
  return tmp.commit(mode, false, p.perms);
}

}  // namespace

Status Sink::handle(wire::SmallFile& m) {
  const wire::FileBegin& fb = m.begin;
  if (!small_files_whole(opt_)) return proto_error(t_, "SMALL_FILE in a session whose files need their chunks");
  if (finish_seen_) return proto_error(t_, "SMALL_FILE after FINISH");
  if (files_.count(fb.file_id) || fb.file_id < next_file_id_) return proto_error(t_, "file id reused");
  next_file_id_ = fb.file_id + 1;
  if (Status st = totals_.begin(fb.size); !st.ok()) return proto_error(t_, st.error().context);
  if (m.digest.len != chunk_digest_len(opt_)) return proto_error(t_, "chunk digest has the wrong length");
  PlacedEntry e = tree_.place(fb.name, S_IFREG, fb.mode, t_.peer(), IncomingFile{fb.size, fb.mtime_ns, &opt_.rules}, false);
  if (pruner_) pruner_->saw(fb.name, false);
  const EntryMeta meta{fb.mode, fb.mtime_ns, fb.uid, fb.gid, fb.user, fb.group, {}, 0};
  wire::FileResult r{fb.file_id, 0, 0, 0, 0, "", 0};
  std::string error = std::move(e.error);
  bool wrote = false;
  if (error.empty() && !e.skip) {
    // --bwlimit on this side: the bytes count as a pulled chunk's. They are
    // here already; waiting before the next message is read holds the
    // source back (its sends wait on this side's receive window or credits).
    while (!pacer_.take(fb.size)) {
      if (opt_.cancel && opt_.cancel->load(std::memory_order_relaxed)) return make_error(EINTR, "interrupted");
      std::this_thread::sleep_for(std::chrono::milliseconds(pacer_.wait_ms()));
    }
    r.pulled = fb.size;
    const std::span<const uint8_t> piece{reinterpret_cast<const uint8_t*>(m.data.data()), m.data.size()};
    const Preserve& p = opt_.preserve;
    const wire::Digest got = chunk_digest(opt_, fb.file_id, 0, {&piece, 1});
    if (!chunk_digest_equal(opt_, got, m.digest)) {
      // (Not fetched again: what was sent is what a second try would get.)
      error = fmt::format("'{}' failed {} verification (expected {}, got {})", e.shown,
                          opt_.chunk_key ? "keyed (HMAC-SHA256)" : checksum_name(opt_.checksum), to_hex(m.digest),
                          to_hex(got));
    } else if (Status st = put_whole(e.tmp, piece, meta, e.mode, p, e.shown); !st.ok()) {
      wrote = true;
      error = st.error().message();
    }
  }
  stats_.bytes_pulled += r.pulled;
  if (!error.empty()) {
    if (e.tmp.is_device() && wrote) error += fmt::format("; block device '{}' is left partially written", e.shown);
    e.tmp.discard();
    r.err = EIO;
    r.message = error;
    ++stats_.files_failed;
    stats_.note_error(fmt::format("{}: {}", e.shown, error));
  } else {
    ++stats_.files_ok;
    r.skipped = e.skip ? 1 : 0;
    if (e.skip) ++stats_.files_skipped;
    stats_.bytes += fb.size;
    r.changes = changes_of(e.old, S_IFREG, fb.size, meta, !e.skip, false);
    if (r.changes && opt_.on_item) opt_.on_item(fb.name, S_IFREG, r.changes, false);
  }
  progress_bytes_ += fb.size;
  if (opt_.on_progress) opt_.on_progress(progress_bytes_, stats_.files_ok + stats_.files_failed, e.shown);
  return ch_.send(r);
}

}  // namespace rcp
