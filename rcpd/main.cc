// rcpd: the daemon. This file parses its options, opens the exports, writes
// the pid file, drops privileges and reloads on SIGHUP; serve.cc handles one
// connection. Which listeners to open (lib/daemon/listeners) and the accept
// loop with one thread per session (lib/daemon/server) live in lib/. A
// session that fails costs only its own connection.
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include <fmt/core.h>

#include "cli/number_option.h"
#include "daemon.h"
#include "daemon/config.h"
#include "daemon/exports.h"
#include "daemon/listen_address.h"
#include "daemon/listeners.h"
#include "daemon/server.h"
#include "serve.h"
#include "session/session.h"
#include "transport/connect.h"
#include "transport/tcp/tls.h"
#include "util/cpus.h"
#include "util/fd.h"
#include "util/log.h"
#include "util/nofile.h"
#include "util/memlock.h"
#include "util/notify.h"

namespace rcp::rcpd {
std::atomic<bool> g_stop{false};
}  // namespace rcp::rcpd

namespace {

using namespace rcp;
using namespace rcp::rcpd;
using rcp::daemon::parse_listen;

std::atomic<bool> g_reload{false};
void on_signal(int) { g_stop = true; }
void on_hup(int) { g_reload = true; }

/// Re-reads the configuration file (SIGHUP). An invalid file is reported and
/// the configuration in use kept; running sessions keep what they started with.
void reload(Daemon& d) {
  if (d.config_file.empty()) {
    log_error("SIGHUP: no configuration file to re-read (modules come from --export)");
    return;
  }
  auto cfg = daemon::load_config(d.config_file);
  if (!cfg.ok()) {
    log_error("SIGHUP: {}; keeping the configuration in use", cfg.error().message());
    return;
  }
  auto ex = daemon::open_exports(std::move(cfg.value()));
  if (!ex.ok()) {
    log_error("SIGHUP: {}; keeping the configuration in use", ex.error().message());
    return;
  }
  {
    std::lock_guard lk(d.mu);
    d.exports = std::move(ex.value());
  }
  log_notice("reloaded {} ({} module(s))", d.config_file, d.current()->modules.size());
  if (d.current()->modules.empty()) log_notice("{} configures no module: serving nothing", d.config_file);
}

/// Started as root with `user` set: drop to that user (and its group, or
/// `group`) for good, after the listeners are bound and the exports opened.
Status drop_privileges(const daemon::DaemonConfig& c) {
  if (c.user.empty() || geteuid() != 0) return {};
  errno = 0;
  passwd* pw = getpwnam(c.user.c_str());
  if (!pw) return make_error(errno ? errno : ENOENT, "user '" + c.user + "' (from [daemon] user) does not exist");
  gid_t gid = pw->pw_gid;
  if (!c.group.empty()) {
    group* gr = getgrnam(c.group.c_str());
    if (!gr) return make_error(ENOENT, "group '" + c.group + "' does not exist");
    gid = gr->gr_gid;
  }
  const uid_t uid = pw->pw_uid;
  // Registered buffers are locked memory: an unprivileged user's default
  // RLIMIT_MEMLOCK (8 MiB) would fail the first session. Raise it while still
  // root; the limit stays after setuid (as LimitMEMLOCK=infinity does).
  rlimit ml{RLIM_INFINITY, RLIM_INFINITY};
  if (setrlimit(RLIMIT_MEMLOCK, &ml) != 0 && getrlimit(RLIMIT_MEMLOCK, &ml) == 0) {
    log_error("cannot raise RLIMIT_MEMLOCK before dropping to {} ({}); it stays {} KiB", c.user, std::strerror(errno),
              ml.rlim_max / 1024);
    ml.rlim_cur = ml.rlim_max;
    (void)setrlimit(RLIMIT_MEMLOCK, &ml);
  }
  if (setgroups(1, &gid) != 0) return sys_error("setgroups");
  if (setgid(gid) != 0) return sys_error("setgid");
  if (setuid(uid) != 0) return sys_error("setuid " + c.user);
  if (setuid(0) == 0) return make_error(EPERM, "could regain root after dropping to " + c.user);
  log_info("running as user {} (uid {}, gid {})", c.user, uid, gid);
  return {};
}

static_assert(wire::kMaxOpenRules == kMaxFilterRules && wire::kMaxOpenRuleLen == kMaxFilterRuleLen,
              "the wire's bounds on filter rules are the filter's own");

/// Writes our pid to `path`, replacing a stale file but never following a
/// symlink planted there.
Status write_pid_file(const std::string& path) {
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.valid()) return sys_error("pid_file " + tmp);
  const std::string text = std::to_string(::getpid()) + "\n";
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) return sys_error("pid_file " + tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return sys_error("pid_file " + path);
  return {};
}

/// Opens the listeners the transport policy asks for and serves each
/// connection on its own thread until SIGINT/SIGTERM (lib/daemon).
int run(Daemon& d, const std::vector<std::string>& listen, uint16_t rdma_port, uint16_t tcp_port, TransportKind kind) {
  std::vector<std::unique_ptr<Listener>> all;
  // TLS for TCP clients that ask (rcp --encrypt): a key drawn now, never
  // written anywhere. rcpd.conf `[daemon] encrypt = "never"` offers none
  // (read at start only: a reload cannot start offering it).
  std::shared_ptr<tcp::TlsContext> tls;
  if (d.current()->config.encrypt != daemon::EncryptPolicy::never) {
    auto ctx = tcp::TlsContext::server();
    if (!ctx.ok()) {
      log_error("{}", ctx.error().message());
      return 1;
    }
    tls = std::move(ctx.value());
  }
  for (const std::string& host : listen) {
    ListenerConfig lc;
    lc.host = host == "*" ? "" : host;
    lc.rdma_port = rdma_port;
    lc.tcp_port = tcp_port;
    lc.kind = kind;
    lc.max_chunk = d.settings.chunk_size;
    lc.tcp_hello_ms = static_cast<int>(d.hello_timeout * 1000);
    lc.tls = tls;
    lc.rails = d.rails;
    auto listeners = open_listeners(lc);
    if (!listeners.ok()) return 1;  // logged by open_listeners
    for (auto& l : listeners.value()) all.push_back(std::move(l));
  }
  // The pid file is written while still root (as rsyncd does), so it can
  // live in /run; removed at exit when the dropped user still may.
  const std::string pid_file = d.current()->config.pid_file;
  if (!pid_file.empty()) {
    if (Status s = write_pid_file(pid_file); !s.ok()) {
      log_error("{}", s.error().message());
      return 1;
    }
  }
  struct PidFile {
    const std::string& path;
    ~PidFile() {
      if (!path.empty()) ::unlink(path.c_str());
    }
  } pid_guard{pid_file};
  if (Status s = drop_privileges(d.current()->config); !s.ok()) {
    log_error("{}", s.error().message());
    return 1;
  }
  if (d.current()->modules.empty())
    log_notice("{} configures no module: serving nothing until a [modules.NAME] table is added "
               "(then reload: SIGHUP, systemctl reload rcpd)", d.config_file);
  log_notice("ready");
  notify_ready();  // Type=notify (packaging/rcpd.service); a no-op outside systemd
  // SIGHUP only sets a flag; the reload itself runs here, off the signal handler.
  std::thread reloader([&d] {
    while (!g_stop) {
      if (g_reload.exchange(false)) reload(d);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  ServerConfig sc;
  sc.max_connections = d.max_connections;
  sc.max_per_host = d.max_per_host;
  sc.stop = &g_stop;
  sc.on_refused = refuse_busy;
  Status st = run_server(std::move(all), sc, [&d](Transport& t) { serve(d, t); });
  g_stop = true;
  reloader.join();
  if (!st.ok()) {
    log_error("{}", st.error().message());
    return 1;
  }
  return 0;
}

CLI::Validator range(long lo, long hi) {
  return CLI::Validator([lo, hi](std::string& s) { return cli::integer_problem(s, lo, hi); }, "");
}

}  // namespace

int main(int argc, char** argv) {
  set_log_prefix("rcpd");
  raise_nofile_limit();  // a descriptor per file being received (util/nofile.h)
  Daemon d;
  std::string listen;
  std::vector<std::string> exports;
  std::string config_file;
  std::string transport = "auto";
  std::string rails_text;  // --rails
  uint16_t rdma_port = kDefaultRdmaPort, tcp_port = kDefaultTcpPort;
  uint32_t max_connections = 0;
  int verbose = 0;
  uint32_t chunk_kib = 1024;
  CLI::App app{"rcpd - export directories to rcp clients over RDMA and TCP (see rcpd(8))", "rcpd"};
  app.get_formatter()->column_width(34);
  app.add_option("--listen", listen,
                 "ADDR[:PORT] to listen on; * (default) is every address (TCP: IPv4 and IPv6). PORT is the port of "
                 "--transport tcp or rdma; with auto the TCP port, and PORT - 1 the rdma_cm port")
      ->type_name("ADDR[:PORT]");
  app.add_option("--config", config_file,
                 "configuration file (rcpd.conf(5)); default /etc/rcpd.conf when it exists and no --export is given")
      ->type_name("FILE");
  app.add_option("--export", exports,
                 "NAME=DIR: serve DIR as module NAME, read-write, no authentication, every host (repeatable; quick local use)")
      ->type_name("NAME=DIR");
  app.add_option("--rails", rails_text,
                 "RDMA devices offered as more rails to rcp --rails: auto (default: every device with an IP address) "
                 "or DEV[,DEV...]")
      ->type_name("auto|DEV,...");
  app.add_option("--transport", transport, "auto (RDMA where a device exists, and TCP), rdma or tcp; default auto")
      ->type_name("KIND");
  app.add_option("-P,--port", rdma_port, fmt::format("rdma_cm port (default {})", kDefaultRdmaPort))
      ->type_name("PORT")
      ->check(range(1, 65535));
  app.add_option("--tcp-port", tcp_port, fmt::format("TCP port (default {})", kDefaultTcpPort))
      ->type_name("PORT")
      ->check(range(1, 65535));
  app.add_option("--chunk-size,--buffer-size", chunk_kib, "largest chunk in KiB, 4 to 65536 (default 1024)")
      ->type_name("KIB")
      ->check(range(4, 65536));
  app.add_option("--window", d.settings.window, "chunks in flight per connection, 1 to 4096 (default 16)")
      ->type_name("N")
      ->check(range(1, 4096));
  app.add_option("--hash-threads", d.settings.hash_threads, "digest threads per session, 0 to 64 (default 1, but 0 for a client on this host when it has fewer than 4 CPUs)")
      ->type_name("N")
      ->check(range(0, 64));
  app.add_option("--max-connections", max_connections,
                 "sessions served at once, 1 to 65536 (default 64, or [daemon] max_connections)")
      ->type_name("N")
      ->check(range(1, 65536));
  uint32_t max_per_host = 0;
  double hello_timeout = 0;
  app.add_option("--max-per-host", max_per_host,
                 "connections from one address, 1 to 65536 (default: [daemon] max_per_host, 8; none with --export)")
      ->type_name("N")
      ->check(range(1, 65536));
  app.add_option("--hello-timeout", hello_timeout,
                 "seconds a client has for its whole hello, 0.1 to 600 (default 10, or [daemon] hello_timeout)")
      ->type_name("SECS")
      ->check(CLI::Range(0.1, 600.0));
  app.add_flag("-v,--verbose", verbose, "log each session (twice: debug)");
  app.add_flag_callback(
      "-V,--version",
      [] {
        std::printf("rcpd %s\ntransports: rdma (rdma_cm + verbs), tcp\n", RCP_VERSION);
        throw CLI::Success();
      },
      "print the version");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "rcpd: %s\nTry 'rcpd --help' for more information.\n", e.what());
    return 2;
  }
  set_log_level(verbose > 1 ? LogLevel::debug : verbose ? LogLevel::info : LogLevel::error);
  d.settings.chunk_size = chunk_kib * 1024;
  d.settings.cancel = &g_stop;
  if (!rails_text.empty()) {
    auto rails = parse_rails_option(rails_text);
    if (!rails.ok()) {
      log_error("{}", rails.error().context);
      return 2;
    }
    d.rails = rails.value();
  }
  TransportKind kind;
  if (!parse_transport(transport, kind)) {
    log_error("--transport '{}': expected auto, rdma or tcp", transport);
    return 2;
  }
  // The modules: --config FILE, or --export options, or /etc/rcpd.conf.
  if (!config_file.empty() && !exports.empty()) {
    log_error("--config and --export cannot be combined (put the modules in the file)");
    return 2;
  }
  if (config_file.empty() && exports.empty()) {
    if (::access("/etc/rcpd.conf", F_OK) == 0) {
      config_file = "/etc/rcpd.conf";
    } else {
      log_error("nothing to serve: give --config FILE (rcpd.conf(5)) or --export NAME=DIR");
      return 2;
    }
  }
  std::set<std::string> seen;
  for (auto& e : exports) {
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == e.size()) {
      log_error("--export '{}': expected NAME=DIR", e);
      return 2;
    }
    std::string name = e.substr(0, eq), dir = e.substr(eq + 1);
    if (!is_plain_name(name) || name.size() > wire::kMaxModuleText) {
      log_error("--export '{}': module name must be a plain name (no '/', not '.' or '..', at most {} bytes)", e,
                wire::kMaxModuleText);
      return 2;
    }
    if (!seen.insert(name).second) {
      log_error("--export '{}': module '{}' is already exported", e, name);
      return 2;
    }
  }
  Result<daemon::DaemonConfig> cfg = config_file.empty() ? daemon::config_from_exports(exports)
                                                         : daemon::load_config(config_file);
  if (!cfg.ok()) {
    log_error("{}", cfg.error().message());
    return exports.empty() ? 1 : 2;
  }
  if (!exports.empty())
    log_notice("--export modules are read-write, with no authentication and no host rules: "
               "for local use only (use --config for anything else)");
  // --listen ADDR:PORT sets the port of the transport(s) it names: with
  // --transport tcp the TCP port, with rdma the rdma_cm port, with auto the
  // TCP port and PORT - 1 for rdma_cm (7472/7471 by default; rcp://HOST:PORT
  // means the same). -P and --tcp-port, when given, win for their transport.
  std::vector<std::string> hosts;  // from the file unless --listen is given
  if (!config_file.empty()) {
    if (listen.empty()) hosts = cfg->listen;
    if (app.count("--port") == 0) rdma_port = cfg->port;
    if (app.count("--tcp-port") == 0) tcp_port = cfg->tcp_port;
    if (max_connections == 0) max_connections = cfg->max_connections;
    if (max_per_host == 0) max_per_host = cfg->max_per_host;
    if (hello_timeout == 0) hello_timeout = cfg->hello_timeout;
    if (app.count("--hash-threads") == 0) d.settings.hash_threads = cfg->hash_threads;
  }
  d.settings.cpus = usable_cpus();  // (hash_threads_for, per session)
  if (listen.empty() && hosts.empty()) listen = "*";
  auto l = parse_listen(listen.empty() ? "*" : listen);
  if (!l.ok()) {
    log_error("{}", l.error().message());
    return 2;
  }
  if (!listen.empty()) hosts = {l->first};
  if (const uint16_t lp = l->second; lp != 0) {
    if (kind == TransportKind::rdma) {
      if (app.count("--port") == 0) rdma_port = lp;
    } else {
      if (app.count("--tcp-port") == 0) tcp_port = lp;
      if (kind == TransportKind::automatic && app.count("--port") == 0) {
        if (lp == 1) {
          log_error("--listen '{}': port 1 leaves no rdma_cm port (PORT - 1); give -P", l->first);
          return 2;
        }
        rdma_port = static_cast<uint16_t>(lp - 1);
      }
    }
  }
  if (kind == TransportKind::automatic && rdma_port == tcp_port) {
    log_error("the rdma_cm port and the TCP port are both {}; on iWARP they share one port space (give -P or --tcp-port)",
              tcp_port);
    return 2;
  }
  d.max_connections = max_connections ? max_connections : 64;
  // --export is for local use, where every client is 127.0.0.1: no
  // per-address limit unless --max-per-host is given (rcpd.conf: 8).
  d.max_per_host = max_per_host;
  if (hello_timeout > 0) d.hello_timeout = hello_timeout;
  d.config_file = config_file;
  for (auto& m : cfg->modules) {
    int fd = ::open(m.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
      if (size_t n = daemon::clean_stale_temps(fd)) log_error("module {}: removed {} stale temp file(s) in {}", m.name, n, m.path);
      ::close(fd);
    }
  }
  auto ex = daemon::open_exports(std::move(cfg.value()));
  if (!ex.ok()) {
    log_error("{}", ex.error().message());
    return 1;
  }
  d.exports = std::move(ex.value());
  // One session pins its pool twice (io_uring and, over RDMA, the MR); root is
  // exempt only with CAP_IPC_LOCK, which memlock_warning checks.
  if (auto w = memlock_warning(uint64_t{d.settings.chunk_size} * d.settings.window * 2); !w.empty())
    log_error("{}", w);
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  struct sigaction hup{};
  hup.sa_handler = on_hup;
  sigaction(SIGHUP, &hup, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return run(d, hosts, rdma_port, tcp_port, kind);
}
