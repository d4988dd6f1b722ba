// rcp's own pieces, shared by its files: the options as parsed (main.cc),
// the one stderr voice (say, fail) and the end-of-run report. lib/ has the
// logic; these files put it together for the command line.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include "cli/exit_codes.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/shard.h"
#include "fs/metadata.h"
#include "session/config.h"
#include "session/session.h"
#include "transport/connect.h"
#include "util/result.h"

namespace rcp::client {

namespace ec = cli::exit_code;

/// a + b, or UINT64_MAX where it would wrap (a peer's counts are any numbers).
inline uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

/// Set by SIGINT/SIGTERM (main.cc): every wait of the copy looks at it.
extern std::atomic<bool> g_cancel;

struct Options {
  std::vector<std::string> args;
  int verbose = 0;
  bool quiet = false;
  bool progress = false, no_progress = false;
  bool ipv4 = false, ipv6 = false;
  std::string transport = "auto";
  std::string checksum = "xxh128";
  uint16_t rdma_port = kDefaultRdmaPort;
  uint16_t tcp_port = kDefaultTcpPort;
  uint32_t chunk_kib = 1024;
  uint32_t window = 16;
  bool fsync = false;
  bool direct = false;  // --direct: O_DIRECT for the local files' data
  uint32_t streams = 0;  // 0: the transport's default
  std::string rails;     // --rails auto|DEV[,DEV...]; "" = one rail
  std::string bind;      // --bind ADDR: the local address to connect from
  std::string device;    // --device DEV: the RDMA device carrying the control connection (rail 0)
  bool no_zerocopy = false;
  bool encrypt = false;
  bool recursive = false;
  bool copy_devices = false;   // --copy-devices: a block device source is sent as a file
  bool write_devices = false;  // --write-devices: a block device destination is written in place
  bool force = false;          // --force: a mounted (or otherwise held) device destination too
  Preserve preserve;  ///< -a -p -t -o -g -l -L -D --numeric-ids (cli/preserve_options)
  unsigned hash_threads = kHashThreadsAuto;
  std::string password_file;
  UpdateRules rules;  // -c, --ignore-existing, --existing, -u, --whole-file
  bool json = false, stats = false;
  // --exclude/--include/--exclude-from/--include-from, in command-line order (filters())
  std::vector<std::string> excludes, includes, exclude_from, include_from;
  std::string files_from;
  bool from0 = false;
  std::string shard_text;                ///< --shard I/N as given
  std::optional<cli::ShardSpec> shard;  ///< parsed (cli/shard.h)
  bool del = false, del_after = false;
  std::string bwlimit;   // --bwlimit RATE (util/token_bucket.h parse_rate)
  uint64_t bwlimit_bytes = 0;
  bool itemize = false;  // -i: rsync's YXcstpoguax line per changed entry (fs/itemize.h)
  uint32_t io_timeout = 30;   // --timeout SECONDS (0: none): no data moving that long ends the copy (30)
  uint32_t con_timeout = 10;  // --contimeout SECONDS: connect + the daemon's greeting (35)
};

/// What --json / --stats print at the end; fail() adds its error line.
extern cli::Report g_report;

/// The one progress line; every message goes through say() so it erases the
/// line first.
extern cli::ProgressReporter* g_progress;

template <typename... Args>
void say(fmt::format_string<Args...> f, Args&&... args) {
  if (g_progress) g_progress->clear();
  std::string line = fmt::format(f, std::forward<Args>(args)...);
  std::fprintf(stderr, "rcp: %s\n", line.c_str());
}

/// An Error in the user's words: the context already names the object; the
/// errno's text is the reason (lib/ leaves code 0 when the context says it all).
/// The errno's text is left out when the context already says it ("'d' is a
/// directory (use -r)" needs no ": Is a directory").
std::string words(const Error& e);

/// The code for a daemon's refusal of an OPEN: one without an errno (a
/// wildcard in the wrong place, a path it cannot use) is about the files
/// the user named, like ENOENT, so exit 3 (not 12, a broken stream).
int open_code(const Error& e);

/// Fails with the code the table gives this error in this phase.
int fail(const Error& e, cli::Phase phase, const std::string& what = "", int forced = -1);

/// "rcp -V": version, transports compiled in, and the RDMA devices found.
void print_version();

inline bool has_glob(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

}  // namespace rcp::client
