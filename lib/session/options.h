/// The engine's inputs and outputs: SessionOptions, what one session runs
/// with (computed from the user's settings and the negotiated limits by
/// session/config.h — nowhere else), and TransferStats, what it reports.
#pragma once

#include <array>
#include <atomic>
#include <optional>
#include <cstdint>
#include <functional>
#include <string_view>
#include <string>
#include <vector>

#include "fs/update_rule.h"
#include "fs/metadata.h"
#include "hash/digest.h"

namespace rcp {

struct SessionOptions {
  Checksum checksum = Checksum::xxh128;
  uint32_t chunk_size = 1u << 20;  ///< source: bytes per chunk (and per slot)
  uint32_t slots = 16;             ///< source: slots in its pool (chunks announced at once)
  uint32_t block_size = 64u << 10; ///< sink: bytes per block; a chunk scatters over several
  uint32_t blocks = 256;           ///< sink: blocks in its pool
  bool fsync = false;
  /// O_DIRECT for file data where the file system allows it (io/direct.h);
  /// else buffered, said once per session at -v.
  bool direct = false;
  /// --bwlimit: bytes per second this side pulls (sink) or announces
  /// (source), paced by util/token_bucket.h; 0: no limit.
  uint64_t bwlimit = 0;
  /// Sink: what to do with files the destination already has (quick check
  /// by default; -c, --ignore-existing, --existing, -u, --whole-file).
  UpdateRules rules;
  /// The metadata kept (fs/metadata.h): the source decides what it sends
  /// (symlinks, specials, owner names), the sink what it applies.
  Preserve preserve;
  /// Digest workers off the loop; 0 hashes on the loop itself. 1 by default:
  /// on the 2-core test hosts 2 workers per side measured slower than 1
  /// (both ends share the cores); raise it on hosts with cores to spare.
  unsigned hash_threads = 1;
  int idle_timeout_ms = 30000;
  /// Source: files begun and not yet ended, at most (and never above
  /// kMaxFilesOpen); each holds an open fd. rcpd sets it from
  /// max_files_per_session for the files it sends.
  uint32_t max_files_open = 256;
  /// Sink (-H): hard-link groups whose first file's name it keeps until the
  /// session ends, at most — a lying source's leaders would otherwise grow
  /// without bound. 4 Mi names; the tests lower it.
  size_t max_link_groups = size_t{1} << 22;
  const std::atomic<bool>* cancel = nullptr;  ///< set by a signal handler to abort
  /// Progress hook, called on the loop's thread each time a chunk is done
  /// (source: its slot came back; sink: it is verified and written) and when
  /// a file ends: file bytes so far, entries finished (files and directories,
  /// ok or failed) and the file the last chunk belonged to. rcp draws its
  /// progress line from it (the reporter throttles itself); unset = no calls.
  std::function<void(uint64_t bytes_done, uint32_t files_done, std::string_view current)> on_progress;
  /// Totals hook, on the loop's thread: entries and bytes the source's walk
  /// has produced so far; final: the walk is over, these are the session's
  /// totals. The source calls it as it announces WALK_TOTALS
  /// (session/walk_totals.h), the sink as it receives one. Unset = no calls.
  std::function<void(uint64_t files, uint64_t bytes, bool final)> on_totals;
  /// -i/-n hook, on the loop's thread: an entry the sink changed (dry run:
  /// would change), its name as sent, type (S_IFMT) and fs/itemize.h bits
  /// (never 0); or (deleted) one --delete removed, type S_IFDIR or 0. The
  /// sink calls it for what it does, the source for what FILE_RESULT and
  /// ENTRY_DELETED report. Unset = no calls.
  std::function<void(std::string_view name, unsigned type, uint16_t changes, bool deleted)> on_item;
  /// Source: the OPEN asked for --delete, so the sink may send ENTRY_DELETED
  /// (at most DONE's files_deleted of them); without it one is a protocol error.
  bool deleting = false;
  /// Authenticated session: every chunk digest is HMAC-SHA256 under this key
  /// over (file id, offset, length, bytes) (auth/chunk_mac.h), whatever
  /// `checksum` says, so a byte changed on the wire cannot be hidden by
  /// recomputing an unkeyed digest. The file digest folds these MACs.
  std::optional<std::array<uint8_t, 32>> chunk_key;
};

/// Per-session bounds, whatever the tree's size or the peer's claims:
///  - files begun and not yet ended: the source never has more (each holds
///    an fd at the source and a temp file at the sink), and a sink refuses a
///    source that begins more. An honest source has at most slots + 1 (a file
///    ends once its last chunk is announced); 256 leaves the default window
///    of 16 far from the cap and keeps a session's fds bounded.
constexpr uint32_t kMaxFilesOpen = 256;
///  - files begun and not yet answered (FILE_RESULT) at the source: bounds its
///    per-file state and its control backlog when the sink lags on many small files.
constexpr uint32_t kMaxFilesInFlight = 1024;
///  - chunks a sink holds (queued or being pulled): a CHUNK_READY must name a
///    slot below this that is not already lent (window is at most 4096).
constexpr uint32_t kMaxSlots = 4096;
///  - error lines kept per session; the rest are counted.
constexpr size_t kMaxErrorLines = 1000;

struct TransferStats {
  uint64_t bytes = 0;        ///< size of the files that ended ok (skipped ones included)
  uint64_t bytes_pulled = 0;   ///< file data that crossed the network (re-fetches included)
  uint64_t bytes_matched = 0;  ///< file data reused from the destination's existing files
  uint32_t files_skipped = 0;  ///< among files_ok: the destination had them, nothing written
  uint32_t files_ok = 0;
  uint32_t files_failed = 0;
  uint32_t files_vanished = 0;  ///< among files_failed: listed, then gone (exit 24 if all are)
  uint32_t dirs_ok = 0;  ///< directory entries among files_ok (for "N file(s)" without them)
  /// --delete: entries removed from the destination (by this sink, or — at a
  /// push's source — as the daemon's DONE reports).
  uint32_t files_deleted = 0;
  std::vector<std::string> errors;  ///< one line per failed file (at most kMaxErrorLines)
  uint64_t errors_dropped = 0;      ///< failures beyond kMaxErrorLines, counted only

  void note_error(std::string line) {
    if (errors.size() < kMaxErrorLines)
      errors.push_back(std::move(line));
    else
      ++errors_dropped;
  }
};

}  // namespace rcp
