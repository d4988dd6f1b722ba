// rcp: the scp-like client. Parses the command line, connects, and runs the
// engine as source (push) or sink (pull); turns errors into messages and
// exit codes. Everything else is in lib/.
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fmt/core.h>
#include <optional>

#include <pwd.h>

#include "cli/exit_codes.h"
#include "fs/path.h"
#include "hash/digest.h"
#include "session/authenticate.h"
#include "session/config.h"
#include "session/session.h"
#include "transport/connect.h"
#include "util/log.h"

namespace {

using namespace rcp;

// Exit codes (documented in rcp(1)).
constexpr int kExitOk = 0;
constexpr int kExitFiles = 1;     // some file failed; others may have been copied
constexpr int kExitUsage = 2;     // bad command line
constexpr int kExitConnect = 3;   // could not connect or the session failed
constexpr int kExitInterrupted = 130;

std::atomic<bool> g_cancel{false};
void on_signal(int) { g_cancel = true; }

struct Remote {
  std::string host, module_path;
  std::string user;  ///< from USER@HOST, "" when not given
};

/// "HOST:MODULE/PATH" (HOST may be [v6]); a ':' after a '/' is part of a
/// local path, as with scp.
std::optional<Remote> parse_remote_host(const std::string& s);
/// USER@ before the host names the user to authenticate as (split at the
/// last '@' before the ':'; lib/cli/address.h parse_address does the same).
std::optional<Remote> parse_remote(const std::string& s) {
  const size_t colon = s.find(':'), slash = s.find('/');
  const size_t at = s.rfind('@', colon == std::string::npos ? std::string::npos : colon);
  if (at != std::string::npos && at > 0 && colon != std::string::npos && at < colon &&
      (slash == std::string::npos || at < slash)) {
    auto r = parse_remote_host(s.substr(at + 1));
    if (r) r->user = s.substr(0, at);
    return r;
  }
  return parse_remote_host(s);
}

std::optional<Remote> parse_remote_host(const std::string& s) {
  size_t colon;
  if (!s.empty() && s[0] == '[') {
    size_t rb = s.find(']');
    if (rb == std::string::npos || rb + 1 >= s.size() || s[rb + 1] != ':') return std::nullopt;
    return Remote{s.substr(1, rb - 1), s.substr(rb + 2)};
  }
  colon = s.find(':');
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  size_t slash = s.find('/');
  if (slash != std::string::npos && slash < colon) return std::nullopt;
  return Remote{s.substr(0, colon), s.substr(colon + 1)};
}

struct Options {
  std::vector<std::string> args;
  int verbose = 0;
  bool quiet = false;
  std::string transport = "auto";
  std::string checksum = "xxh128";
  uint16_t rdma_port = kDefaultRdmaPort;
  uint16_t tcp_port = kDefaultTcpPort;
  uint32_t chunk_kib = 1024;
  uint32_t window = 16;
  bool fsync = false;
  uint32_t streams = 0;  // 0: the transport's default
  bool no_zerocopy = false;
  bool recursive = false;
  unsigned hash_threads = 1;
  std::string password_file;
};

/// Authenticates when the user gave a secret (--password-file or
/// RCP_PASSWORD), for the module of `r`, and seals the channel; without a
/// secret nothing is sent (the daemon refuses an OPEN for a module that
/// needs authentication). Returns the chunk key for SessionOptions.
Result<std::optional<std::array<uint8_t, 32>>> maybe_authenticate(Channel& ch, const Remote& r, const std::string& secret) {
  if (secret.empty()) return std::optional<std::array<uint8_t, 32>>{};
  std::string user = r.user;
  if (user.empty()) {
    if (const char* u = std::getenv("USER")) user = u;
    else if (passwd* pw = getpwuid(getuid())) user = pw->pw_name;
  }
  const std::string module = split_module(r.module_path).first;
  RCP_ASSIGN(auth::SessionKeys keys, client_authenticate(ch, user, module, {reinterpret_cast<const uint8_t*>(secret.data()), secret.size()},
                                                         30000, &g_cancel));
  return std::optional<std::array<uint8_t, 32>>{keys.data};
}

/// The exit code of a session the daemon refused or that failed before the
/// transfer (lib/cli/exit_codes.h): authentication 40, access refused 3, ...
int open_failure_code(const Error& e) { return cli::exit_code_for(e, cli::Phase::session); }
bool is_refusal(const Error& e) {
  return e.code == EKEYREJECTED || e.code == EACCES || e.code == EBADMSG || e.code == ENOKEY;
}

/// Expands the push sources into openers: files as they are, directories
/// (with -r) as a directory entry plus everything below it, named
/// "base/rel" so the tree lands under the destination directory.
Result<std::vector<SourceOpener>> push_sources(const std::vector<std::string>& srcs, bool recursive, bool& tree) {
  std::vector<SourceOpener> files;
  tree = false;
  for (const auto& s : srcs) {
    RCP_ASSIGN(SourceSet set, expand_source(AT_FDCWD, s, s, false, recursive));
    tree = tree || set.tree;
    for (auto& k : set.skipped) log_error("skipping '{}/{}': not a regular file or directory", s, k);
    for (auto& f : set.files) files.push_back(std::move(f));
  }
  return files;
}

/// The user's settings, as lib/session/config.h takes them.
Settings settings(const Options& o, Checksum algo) {
  Settings s;
  s.checksum = algo;
  s.chunk_size = o.chunk_kib * 1024;
  s.window = o.window;
  s.fsync = o.fsync;
  s.hash_threads = o.hash_threads;
  s.streams = o.streams;
  s.cancel = &g_cancel;
  return s;
}

int report_errors(const TransferStats& st) {
  for (const auto& e : st.errors) log_error("{}", e);
  return st.files_failed > 0 ? kExitFiles : kExitOk;
}

int run(const Options& o) {
  auto algo = parse_checksum(o.checksum);
  if (!algo) {
    log_error("unknown checksum '{}' (xxh128, sha256, none)", o.checksum);
    return kExitUsage;
  }
  const Settings set = settings(o, *algo);
  auto secret = client_secret(o.password_file);
  if (!secret.ok()) {
    log_error("{}", secret.error().message());
    return cli::exit_code::kAuth;
  }
  ConnectOptions co;
  if (!parse_transport(o.transport, co.kind)) {
    log_error("unknown transport '{}' (auto, rdma, tcp)", o.transport);
    return kExitUsage;
  }
  co.rdma_port = o.rdma_port;
  co.tcp_port = o.tcp_port;
  co.zerocopy = !o.no_zerocopy;
  co = connect_options(set, co);

  std::vector<std::string> srcs(o.args.begin(), o.args.end() - 1);
  const std::string& dst = o.args.back();
  auto rdst = parse_remote(dst);
  std::vector<std::optional<Remote>> rsrcs;
  size_t nremote = 0;
  for (auto& s : srcs) {
    rsrcs.push_back(parse_remote(s));
    if (rsrcs.back()) ++nremote;
  }
  const bool push = rdst.has_value();
  if (push && nremote > 0) {
    log_error("copies between two remote hosts are not supported; one side must be local");
    return kExitUsage;
  }
  if (!push && nremote != srcs.size()) {
    log_error("{}", nremote == 0 ? "neither side is remote (HOST:MODULE/PATH); use cp for local copies"
                                 : "all sources of a pull must be remote");
    return kExitUsage;
  }
  const auto t0 = std::chrono::steady_clock::now();
  TransferStats total;
  std::string carried_by;

  auto open_session = [&](const std::string& host) -> Result<std::unique_ptr<Transport>> {
    std::string note;
    auto t = connect_transport(host, co, note);
    if (!t.ok()) return t.error();
    if (!note.empty() && !o.quiet) std::fprintf(stderr, "rcp: %s\n", note.c_str());
    auto& tr = *t.value();
    if (!(tr.negotiated().checksums & (1u << static_cast<int>(*algo))))
      return make_error(ENOTSUP, fmt::format("{} does not support checksum {}", tr.peer(), o.checksum));
    carried_by = tr.name();
    log_info("connected to {} over {}", tr.peer(), tr.describe());
    return t;
  };

  if (push) {
    bool tree = false;
    auto files = push_sources(srcs, o.recursive, tree);
    if (!files.ok()) {
      log_error("{}", files.error().message());
      return kExitUsage;
    }
    // A tree needs a directory to land in, as several files do.
    const uint16_t flags = (srcs.size() > 1 || tree ? wire::kOpenMulti : 0) | (o.fsync ? wire::kOpenFsync : 0);
    auto t = open_session(rdst->host);
    if (!t.ok()) {
      log_error("{}", t.error().message());
      return kExitConnect;
    }
    Channel ch(*t.value());
    SessionOptions so = session_options(set, Role::source, t.value()->negotiated());
    auto key = maybe_authenticate(ch, *rdst, secret.value());
    if (!key.ok()) {
      log_error("{}: {}", dst, key.error().message());
      return open_failure_code(key.error());
    }
    so.chunk_key = key.value();
    if (auto s = ch.send(wire::Open{wire::Op::put, *algo, flags, rdst->module_path}); !s.ok()) {
      log_error("{}", s.error().message());
      return kExitConnect;
    }
    auto ok = ch.receive(so.idle_timeout_ms, &g_cancel);
    if (!ok.ok()) {
      log_error("{}: {}", dst, ok.error().message());
      return is_refusal(ok.error()) ? open_failure_code(ok.error()) : kExitConnect;
    }
    auto st = run_source(ch, std::move(files.value()), so);
    if (!st.ok()) {
      log_error("{}", st.error().message());
      return g_cancel ? kExitInterrupted : kExitConnect;
    }
    total = std::move(st.value());
  } else {
    const std::string host = rsrcs.front()->host;
    for (auto& r : rsrcs)
      if (r->host != host) {
        log_error("all sources of a pull must be on one host");
        return kExitUsage;
      }
    auto dest = resolve_destination_local(dst, srcs.size() > 1 || o.recursive);
    if (!dest.ok()) {
      log_error("{}", dest.error().message());
      return kExitUsage;
    }
    for (auto& r : rsrcs) {
      auto t = open_session(host);
      if (!t.ok()) {
        log_error("{}", t.error().message());
        return kExitConnect;
      }
      Channel ch(*t.value());
      SessionOptions so = session_options(set, Role::sink, t.value()->negotiated());
      auto key = maybe_authenticate(ch, *r, secret.value());
      if (!key.ok()) {
        log_error("{}:{}: {}", host, r->module_path, key.error().message());
        return open_failure_code(key.error());
      }
      so.chunk_key = key.value();
      const uint16_t flags = (o.fsync ? wire::kOpenFsync : 0) | (o.recursive ? wire::kOpenRecursive : 0);
      if (auto s = ch.send(wire::Open{wire::Op::get, *algo, flags, r->module_path}); !s.ok()) {
        log_error("{}", s.error().message());
        return kExitConnect;
      }
      auto ok = ch.receive(so.idle_timeout_ms, &g_cancel);
      if (!ok.ok() && is_refusal(ok.error())) {
        log_error("{}:{}: {}", host, r->module_path, ok.error().message());
        return open_failure_code(ok.error());
      }
      if (!ok.ok()) {
        ++total.files_failed;
        total.errors.push_back(fmt::format("{}:{}: {}", host, r->module_path, ok.error().message()));
        continue;
      }
      auto st = run_sink(ch, dest.value(), so);
      if (!st.ok()) {
        log_error("{}", st.error().message());
        return g_cancel ? kExitInterrupted : kExitConnect;
      }
      total.bytes += st->bytes;
      total.files_ok += st->files_ok;
      total.files_failed += st->files_failed;
      for (auto& e : st->errors) total.errors.push_back(e);
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (o.verbose > 0) {
    std::fprintf(stderr, "rcp: %s: %u file(s), %llu bytes in %.3f s, %.1f MB/s, checksum %s\n",
                 carried_by.c_str(), total.files_ok, static_cast<unsigned long long>(total.bytes), secs,
                 secs > 0 ? static_cast<double>(total.bytes) / secs / 1e6 : 0.0, checksum_name(*algo));
  }
  return report_errors(total);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"rcp - copy files over RDMA (or TCP) to and from an rcpd daemon, verified end to end.\n"
               "  push: rcp [OPTIONS] FILE... HOST:MODULE/PATH\n"
               "  pull: rcp [OPTIONS] HOST:MODULE/PATH... DEST",
               "rcp"};
  app.add_option("paths", o.args, "SRC... DEST; a remote side is HOST:MODULE/PATH")->required()->expected(2, -1);
  app.add_flag("-v,--verbose", o.verbose, "say which transport and device carried the copy, and the throughput");
  app.add_flag("-q,--quiet", o.quiet, "print only errors");
  app.add_option("--transport", o.transport, "auto (RDMA if possible, else TCP), rdma or tcp")->capture_default_str();
  app.add_option("--checksum", o.checksum, "per-chunk digest: xxh128, sha256 or none")->capture_default_str();
  app.add_option("-P,--port", o.rdma_port, "daemon's rdma_cm port")->capture_default_str();
  app.add_option("--tcp-port", o.tcp_port, "daemon's TCP port")->capture_default_str();
  app.add_option("--chunk-size,--buffer-size", o.chunk_kib, "chunk size in KiB: each buffer of the pool holds one chunk")->capture_default_str()->check(CLI::Range(4, 65536));
  app.add_option("--window", o.window, "chunks in flight (buffer pool = window x chunk size)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  const std::string streams_default =
      kDefaultTcpStreams == kDefaultRdmaQps ? std::to_string(kDefaultTcpStreams)
                                            : fmt::format("{} TCP, {} RDMA", kDefaultTcpStreams, kDefaultRdmaQps);
  app.add_option("--streams", o.streams,
                 "connections (TCP) or queue pairs (RDMA) per copy [default: " + streams_default + "]")
      ->check(CLI::Range(1, 16));
  app.add_flag("--no-zerocopy", o.no_zerocopy, "TCP transport: plain sends instead of zero-copy sends");
  app.add_option("--hash-threads", o.hash_threads, "threads computing chunk digests (0: on the I/O loop)")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  app.add_flag("-r,--recursive", o.recursive, "copy directories and everything below them");
  app.add_flag("--fsync", o.fsync, "fsync each file before renaming it into place");
  app.add_option("--password-file", o.password_file,
                 "authenticate as USER (from USER@HOST:...) with the secret on the first line of FILE "
                 "(else $RCP_PASSWORD); the daemon must prove it knows it too");
  app.set_version_flag("--version", std::string("rcp ") + RCP_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kExitUsage;
  }
  set_log_prefix("rcp");
  set_log_level(o.quiet ? LogLevel::error : o.verbose > 1 ? LogLevel::debug : o.verbose ? LogLevel::info : LogLevel::error);
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return run(o);
}
