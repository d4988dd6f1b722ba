/// What a copy reports at its end: the totals behind `--stats` (human
/// lines) and `--json` (one JSON object on stdout for a job to read). Every
/// key is documented in rcp(1), section "JSON REPORT"; keys are only ever
/// added, never renamed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rcp::cli {

/// One rail of an RDMA copy (one without --rails), summed over its sessions:
/// the path rdma_cm chose (rcp --bind / --device force it) and its load.
struct RailReport {
  std::string device;  ///< local device ("rxe2")
  std::string peer;    ///< the daemon's address on it
  uint32_t port = 0;   ///< the device's port (JSON null if 0: not known)
  int gid_index = -1;  ///< the source GID's index (JSON null if -1: no GRH)
  std::string gid;     ///< that GID ("::ffff:10.77.0.1"; JSON null if "")
  std::string gid_type;  ///< "RoCE v2", "RoCE v1", "IB" (JSON null if "")
  std::string local;   ///< this side's address on it (JSON null if "")
  uint64_t bytes = 0;  ///< bytes this side read over it (a pull; 0 in a push, where rcpd reads)
  uint64_t chunks = 0;
  std::string failed;  ///< why it was dropped mid-copy, "" if it was not (JSON null)
};

struct Report {
  uint64_t files_total = 0;        ///< entries the copy considered: files, directories, failures
  uint64_t files_transferred = 0;  ///< regular files written at the destination
  uint64_t files_skipped = 0;      ///< regular files left as they were (quick check, -c, --existing, ...)
  uint64_t files_deleted = 0;      ///< entries removed at the destination (--delete)
  uint64_t files_failed = 0;       ///< entries not copied because of an error
  uint64_t bytes_total = 0;        ///< size of the regular files considered
  uint64_t bytes_transferred = 0;  ///< file data that crossed the network (re-fetches included)
  uint64_t bytes_matched = 0;      ///< file data found equal at the destination (by chunk digest)
  double elapsed_s = 0;
  std::string transport;           ///< "tcp", "rdma" or "" (no connection was made)
  std::string device;              ///< the RDMA device ("rxe0"), "" otherwise
  std::vector<std::string> errors;
  uint64_t errors_dropped = 0;     ///< failures beyond those listed
  int exit_code = 0;
  std::string shard;               ///< "I/N" with --shard, "" otherwise (JSON null)
  std::vector<RailReport> rails;   ///< every rail of an RDMA copy (one without --rails); [] over TCP
};

/// Adds one session's rails to the report's (matched by device and peer).
void add_rails(Report& r, const std::vector<RailReport>& session);

/// Appends s as a JSON string (quotes included). Valid UTF-8 passes through;
/// '"', '\\' and control characters are escaped; each byte that is not part
/// of valid UTF-8 (a file name is any bytes) becomes \uDC80 + byte, as
/// Python's "surrogateescape", so no name is lost or turns into another.
void append_json_string(std::string& out, std::string_view s);

/// The report as one JSON object on one line, with a trailing newline.
std::string to_json(const Report& r);

/// The report as `--stats` prints it: one "Label: value" line per total.
std::string to_stats_text(const Report& r);

/// Splits a transport's name ("rdma rxe0", "tcp") into transport and device.
void set_transport(Report& r, std::string_view carried_by);

}  // namespace rcp::cli
