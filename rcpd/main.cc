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

#include <grp.h>
#include <pwd.h>

#include <atomic>
#include <chrono>
#include <fmt/core.h>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <optional>
#include <thread>

#include "cli/number_option.h"
#include "daemon/device_module.h"
#include "daemon/exports.h"
#include "daemon/glob.h"
#include "daemon/listeners.h"
#include "daemon/server.h"
#include "fs/filter.h"
#include "fs/path.h"
#include "session/config.h"
#include "session/session.h"
#include "transport/connect.h"
#include "transport/tcp/tls.h"
#include "util/cpus.h"
#include "util/fd.h"
#include "util/log.h"
#include "util/notify.h"
#include "util/memlock.h"

namespace {

using namespace rcp;

std::atomic<bool> g_stop{false};
std::atomic<bool> g_reload{false};
void on_signal(int) { g_stop = true; }
void on_hup(int) { g_reload = true; }

struct Daemon {
  /// What is served now; SIGHUP swaps in a new one, sessions keep theirs.
  std::mutex mu;
  std::shared_ptr<const daemon::Exports> exports;
  std::string config_file;  ///< "" when the modules came from --export
  Settings settings;  ///< every session's, but for the checksum and fsync its OPEN asks for
  RailsOption rails;  ///< --rails: the devices offered as more rails (not enabled: all)
  uint32_t max_connections = 64;
  uint32_t max_per_host = 0;  ///< 0: none
  double hello_timeout = 10;  ///< seconds for a whole TCP hello
  std::map<std::string, uint32_t> module_sessions;  ///< by module name, those with a max_connections
  std::shared_ptr<const daemon::Exports> current() {
    std::lock_guard lk(mu);
    return exports;
  }
  bool enter_module(const std::string& name, uint32_t max) {
    std::lock_guard lk(mu);
    uint32_t& n = module_sessions[name];
    if (n >= max) return false;
    ++n;
    return true;
  }
  void leave_module(const std::string& name) {
    std::lock_guard lk(mu);
    if (auto it = module_sessions.find(name); it != module_sessions.end() && --it->second == 0) module_sessions.erase(it);
  }
};

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

/// One path of a get, as it is sent: a file, or with -r a directory and
/// everything below it, every path opened beneath the export, symlinks never
/// followed. A wildcard in the last component (`data/logs/*.gz`) is expanded
/// here, inside the export (daemon/glob.h), each match sent as if named.
/// `contents` (kOpenContents, "dir/"): a directory's contents are sent, not
/// the directory itself (expand_source's trailing-slash rule).
Result<SourceStream> expand_get(int root, const std::string& p, const std::string& mod, const ExpandOptions& eo,
                                bool contents = false) {
  auto shown = [&](const std::string& q) { return q.empty() ? mod : mod + "/" + q; };
  auto slashed = [&](const std::string& q) { return contents && !q.empty() ? q + "/" : q; };
  std::vector<std::string> paths{p};
  if (p.find_first_of("*?[") != std::string::npos) {
    RCP_ASSIGN(paths, expand_wildcard(root, p, shown(p)));
  }
  if (paths.size() == 1) {
    RCP_ASSIGN(SourceSet set, expand_source(root, slashed(paths[0]), shown(paths[0]), eo));
    return set.files;
  }
  std::vector<std::function<SourceStream()>> parts;
  for (auto& q : paths)
    parts.push_back([root, q = slashed(q), s = shown(q), eo]() -> SourceStream {
      auto set = expand_source(root, q, s, eo);
      return set.ok() ? std::move(set->files) : stream_of({failed_entry(set.error())});
    });
  return chain(std::move(parts));
}

/// What a get sends: OPEN's path, then each of its further paths (relative
/// to the same module, cleaned and confined like it), one after the other —
/// each expanded only when the one before is sent. With kOpenRelative
/// (--files-from) the further paths lie below OPEN's path and arrive under
/// their own relative names; a directory without -r is sent alone. A lone
/// path that cannot be sent refuses the OPEN; among several, it fails as a
/// file (FILE_SKIPPED, exit 23 as rsync's) and the others still go. OPEN's filter
/// rules are applied to every name sent; OPEN's preserve bits say whether
/// symlinks (-l, -L), devices and specials (-D) are sent as entries.
Result<SourceStream> get_sources(int root, const std::string& rel, const wire::Open& open) {
  const std::string mod = split_module(open.path).first;
  ExpandOptions eo;
  eo.beneath = true;
  eo.recursive = open.flags & wire::kOpenRecursive;
  eo.walk = walk_options(Preserve::from_bits(open.preserve));
  if (!open.filters.empty()) {
    RCP_ASSIGN(FilterList fl, FilterList::from_wire(open.filters));
    eo.filter = std::make_shared<const FilterList>(std::move(fl));
  }
  std::vector<std::string> more;
  for (const auto& m : open.more) {
    auto c = clean_relative(m);
    if (!c.ok()) return make_error(EINVAL, "refused path '" + m + "': " + c.error().context);
    if (c->empty()) return make_error(EINVAL, "refused an empty path in the list");
    more.push_back(std::move(c.value()));
  }
  std::vector<std::function<SourceStream()>> parts;
  if (open.flags & wire::kOpenRelative) {
    if (more.empty()) return make_error(EINVAL, "a --files-from OPEN without paths");
    eo.dir_alone = true;
    for (auto& m : more) {
      ExpandOptions one = eo;
      one.name = m;
      const std::string p = rel.empty() ? m : rel + "/" + m;
      parts.push_back([root, p, mod, one]() -> SourceStream {
        auto set = expand_source(root, p, mod + "/" + p, one);
        return set.ok() ? std::move(set->files) : stream_of({failed_entry(set.error())});
      });
    }
    return chain(std::move(parts));
  }
  if (more.empty()) return expand_get(root, rel, mod, eo, open.flags & wire::kOpenContents);
  more.insert(more.begin(), rel);
  for (auto& m : more)
    parts.push_back([root, m, mod, eo]() -> SourceStream {
      auto s = expand_get(root, m, mod, eo);
      return s.ok() ? std::move(s.value()) : stream_of({failed_entry(s.error())});
    });
  return chain(std::move(parts));
}

/// The answer to `rcp HOST:`: the modules this peer may see (listed, and its
/// host allowed), with their comments, as many as one MODULE_LIST holds (the
/// rest flagged as truncated).
wire::ModuleList module_list(const daemon::Exports& ex, const std::string& peer) {
  wire::ModuleList l;
  auto ip = daemon::peer_address(peer);
  size_t bytes = wire::kHeaderSize + 3;
  for (auto& [name, m] : ex.modules) {
    if (!m->cfg.list || !ip.ok() || !daemon::allowed(m->cfg, ip.value())) continue;
    wire::ModuleList::Entry e{name.substr(0, wire::kMaxModuleText), m->cfg.comment.substr(0, wire::kMaxModuleText)};
    const size_t add = 4 + e.name.size() + e.comment.size();
    if (l.modules.size() == wire::kMaxModules || bytes + add > wire::kMaxMessage) {
      l.truncated = 1;
      break;
    }
    bytes += add;
    l.modules.push_back(std::move(e));
  }
  return l;
}

/// Gives queued messages a moment to leave before the connection closes.
void refuse_drain(Transport& t) {
  std::vector<TransportEvent> ev;
  for (int i = 0; i < 100 && t.send_pending(); ++i) {
    (void)t.poll(ev);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

/// A connection beyond --max-connections: read its OPEN, answer that the
/// daemon is full (the client prints it and exits 5), close.
void refuse_busy(Transport& t, const std::string& why) {
  Channel ch(t);
  (void)ch.receive(2000, &g_stop);
  (void)ch.send(wire::ErrorMsg{EUSERS, why});
  refuse_drain(t);
}

/// Handles one connection from its OPEN to its end. Every failure is sent to
/// the client and logged; nothing escapes this function.
void serve(Daemon& d, Transport& t) {
  Channel ch(t);
  const std::shared_ptr<const daemon::Exports> ex = d.current();
  // Give a last message a moment to leave before the connection closes.
  auto drain = [&] {
    std::vector<TransportEvent> ev;
    for (int i = 0; i < 100 && t.send_pending(); ++i) {
      (void)t.poll(ev);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  };
  auto refuse = [&](const Error& e) {
    log_error("{}: {}", t.peer(), e.message());
    (void)ch.send(wire::ErrorMsg{e.code, e.context});
    drain();
  };
  auto adm = daemon::admit(ch, *ex, t.peer(), static_cast<int>(ex->config.hello_timeout * 1000), &g_stop);
  if (!adm.ok()) {
    if (adm.error().code == ETIMEDOUT || adm.error().code == EINTR) {
      log_error("{}: {}", t.peer(), adm.error().message());
      return;
    }
    return refuse(adm.error());
  }
  const wire::Open* open = &adm->open;
  if (open->op == wire::Op::list) {
    if (auto s = ch.send(module_list(*ex, t.peer())); !s.ok()) return refuse(s.error());
    log_info("{}: listed modules", t.peer());
    return drain();
  }
  // The module's own max_connections: sessions on it at once (its name
  // counts across reloads, so a SIGHUP does not reset the count).
  const std::string& mname = adm->module->cfg.name;
  const uint32_t mmax = adm->module->cfg.max_connections;
  if (mmax && !d.enter_module(mname, mmax))
    return refuse(make_error(EUSERS, fmt::format("module '{}' is busy: it serves at most {} sessions at once "
                                                 "(its max_connections); try again later", mname, mmax)));
  struct Leave {
    Daemon& d;
    const std::string& name;
    bool counted;
    ~Leave() {
      if (counted) d.leave_module(name);
    }
  } leave{d, mname, mmax != 0};
  if (!(supported_checksums() & (1u << static_cast<int>(open->checksum))))
    return refuse(make_error(ENOTSUP, "unsupported checksum"));
  auto [module, rest] = split_module(open->path);
  const int root = adm->module->root.get();
  auto rel = clean_relative(rest);
  if (!rel.ok()) return refuse(rel.error());
  const std::string shown = module + (rel->empty() ? "" : "/" + rel.value());
  Settings set = d.settings;
  set.checksum = open->checksum;
  set.fsync = open->flags & wire::kOpenFsync;
  set.direct = adm->module->cfg.direct;  // the module's choice, never the client's
  set.rules = rules_from_open(open->flags);
  set.preserve = Preserve::from_bits(open->preserve);
  set.preserve.trusted_sender = false;  // a pushing client: no setuid/setgid bits, no devices (fs/metadata.h)
  std::optional<std::array<uint8_t, 32>> chunk_key;
  if (adm->keys) chunk_key = adm->keys->data;
  auto opts = [&](Role r) {
    SessionOptions so = session_options(set, r, t.negotiated());
    so.chunk_key = chunk_key;
    const uint32_t idle = ex->config.idle_timeout;  // 0: never
    so.idle_timeout_ms = idle ? static_cast<int>(idle * 1000) : std::numeric_limits<int>::max();
    so.max_files_open = ex->config.max_files_per_session;
    so.deleting = open->flags & wire::kOpenDelete;
    return so;
  };
  const auto t0 = std::chrono::steady_clock::now();
  Result<TransferStats> st = TransferStats{};
  const daemon::ModuleConfig& mc = adm->module->cfg;
  if (mc.is_device())
    if (Status ok = daemon::check_device_path(mc, rel.value(), *open); !ok.ok()) return refuse(ok.error());
  if (open->op == wire::Op::put) {
    auto dest = mc.is_device()
                    ? daemon::device_destination(mc, *open, open->checksum != Checksum::none || chunk_key.has_value())
                    : resolve_destination_beneath(root, rel.value(), open->flags & wire::kOpenMulti, shown,
                                                  open->flags & wire::kOpenMakeDir, open->flags & wire::kOpenDryRun);
    if (!dest.ok()) return refuse(dest.error());
    // --delete: this side prunes (a read-only module never gets here: admit()
    // refuses its puts). The client's filter rules protect what they exclude.
    if (open->flags & wire::kOpenDelete) {
      PruneOptions po;
      po.after = open->flags & wire::kOpenDeleteAfter;
      po.root = open->flags & wire::kOpenDeleteRoot;
      if (!open->filters.empty()) {
        auto fl = FilterList::from_wire(open->filters);
        if (!fl.ok()) return refuse(fl.error());
        po.filter = std::make_shared<const FilterList>(std::move(fl.value()));
      }
      dest->prune = std::move(po);
    }
    if (dest->device) log_info("{}: {}", t.peer(), in_place_warning(mc.device));
    if (auto s = ch.send(wire::OpenOk{static_cast<uint8_t>(dest->is_dir)}); !s.ok()) return refuse(s.error());
    st = run_sink(ch, dest.value(), opts(Role::sink));
  } else {
    auto files = mc.is_device() ? decltype(get_sources(root, rel.value(), *open))(stream_of(daemon::device_sources(mc)))
                                : get_sources(root, rel.value(), *open);
    if (!files.ok()) return refuse(files.error());
    if (auto s = ch.send(wire::OpenOk{0}); !s.ok()) return refuse(s.error());
    st = run_source(ch, std::move(files.value()), opts(Role::source));
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) {
    log_error("{} {} {}: {}", t.peer(), open->op == wire::Op::put ? "put" : "get", shown, st.error().message());
    drain();  // the ERROR the engine sent (a MAC failure, say) should reach the client
    return;
  }
  for (auto& e : st->errors) log_error("{}: {}", t.peer(), e);
  log_info("{} {} {}{} over {}{}{}: {} file(s) ok, {} failed, {} bytes in {:.3f} s{}", t.peer(),
           open->op == wire::Op::put ? "put" : "get", shown, open->flags & wire::kOpenDryRun ? " (dry run)" : "", t.name(), adm->keys ? " (authenticated)" : "",
           t.encrypted() ? " (encrypted)" : "", st->files_ok, st->files_failed, st->bytes, secs,
           st->files_deleted ? fmt::format(", {} deleted", st->files_deleted) : std::string());
}

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

/// A port from the command line: digits only, 1-65535.
std::optional<uint16_t> parse_port(std::string_view s) {
  if (s.empty() || s.size() > 5 || s.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  unsigned v = 0;
  for (char c : s) v = v * 10 + unsigned(c - '0');
  if (v == 0 || v > 65535) return std::nullopt;
  return static_cast<uint16_t>(v);
}

/// --listen ADDR[:PORT]: "*" (or "") for every address (TCP: IPv4 and IPv6);
/// an IPv6 address in brackets when a port follows ("[::1]:7472"), bare
/// otherwise ("::1"). Errors are whole sentences for the user.
Result<std::pair<std::string, uint16_t>> parse_listen(const std::string& v) {
  auto bad = [&](const std::string& why) { return make_error(0, "--listen '" + v + "': " + why); };
  std::string host = v, port;
  if (!v.empty() && v.front() == '[') {
    const size_t rb = v.find(']');
    if (rb == std::string::npos) return bad("unterminated '[' (an IPv6 address is written [ADDR]:PORT)");
    host = v.substr(1, rb - 1);
    if (rb + 1 < v.size()) {
      if (v[rb + 1] != ':') return bad("expected ':PORT' after ']'");
      port = v.substr(rb + 2);
      if (port.empty()) return bad("empty port after ':'");
    }
  } else if (const size_t c = v.rfind(':'); c != std::string::npos && v.find(':') == c) {
    host = v.substr(0, c);
    port = v.substr(c + 1);
    if (port.empty()) return bad("empty port after ':'");
  }
  if (host == "*") host = "";
  uint16_t p = 0;
  if (!port.empty()) {
    auto pp = parse_port(port);
    if (!pp) return bad("port '" + port + "' is not a number from 1 to 65535");
    p = *pp;
  }
  return std::make_pair(host, p);
}

CLI::Validator range(long lo, long hi) {
  return CLI::Validator([lo, hi](std::string& s) { return cli::integer_problem(s, lo, hi); }, "");
}

}  // namespace

int main(int argc, char** argv) {
  set_log_prefix("rcpd");
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
