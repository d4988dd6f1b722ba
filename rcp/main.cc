// rcp: the scp-like client. This file is its command line: the options
// (CLI11) into client::Options, then client::run (run.h) reads the client
// config, connects and copies; push_sources.h walks what a push sends, and
// client.h's say() and fail() turn every failure into one
// "rcp: WHAT: REASON" line and one exit code from lib/cli/exit_codes.h.
#include <CLI/CLI.hpp>
#include <signal.h>

#include <chrono>
#include <cstdio>

#include <fmt/core.h>

#include "cli/number_option.h"
#include "cli/report.h"
#include "cli/shard.h"
#include "client.h"
#include "preserve_options.h"
#include "run.h"
#include "transport/connect.h"
#include "util/log.h"
#include "util/nofile.h"
#include "util/token_bucket.h"

namespace {

using namespace rcp;
using namespace rcp::client;

void on_signal(int) { g_cancel = true; }

/// "[4 - 65536]" in --help reads like a type signature; the range goes into
/// the option's description instead, and a value outside it says so in words.
CLI::Validator range(long lo, long hi) {
  return CLI::Validator([lo, hi](std::string& s) { return cli::integer_problem(s, lo, hi); }, "");
}

}  // namespace

int main(int argc, char** argv) {
  set_log_prefix("rcp");
  raise_nofile_limit();  // a descriptor per file being received (util/nofile.h)
  Options o;
  CLI::App app{"rcp - copy files over RDMA (or TCP) to and from an rcpd daemon, verified end to end.\n\n"
               "  push:  rcp [OPTIONS] FILE... HOST:MODULE/PATH\n"
               "  pull:  rcp [OPTIONS] HOST:MODULE/PATH... DEST\n"
               "  list:  rcp [OPTIONS] HOST:\n\n"
               "A remote side is HOST:MODULE/PATH, [V6ADDR]:MODULE/PATH, USER@HOST:MODULE/PATH,\n"
               "HOST::MODULE/PATH or rcp://[USER@]HOST[:PORT]/MODULE/PATH. Exit status: see rcp(1).\n",
               "rcp"};
  app.get_formatter()->column_width(34);
  app.get_formatter()->label("OPTIONS", "OPTION");
  app.add_option("paths", o.args, "SRC... DEST, or HOST: to list modules")->type_name("");
  app.add_flag_callback(
      "-V,--version",
      [] {
        print_version();
        throw CLI::Success();
      },
      "print the version, the transports built in and the RDMA devices found");
  app.add_flag("-v,--verbose", o.verbose, "say which transport and device carried the copy, and the throughput; -vv: debug");
  app.add_flag("-q,--quiet", o.quiet, "print nothing but errors (no progress, no warnings)");
  app.add_flag("--progress", o.progress, "draw the progress line even when stderr is not a terminal");
  app.add_flag("--no-progress", o.no_progress, "never draw the progress line");
  app.add_flag("-4", o.ipv4, "connect over IPv4 only");
  app.add_flag("-6", o.ipv6, "connect over IPv6 only");
  app.add_option("--transport", o.transport, "auto (RDMA if possible, else TCP), rdma or tcp; default auto")
      ->type_name("KIND");
  app.add_option("--digest", o.checksum, "per-chunk digest: xxh128 (default), sha256 or none")->type_name("ALGO");
  app.add_flag("-c,--checksum", o.rules.checksum,
               "decide what to update by content (chunk digests), not by size and modification time");
  app.add_flag("--ignore-existing", o.rules.ignore_existing, "never replace a file that exists at the destination");
  app.add_flag("--existing", o.rules.existing, "only update files that exist at the destination; create none");
  app.add_flag("-u,--update", o.rules.update, "keep destination files newer than the source's");
  app.add_flag("-W,--whole-file", o.rules.whole_file,
               "send changed files whole: do not reuse the destination's matching chunks");
  app.add_flag("--partial", o.rules.partial,
               "keep what an interrupted copy wrote (.NAME.rcp-partial) and reuse its verified chunks next time");
  app.add_flag("--stats", o.stats, "print totals at the end (files, bytes transferred and reused, time)");
  app.add_flag("--json", o.json, "print one JSON object with the totals and errors on stdout at the end (see rcp(1))");
  app.add_option("-P,--port", o.rdma_port, fmt::format("the daemon's rdma_cm port (default {})", kDefaultRdmaPort))
      ->type_name("PORT")
      ->check(range(1, 65535));
  app.add_option("--tcp-port", o.tcp_port, fmt::format("the daemon's TCP port (default {})", kDefaultTcpPort))
      ->type_name("PORT")
      ->check(range(1, 65535));
  app.add_option("--chunk-size,--buffer-size", o.chunk_kib, "chunk size in KiB, 4 to 65536 (default 1024)")
      ->type_name("KIB")
      ->check(range(4, 65536));
  app.add_option("--window", o.window, "chunks in flight, 1 to 4096 (default 16); pool = window x chunk size")
      ->type_name("N")
      ->check(range(1, 4096));
  app.add_option("--rails", o.rails,
                 "RDMA: stripe the copy's READs over more devices: auto (every device that reaches one of the "
                 "daemon's addresses) or DEV[,DEV...] (only these); a rail that fails is dropped mid-copy")
      ->type_name("auto|DEV,...");
  app.add_option("--bind", o.bind,
                 "connect from this local address (RDMA: the source address rdma_cm resolves from, which picks "
                 "the device and GID; TCP: bind before connect)")
      ->type_name("ADDR");
  app.add_option("--device", o.device,
                 "RDMA: the device carrying the connection (rail 0); refused, naming it, if it has no usable "
                 "port and GID toward the daemon")
      ->type_name("DEV");
  app.add_option("--streams", o.streams,
                 fmt::format("connections (TCP) or queue pairs carrying data (RDMA; one more carries control) "
                             "per copy, 1 to 16 (default {}; TCP to a daemon on this host: {})",
                             kDefaultTcpStreams, kLocalTcpStreams))
      ->type_name("N")
      ->check(range(1, 16));
  app.add_flag("--no-zerocopy", o.no_zerocopy, "TCP transport: plain sends instead of zero-copy sends");
  app.add_flag("--encrypt", o.encrypt,
               "encrypt the session with TLS 1.3 (TCP only; with --transport auto it selects TCP)");
  app.add_option("--hash-threads", o.hash_threads, "threads computing chunk digests, 0 to 64 (0: on the I/O loop; default 1, "
                 "but 0 when the peer is on this host and it has fewer than 4 CPUs)")
      ->type_name("N")
      ->check(range(0, 64));
  app.add_flag("-r,--recursive", o.recursive, "copy directories and everything below them");
  app.add_flag("--copy-devices", o.copy_devices, "send a block device named as a source as a file of its size");
  app.add_flag("--write-devices", o.write_devices,
               "write a block device named as the destination in place (never replaced; refused when mounted, "
               "smaller than the source, or with --digest none)");
  app.add_flag_callback(
      "--devices-as-files", [&o] { o.copy_devices = o.write_devices = true; },
      "both --copy-devices and --write-devices");
  app.add_flag("--force", o.force, "with --write-devices: write a device even when it is mounted or in use");
  app.add_flag("--direct", o.direct,
               "O_DIRECT reads and writes of the local files' data (buffered where the file system refuses it; "
               "-v says so)");
  cli::add_preserve_options(app, o.preserve);
  app.add_flag("--fsync", o.fsync, "fsync each file before renaming it into place");
  app.add_option("--exclude", o.excludes, "leave out entries matching PATTERN (rsync's rules; repeatable)")
      ->type_name("PATTERN")
      ->allow_extra_args(false);
  app.add_option("--include", o.includes, "keep entries matching PATTERN: the first matching rule wins")
      ->type_name("PATTERN")
      ->allow_extra_args(false);
  app.add_option("--exclude-from", o.exclude_from, "read exclude patterns from FILE, one per line ('-': stdin)")
      ->type_name("FILE")
      ->allow_extra_args(false);
  app.add_option("--include-from", o.include_from, "read include patterns from FILE, one per line ('-': stdin)")
      ->type_name("FILE")
      ->allow_extra_args(false);
  app.add_option("--files-from", o.files_from,
                 "send the paths listed in FILE, relative to the one source directory ('-': stdin)")
      ->type_name("FILE");
  app.add_flag("-0,--from0", o.from0, "the lists in --files-from and --exclude-from are NUL-separated");
  app.add_option("--shard", o.shard_text,
                 "copy only part I of N (counted from 0) of the --files-from list: N runs with I = 0..N-1 "
                 "copy each listed path once (a push splits by size, a pull by name; see rcp(1) SHARDED JOBS)")
      ->type_name("I/N");
  app.add_option("--bwlimit", o.bwlimit,
                 "limit file data to RATE per second: KiB, or with K, M, G (1024s), KB, MB, GB (1000s); 0: none")
      ->type_name("RATE");
  app.add_option("--timeout", o.io_timeout,
                 "give up when no data moves for SECONDS (exit 30); 0: wait forever")
      ->type_name("SECONDS")
      ->check(range(0, 86400));
  app.add_option("--contimeout", o.con_timeout,
                 "give up connecting, and waiting for the daemon's greeting, after SECONDS (exit 35)")
      ->type_name("SECONDS")
      ->check(range(1, 3600));
  app.add_flag("-n,--dry-run", o.rules.dry_run,
               "change nothing anywhere and move no data: list what a real run would change (with -i, itemized)");
  app.add_flag("-i,--itemize-changes", o.itemize,
               "print one line per changed entry: rsync's YXcstpoguax format (see rcp(1))");
  app.add_flag("--delete", o.del, "with -r: remove entries the source does not have from the directories copied");
  app.add_flag("--delete-after", o.del_after, "as --delete, but only once every file has arrived");
  app.add_option("--password-file", o.password_file,
                 "authenticate as USER (from USER@HOST:...) with the secret on the first line of FILE "
                 "(else $RCP_PASSWORD); the daemon must prove it knows it too")
      ->type_name("FILE");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "rcp: %s\nTry 'rcp --help' for more information.\n", e.what());
    return ec::kUsage;
  }
  if (cli::archive_requested(app)) o.recursive = true;
  if (!o.shard_text.empty()) {
    auto sh = cli::parse_shard(o.shard_text);
    if (!sh.ok()) {
      std::fprintf(stderr, "rcp: %s\n", sh.error().context.c_str());
      return ec::kUsage;
    }
    // A tree source has no list every run can agree on before it copies:
    // the split is of a list (find SRC -type f > LIST makes one).
    if (o.files_from.empty()) {
      std::fprintf(stderr, "rcp: --shard splits a --files-from list: give one (as: cd SRC && find . -type f > LIST)\n");
      return ec::kUsage;
    }
    // --delete in one shard would remove what the other shards copy.
    if (o.del || o.del_after) {
      std::fprintf(stderr, "rcp: --shard and --delete exclude each other (one shard would delete the others' files)\n");
      return ec::kUsage;
    }
    o.shard = sh.value();
    g_report.shard = o.shard_text;
  }
  if (!o.bwlimit.empty()) {
    auto rate = parse_rate(o.bwlimit);
    if (!rate.ok()) {
      std::fprintf(stderr, "rcp: %s\n", rate.error().context.c_str());
      return ec::kUsage;
    }
    o.bwlimit_bytes = rate.value();
  }
  if (o.ipv4 && o.ipv6) {
    std::fprintf(stderr, "rcp: -4 and -6 exclude each other\n");
    return ec::kUsage;
  }
  set_log_level(o.quiet ? LogLevel::error : o.verbose > 1 ? LogLevel::debug : o.verbose ? LogLevel::info : LogLevel::error);
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  const auto t0 = std::chrono::steady_clock::now();
  int rc = run(o, app);
  rc = g_cancel && rc != ec::kOk ? ec::kSignal : rc;
  g_report.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  g_report.exit_code = rc;
  if (o.stats) {
    const std::string text = cli::to_stats_text(g_report);
    std::fputs(text.c_str(), o.json ? stderr : stdout);
  }
  if (o.json) {
    const std::string text = cli::to_json(g_report);
    std::fputs(text.c_str(), stdout);
  }
  return rc;
}
