// rcpd: the daemon. Parses options and opens the exports; which listeners
// to open (lib/daemon/listeners) and the accept loop with one thread per
// session (lib/daemon/server) live in lib/. A session that fails costs only
// its own connection.
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fmt/core.h>
#include <map>
#include <thread>

#include "daemon/listeners.h"
#include "daemon/server.h"
#include "fs/path.h"
#include "session/config.h"
#include "session/session.h"
#include "transport/connect.h"
#include "util/log.h"

namespace {

using namespace rcp;

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

struct Export {
  std::string dir;
  Fd root;
};

struct Daemon {
  std::map<std::string, Export> exports;
  Settings settings;  ///< every session's, but for the checksum and fsync its OPEN asks for
  uint32_t max_connections = 64;
  uint32_t max_per_host = 8;
  double hello_timeout = 5;  ///< seconds for a whole TCP hello
};

/// What a get sends: one file, or with kOpenRecursive a directory and
/// everything below it — every path opened beneath the export, symlinks
/// never followed.
Result<std::vector<SourceOpener>> get_sources(int root, const std::string& rel, const std::string& shown,
                                              bool recursive) {
  RCP_ASSIGN(SourceSet set, expand_source(root, rel, shown, true, recursive));
  for (auto& k : set.skipped) log_info("get {}: skipping '{}': not a regular file or directory", shown, k);
  return std::move(set.files);
}

/// Handles one connection from its OPEN to its end. Every failure is sent to
/// the client and logged; nothing escapes this function.
void serve(Daemon& d, Transport& t) {
  Channel ch(t);
  auto first = ch.receive(10000, &g_stop);
  if (!first.ok()) {
    log_error("{}: {}", t.peer(), first.error().message());
    return;
  }
  auto* open = std::get_if<wire::Open>(&first.value());
  auto refuse = [&](const Error& e) {
    log_error("{}: {}", t.peer(), e.message());
    (void)ch.send(wire::ErrorMsg{e.code, e.context});
    // Give the message a moment to leave before the connection closes.
    std::vector<TransportEvent> ev;
    for (int i = 0; i < 100 && t.send_pending(); ++i) {
      (void)t.poll(ev);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  };
  if (!open) return refuse(make_error(EPROTO, "expected OPEN as the first message"));
  if (!(supported_checksums() & (1u << static_cast<int>(open->checksum))))
    return refuse(make_error(ENOTSUP, "unsupported checksum"));
  auto [module, rest] = split_module(open->path);
  auto ex = d.exports.find(module);
  if (ex == d.exports.end()) return refuse(make_error(ENOENT, "unknown module '" + module + "'"));
  auto rel = clean_relative(rest);
  if (!rel.ok()) return refuse(rel.error());
  const std::string shown = module + (rel->empty() ? "" : "/" + rel.value());
  Settings set = d.settings;
  set.checksum = open->checksum;
  set.fsync = open->flags & wire::kOpenFsync;
  const auto t0 = std::chrono::steady_clock::now();
  Result<TransferStats> st = TransferStats{};
  if (open->op == wire::Op::put) {
    auto dest = resolve_destination_beneath(ex->second.root.get(), rel.value(), open->flags & wire::kOpenMulti, shown);
    if (!dest.ok()) return refuse(dest.error());
    if (auto s = ch.send(wire::OpenOk{static_cast<uint8_t>(dest->is_dir)}); !s.ok()) return refuse(s.error());
    st = run_sink(ch, dest.value(), session_options(set, Role::sink, t.negotiated()));
  } else {
    auto files = get_sources(ex->second.root.get(), rel.value(), shown, open->flags & wire::kOpenRecursive);
    if (!files.ok()) return refuse(files.error());
    if (auto s = ch.send(wire::OpenOk{0}); !s.ok()) return refuse(s.error());
    st = run_source(ch, std::move(files.value()), session_options(set, Role::source, t.negotiated()));
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) {
    log_error("{} {} {}: {}", t.peer(), open->op == wire::Op::put ? "put" : "get", shown, st.error().message());
    return;
  }
  for (auto& e : st->errors) log_error("{}: {}", t.peer(), e);
  log_info("{} {} {} over {}: {} file(s) ok, {} failed, {} bytes in {:.3f} s", t.peer(),
           open->op == wire::Op::put ? "put" : "get", shown, t.name(), st->files_ok, st->files_failed, st->bytes, secs);
}

/// Opens the listeners the transport policy asks for and serves each
/// connection on its own thread until SIGINT/SIGTERM (lib/daemon).
int run(Daemon& d, const std::string& listen, uint16_t rdma_port, uint16_t tcp_port, TransportKind kind) {
  ListenerConfig lc;
  lc.host = listen == "*" ? "" : listen;
  lc.rdma_port = rdma_port;
  lc.tcp_port = tcp_port;
  lc.kind = kind;
  lc.max_chunk = d.settings.chunk_size;
  lc.tcp_hello_ms = static_cast<int>(d.hello_timeout * 1000);
  auto listeners = open_listeners(lc);
  if (!listeners.ok()) return 1;  // logged by open_listeners
  std::fprintf(stderr, "rcpd: ready\n");
  ServerConfig sc;
  sc.max_connections = d.max_connections;
  sc.max_per_host = d.max_per_host;
  sc.stop = &g_stop;
  if (Status st = run_server(std::move(listeners.value()), sc, [&d](Transport& t) { serve(d, t); }); !st.ok()) {
    log_error("{}", st.error().message());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Daemon d;
  std::string listen = "*";
  std::vector<std::string> exports;
  std::string transport = "auto";
  uint16_t rdma_port = kDefaultRdmaPort, tcp_port = kDefaultTcpPort;
  int verbose = 0;
  uint32_t chunk_kib = 1024;
  CLI::App app{"rcpd - export directories to rcp clients over RDMA and TCP", "rcpd"};
  app.add_option("--listen", listen, "address to listen on, ADDR or ADDR:PORT (rdma_cm port); * for all")
      ->capture_default_str();
  app.add_option("--export", exports, "NAME=DIR: serve DIR as module NAME (repeatable)")->required();
  app.add_option("--transport", transport, "auto (RDMA where a device exists, and TCP), rdma or tcp")
      ->capture_default_str();
  app.add_option("-P,--port", rdma_port, "rdma_cm port")->capture_default_str();
  app.add_option("--tcp-port", tcp_port, "TCP port")->capture_default_str();
  app.add_option("--chunk-size,--buffer-size", chunk_kib, "largest chunk in KiB (one buffer of the pool)")->capture_default_str()->check(CLI::Range(4, 65536));
  app.add_option("--window", d.settings.window, "chunks in flight per connection")->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_option("--hash-threads", d.settings.hash_threads, "digest threads per session (0: on the I/O loop)")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  app.add_option("--max-connections", d.max_connections, "sessions served at once")->capture_default_str();
  app.add_option("--max-per-host", d.max_per_host, "connections from one address")->capture_default_str()->check(CLI::Range(1, 65536));
  app.add_option("--hello-timeout", d.hello_timeout, "seconds a TCP client has for its whole hello")->capture_default_str()->check(CLI::Range(0.1, 600.0));
  app.add_flag("-v,--verbose", verbose, "log each session (twice: debug)");
  app.set_version_flag("--version", std::string("rcpd ") + RCP_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  set_log_prefix("rcpd");
  set_log_level(verbose > 1 ? LogLevel::debug : verbose ? LogLevel::info : LogLevel::error);
  d.settings.chunk_size = chunk_kib * 1024;
  d.settings.cancel = &g_stop;
  TransportKind kind;
  if (!parse_transport(transport, kind)) {
    log_error("unknown transport '{}'", transport);
    return 2;
  }
  // ADDR:PORT sets the rdma_cm port; a bare IPv6 address needs brackets.
  if (!listen.empty() && listen.front() == '[') {
    size_t rb = listen.find(']');
    if (rb != std::string::npos && rb + 1 < listen.size() && listen[rb + 1] == ':')
      rdma_port = static_cast<uint16_t>(std::stoi(listen.substr(rb + 2)));
    listen = listen.substr(1, rb == std::string::npos ? std::string::npos : rb - 1);
  } else if (auto c = listen.rfind(':'); c != std::string::npos && listen.find(':') == c) {
    rdma_port = static_cast<uint16_t>(std::stoi(listen.substr(c + 1)));
    listen = listen.substr(0, c);
  }
  for (auto& e : exports) {
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == e.size()) {
      log_error("--export '{}': expected NAME=DIR", e);
      return 2;
    }
    std::string name = e.substr(0, eq), dir = e.substr(eq + 1);
    if (!is_plain_name(name)) {
      log_error("--export '{}': module name must be a plain name", e);
      return 2;
    }
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      log_error("--export {}: cannot open directory '{}': {}", name, dir, std::strerror(errno));
      return 1;
    }
    d.exports[name] = Export{dir, Fd(fd)};
  }
  rlimit ml{};
  if (getrlimit(RLIMIT_MEMLOCK, &ml) == 0 && ml.rlim_cur != RLIM_INFINITY && geteuid() != 0 &&
      ml.rlim_cur < uint64_t{d.settings.chunk_size} * d.settings.window * 4)
    log_error("RLIMIT_MEMLOCK is {} KiB; registering buffers may fail (raise `ulimit -l` or LimitMEMLOCK)",
              ml.rlim_cur / 1024);
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return run(d, listen, rdma_port, tcp_port, kind);
}
