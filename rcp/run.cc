#include "run.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pwd.h>

#include <chrono>
#include <functional>
#include <optional>

#include "cli/address.h"
#include "cli/client_config.h"
#include "cli/module_list.h"
#include "cli/pull_batches.h"
#include "fs/itemize.h"
#include "fs/path.h"
#include "hash/digest.h"
#include "push_sources.h"
#include "session/authenticate.h"
#include "session/config.h"
#include "transport/connect.h"
#include "util/cpus.h"
#include "util/log.h"
#include "util/test_faults.h"

namespace rcp::client {
namespace {

/// The user's settings, as lib/session/config.h takes them.
Settings settings(const Options& o, Checksum algo) {
  Settings s;
  s.checksum = algo;
  s.chunk_size = o.chunk_kib * 1024;
  s.window = o.window;
  s.fsync = o.fsync;
  s.direct = o.direct;
  s.preserve = o.preserve;
  s.hash_threads = o.hash_threads;
  s.cpus = usable_cpus();
  s.streams = o.streams;
  s.rules = o.rules;
  s.bwlimit = o.bwlimit_bytes;
  s.io_timeout_s = o.io_timeout;
  s.cancel = &g_cancel;
  return s;
}

/// -4 / -6: the host as a numeric address of that family, so both rdma_cm
/// and TCP connect to exactly it.
Result<std::string> pick_family(const std::string& host, const Options& o) {
  if (!o.ipv4 && !o.ipv6) return host;
  addrinfo hints{};
  hints.ai_family = o.ipv4 ? AF_INET : AF_INET6;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int gai = ::getaddrinfo(host.c_str(), nullptr, &hints, &res); gai != 0)
    return make_error(0, fmt::format("cannot resolve host '{}' to an {} address: {}", host, o.ipv4 ? "IPv4" : "IPv6",
                                     gai_strerror(gai)));
  char buf[NI_MAXHOST];
  int rc = ::getnameinfo(res->ai_addr, res->ai_addrlen, buf, sizeof buf, nullptr, 0, NI_NUMERICHOST);
  ::freeaddrinfo(res);
  if (rc != 0) return make_error(0, fmt::format("cannot resolve host '{}': {}", host, gai_strerror(rc)));
  return std::string(buf);
}

struct Run {
  const Options& o;
  Checksum algo;
  Settings set;
  ConnectOptions co;
  std::string host;     ///< as connected to (numeric with -4/-6)
  std::string shown_host;
  bool noted = false;   ///< the fallback note was printed
  std::string carried_by;
  /// The progress hook each session's options get (unset: no progress line).
  std::function<void(uint64_t, uint32_t, std::string_view)> on_progress;
  /// The totals hook (WALK_TOTALS): unset when the totals are known before
  /// the copy (a push of named files) or there is no progress line.
  std::function<void(uint64_t, uint64_t, bool)> on_totals;
  /// -i / -n: one line per entry changed (or that would be), deletions included.
  std::function<void(std::string_view, unsigned, uint16_t, bool)> on_item;
  std::string secret;        ///< --password-file, the host's password_file or $RCP_PASSWORD; "" = none
  std::string default_user;  ///< when the address names none: the config's, else the login name

  /// With a secret: proves it as USER (USER@HOST, else default_user) for the
  /// address's module and checks the daemon's proof (session/authenticate.h);
  /// the session's chunk digests are then keyed. Without one: nothing (a
  /// daemon whose module wants authentication refuses the OPEN).
  Result<std::optional<std::array<uint8_t, 32>>> authenticate(Channel& ch, const cli::Address& a) {
    if (secret.empty()) return std::optional<std::array<uint8_t, 32>>{};
    const std::string& user = a.user.empty() ? default_user : a.user;
    // Test-only fault switch: authenticate for another module than the one
    // opened next (a lying client; rcpd must refuse the OPEN).
    const std::string& module = test_faults().auth_module.empty() ? a.module : test_faults().auth_module;
    RCP_ASSIGN(auth::SessionKeys keys,
               client_authenticate(ch, user, module,
                                   {reinterpret_cast<const uint8_t*>(secret.data()), secret.size()}, 30000, &g_cancel));
    return std::optional<std::array<uint8_t, 32>>{keys.data};
  }

  /// A session's rails into the report, before its transport goes. In a
  /// push rcpd reads and reports its per-rail counts (RAIL_STATS); they are
  /// used only when they add up to no more than the `offered` bytes this
  /// side's source put up for reading (re-fetches included): a lying
  /// daemon's numbers are refused, with a warning. nullopt (a pull, or a
  /// push that failed): the daemon's numbers are not used.
  static void note_rails(const Transport& t, std::optional<uint64_t> offered) {
    const auto stats = t.rail_stats();
    uint64_t claimed = 0;
    for (const RailStat& x : stats) {
      claimed = sat_add(claimed, x.peer_bytes);
    }
    bool use_peer = offered.has_value();
    if (use_peer && claimed > *offered) {
      say("warning: {} reported reading {} bytes over its rails, more than the {} bytes this copy offered: its "
          "per-rail counts are not used",
          t.peer(), claimed, *offered);
      use_peer = false;
    }
    std::vector<cli::RailReport> v;
    for (const RailStat& x : stats) {
      cli::RailReport r;
      r.device = x.device;
      r.peer = x.peer;
      r.port = x.port;
      r.gid_index = x.gid_index;
      r.gid = x.gid;
      r.gid_type = x.gid_type;
      r.local = x.local;
      r.bytes = use_peer ? sat_add(x.bytes, x.peer_bytes) : x.bytes;
      r.chunks = use_peer ? sat_add(x.chunks, x.peer_chunks) : x.chunks;
      r.failed = x.failed;
      v.push_back(std::move(r));
    }
    cli::add_rails(g_report, v);
  }

  Result<std::unique_ptr<Transport>> open_session() {
    std::string note;
    auto t = connect_transport(host, co, note);
    if (!t.ok()) return t.error();
    if (!note.empty() && o.verbose > 0 && !noted) {
      say("{}", note);
      noted = true;
    }
    auto& tr = *t.value();
    if (!(tr.negotiated().checksums & (1u << static_cast<int>(algo))))
      return make_error(EPROTONOSUPPORT, fmt::format("{} does not support checksum {}", shown_host, checksum_name(algo)));
    carried_by = tr.name();
    cli::set_transport(g_report, carried_by);
    log_info("connected to {} over {}", tr.peer(), tr.describe());
    // -v: the path each rail took (what --bind and --device force).
    const auto rails = tr.rail_stats();
    for (size_t i = 0; i < rails.size(); ++i) {
      const RailStat& x = rails[i];
      std::string gid = x.gid_index < 0 ? "no GRH" : fmt::format("GID index {} {}", x.gid_index, x.gid);
      if (!x.gid_type.empty()) gid += " (" + x.gid_type + ")";
      if (x.port == 0)  // (every joined queue pair has its port)
        log_info("rail {}: device {}, not used -> {}: {}", i, x.device, x.peer, x.failed);
      else
        log_info("rail {}: device {} port {}, {}, {} -> {}", i, x.device, x.port, gid, x.local, x.peer);
    }
    return t;
  }

  /// Sends OPEN and reads the daemon's answer: OPEN_OK, MODULE_LIST or ERROR.
  Result<wire::Message> open(Channel& ch, wire::Open msg, int timeout_ms) {
    msg.checksum = algo;
    msg.preserve = o.preserve.bits();
    // Test-only fault switch: after authenticating, anything but OPEN (a lying client).
    if (test_faults().auth_then_done && !secret.empty())
      RCP_TRY(ch.send(wire::Done{}));
    else
      RCP_TRY(ch.send(msg));
    auto m = ch.receive(timeout_ms, &g_cancel);
    if (!m.ok()) {
      // The daemon's refusal comes back as "PEER: why"; the message already
      // names the remote path, so the peer's address is noise there.
      Error e = m.error();
      const std::string peer = ch.transport().peer() + ": ";
      if (e.context.rfind(peer, 0) == 0) e.context.erase(0, peer.size());
      return e;
    }
    return m;
  }
};

int list_modules(Run& r, const cli::Address& a) {
  auto t = r.open_session();
  if (!t.ok()) return fail(t.error(), cli::Phase::connect, cli::to_string(a));
  Channel ch(*t.value());
  auto m = r.open(ch, wire::Open{wire::Op::list, r.algo, 0, ""}, 10000);
  if (!m.ok()) {
    if (m.error().code == EPROTO) return fail(make_error(EPROTONOSUPPORT, "the daemon does not list its modules (an older rcpd?)"), cli::Phase::session, cli::to_string(a));
    return fail(m.error(), cli::Phase::session, cli::to_string(a));
  }
  auto* l = std::get_if<wire::ModuleList>(&m.value());
  if (!l) return fail(make_error(EPROTO, "unexpected answer to a module listing"), cli::Phase::session, cli::to_string(a));
  std::vector<cli::ModuleEntry> mods;
  for (auto& e : l->modules) mods.push_back({e.name, e.comment});
  const std::string out = cli::format_module_list(mods);
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (l->truncated && !r.o.quiet) say("warning: the daemon has more modules than one listing holds");
  return ec::kOk;
}

}  // namespace

int run(const Options& o, const CLI::App& app) {
  auto algo = parse_checksum(o.checksum);
  if (!algo) {
    say("unknown digest '{}' (xxh128, sha256, none)", o.checksum);
    return ec::kUsage;
  }
  if (o.args.empty()) {
    say("no files given; usage: rcp [OPTIONS] SRC... DEST (rcp --help)");
    return ec::kUsage;
  }
  std::vector<cli::Address> addrs;
  addrs.reserve(o.args.size());  // (10,000 files named: regrowing this vector cost 5 ms)
  for (auto& s : o.args) {
    auto a = cli::parse_address(s);
    if (!a.ok()) {
      say("{}", a.error().message());
      return ec::kUsage;
    }
    addrs.push_back(std::move(a.value()));
  }
  const bool listing = addrs.size() == 1 && addrs[0].is_remote && addrs[0].list_modules;
  if (!listing && addrs.size() < 2) {
    say("'{}': a copy needs a source and a destination (rcp SRC... DEST; rcp HOST: lists modules)", o.args[0]);
    return ec::kUsage;
  }
  // "HOST:" names a daemon, not a file: only alone (the listing) does it mean anything.
  if (!listing)
    for (size_t i = 0; i < addrs.size(); ++i)
      if (addrs[i].list_modules) {
        say("'{}': no module given; a remote path is HOST:MODULE/PATH (alone, 'rcp HOST:' lists the modules)",
            o.args[i]);
        return ec::kUsage;
      }

  const cli::Address& dst = addrs.back();
  size_t nremote = 0;
  for (size_t i = 0; i + 1 < addrs.size(); ++i) nremote += addrs[i].is_remote;
  const bool push = !listing && dst.is_remote;
  if (!listing) {
    if (push && nremote > 0) {
      say("copies between two remote hosts are not supported; one side must be local");
      return ec::kUsage;
    }
    if (!push && nremote != addrs.size() - 1) {
      say("{}", nremote == 0 ? "neither side is remote (HOST:MODULE/PATH); use cp for local copies"
                             : "all sources of a pull must be remote");
      return ec::kUsage;
    }
  }
  const cli::Address& remote = listing ? addrs[0] : push ? dst : addrs[0];
  if (!push && !listing)
    for (size_t i = 0; i + 1 < addrs.size(); ++i)
      if (addrs[i].host != remote.host || addrs[i].port != remote.port || addrs[i].user != remote.user) {
        say("all sources of a pull must be on one host ('{}' and '{}')", o.args[0], o.args[i]);
        return ec::kUsage;
      }

  // Client config: applied only where the command line said nothing.
  Options eff = o;
  auto cfg = cli::load_client_config(cli::default_client_config_paths());
  if (!cfg.ok()) {
    say("{}", cfg.error().message());
    return ec::kUsage;
  }
  const cli::ClientDefaults d = cfg->for_host(remote.host);
  if (app.count("--transport") == 0 && d.transport) eff.transport = *d.transport;
  if (app.count("--port") == 0 && d.port) eff.rdma_port = *d.port;
  if (app.count("--tcp-port") == 0 && d.tcp_port) eff.tcp_port = *d.tcp_port;
  if (app.count("--streams") == 0 && d.streams) eff.streams = *d.streams;
  if (app.count("--encrypt") == 0 && d.encrypt) eff.encrypt = *d.encrypt;
  Run r{eff, *algo, settings(eff, *algo), {}, {}, cli::to_string(remote)};
  if (app.count("--password-file") == 0 && d.password_file) eff.password_file = *d.password_file;
  auto secret = client_secret(eff.password_file);
  if (!secret.ok()) {
    say("{}", secret.error().message());
    return ec::kAuth;
  }
  r.secret = std::move(secret.value());
  if (d.user) {
    r.default_user = *d.user;
  } else if (const char* u = std::getenv("USER")) {
    r.default_user = u;
  } else if (passwd* pw = ::getpwuid(::getuid())) {
    r.default_user = pw->pw_name;
  }
  if (!parse_transport(eff.transport, r.co.kind)) {
    say("unknown transport '{}' (auto, rdma, tcp)", eff.transport);
    return ec::kUsage;
  }
  // rcp://HOST:PORT names the port of the transport in use: with --transport
  // tcp the TCP port, with rdma the rdma_cm port, with auto the TCP port and
  // PORT - 1 for rdma_cm — the pair `rcpd --listen ADDR:PORT` opens
  // (7472/7471 by default). -P and --tcp-port still win.
  if (remote.port != 0) {
    if (r.co.kind == TransportKind::rdma) {
      if (app.count("--port") == 0) eff.rdma_port = remote.port;
    } else {
      if (app.count("--tcp-port") == 0) eff.tcp_port = remote.port;
      if (app.count("--port") == 0 && r.co.kind == TransportKind::automatic)
        eff.rdma_port = static_cast<uint16_t>(remote.port > 1 ? remote.port - 1 : 1);
    }
  }
  r.co.rdma_port = eff.rdma_port;
  r.co.tcp_port = eff.tcp_port;
  r.co.zerocopy = !eff.no_zerocopy;
  r.co.encrypt = eff.encrypt;
  if (eff.encrypt && r.co.kind == TransportKind::rdma) {
    say("--encrypt needs TCP: RDMA sessions are not encrypted (use --transport tcp or auto)");
    return ec::kUsage;
  }
  r.co.timeout_ms = static_cast<int>(o.con_timeout * 1000);
  r.co = connect_options(r.set, r.co);
  if (!o.rails.empty()) {
    auto rails = parse_rails_option(o.rails);
    if (!rails.ok()) {
      say("{}", rails.error().context);
      return ec::kUsage;
    }
    if (r.co.kind == TransportKind::tcp || eff.encrypt) {
      say("--rails needs RDMA (not --transport tcp or --encrypt)");
      return ec::kUsage;
    }
    r.co.rails = rails.value();
  }
  if (!o.device.empty()) {
    if (r.co.kind == TransportKind::tcp || eff.encrypt) {
      say("--device needs RDMA (not --transport tcp or --encrypt)");
      return ec::kUsage;
    }
    if (o.device.size() > kMaxRailDeviceName ||
        o.device.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != std::string::npos) {
      say("--device: '{}' is not an RDMA device name", o.device);
      return ec::kUsage;
    }
    r.co.device = o.device;
  }
  r.co.bind = o.bind;
  r.shown_host = remote.host;

  // Progress: on a terminal unless -q or --no-progress (or progress = false
  // in the config); --progress forces it.
  cli::ProgressReporter::Mode mode = cli::ProgressReporter::Mode::auto_tty;
  if (o.progress) mode = cli::ProgressReporter::Mode::always;
  else if (o.quiet || o.no_progress || (d.progress && !*d.progress)) mode = cli::ProgressReporter::Mode::never;
  cli::ProgressReporter progress(STDERR_FILENO, listing ? cli::ProgressReporter::Mode::never : mode);
  g_progress = &progress;
  struct Reset {
    ~Reset() { g_progress = nullptr; }
  } reset;
  // A pull of several sessions adds up: done and totals of the sessions
  // already finished, plus the current one's; its totals are final only when
  // it is the last session.
  struct Sums {
    uint64_t bytes = 0, files = 0, total_bytes = 0, total_files = 0;
  } base, cur;
  bool last_session = true;
  auto sat = [](uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; };
  if (progress.enabled()) {
    r.on_progress = [&](uint64_t b, uint32_t f, std::string_view name) {
      cur.bytes = b;
      cur.files = f;
      progress.update(sat(base.bytes, b), sat(base.files, f), name);
    };
    r.on_totals = [&](uint64_t files, uint64_t bytes, bool final) {
      cur.total_bytes = bytes;
      cur.total_files = files;
      progress.set_totals(sat(base.total_bytes, bytes), sat(base.total_files, files), final && last_session);
    };
  }

  // -i: rsync's itemized lines; -n alone: the names, as rsync -nv lists
  // them. On stdout, as rsync's, unless --json owns stdout (then stderr).
  if (o.itemize || o.rules.dry_run) {
    FILE* out = o.json ? stderr : stdout;
    r.on_item = [&progress, &o, out, push](std::string_view name, unsigned type, uint16_t changes, bool deleted) {
      const std::string n(name);
      std::string line;
      if (o.itemize)
        line = deleted ? itemize_deleted(n, type == S_IFDIR) : itemize_line(changes, type, n, push);
      else if (!o.quiet)
        line = deleted ? "deleting " + n + (type == S_IFDIR ? "/" : "") : n + (type == S_IFDIR ? "/" : "");
      if (line.empty()) return;
      progress.clear();
      std::fprintf(out, "%s\n", line.c_str());
      std::fflush(out);
    };
  }

  // Everything local is checked before anything connects.
  auto filter = filters(app, eff);
  if (!filter.ok()) return fail(filter.error(), cli::Phase::local, "", ec::kUsage);
  if (o.del_after) eff.del = true;
  if (eff.del && !o.recursive && o.files_from.empty()) {
    say("--delete needs -r (it prunes the directories a recursive copy sends)");
    return ec::kUsage;
  }
  std::vector<std::string> rules = filter.value() ? filter.value()->wire() : std::vector<std::string>{};
  uint16_t del_flags = (eff.del ? wire::kOpenDelete : 0) | (o.del_after ? wire::kOpenDeleteAfter : 0);
  bool tree = false, contents = false;
  uint64_t total_bytes = 0, total_files = 0;
  SourceStream files;
  std::optional<Destination> dest;
  std::vector<std::string> srcs(o.args.begin(), o.args.end() - 1);
  if (push) {
    auto f = push_sources(srcs, eff, filter.value(), tree, contents, total_bytes, total_files);
    if (!f.ok()) return fail(f.error(), cli::Phase::local);
    files = std::move(f.value());
    if (!tree) {  // named files: known now, final
      progress.set_totals(total_bytes, total_files);
      r.on_totals = nullptr;
    }
  } else if (!listing) {
    if (!o.files_from.empty() && srcs.size() != 1) {
      say("--files-from takes one source: the directory the listed paths are relative to");
      return ec::kUsage;
    }
    bool multi = srcs.size() > 1 || o.recursive || !o.files_from.empty();
    for (size_t i = 0; i + 1 < addrs.size(); ++i) multi = multi || has_glob(addrs[i].path);
    // -r, several sources or "DEST/": a directory, made with its parents when missing.
    const bool to_dir = multi || (o.args.back().size() > 1 && o.args.back().back() == '/');
    auto dd = resolve_destination_local(o.args.back(), multi, LocalDeviceOptions{o.write_devices, o.force}, to_dir,
                                        o.rules.dry_run);
    if (!dd.ok()) return fail(dd.error(), cli::Phase::local);
    dest.emplace(std::move(dd.value()));
    if (dest->device) {
      // In place, so nothing unverified may reach it: every chunk is checked before it is written.
      if (*algo == Checksum::none && r.secret.empty()) {
        say("'{}' is a block device written in place: --digest none is refused (every chunk is verified "
            "before it is written)", o.args.back());
        return ec::kUsage;
      }
      if (!o.quiet) say("{}", in_place_warning(o.args.back()));
    }
  }

  auto h = pick_family(remote.host, o);
  if (!h.ok()) return fail(h.error(), cli::Phase::connect);
  r.host = h.value();
  if (listing) return list_modules(r, remote);

  const auto t0 = std::chrono::steady_clock::now();
  TransferStats total;
  int fatal = ec::kOk;
  if (push) {
    // A tree needs a directory to land in, as several files do.
    // A directory destination (-r of a tree, several sources, "DEST/") is made when missing.
    const bool to_dir = srcs.size() > 1 || tree || dst.trailing_slash;
    const uint16_t flags = (srcs.size() > 1 || tree ? wire::kOpenMulti : 0) | (o.fsync ? wire::kOpenFsync : 0) |
                           open_flags(o.rules) | del_flags | (eff.del && contents ? wire::kOpenDeleteRoot : 0) |
                           (to_dir ? wire::kOpenMakeDir : 0);
    wire::Open msg{wire::Op::put, *algo, flags, dst.module_path(), {}, rules};
    if (wire::open_size(msg) > wire::kOpenBudget) {
      say("the filter rules take {} bytes, more than one OPEN holds ({}): use fewer or shorter rules",
          wire::open_size(msg), wire::kOpenBudget);
      return ec::kUsage;
    }
    auto t = r.open_session();
    if (!t.ok()) return fail(t.error(), cli::Phase::connect);
    Channel ch(*t.value());
    SessionOptions so = session_options(r.set, Role::source, t.value()->negotiated());
    so.on_progress = r.on_progress;
    so.on_totals = r.on_totals;
    so.on_item = r.on_item;
    so.deleting = eff.del;
    auto key = r.authenticate(ch, dst);
    if (!key.ok()) return fail(key.error(), cli::Phase::session, cli::to_string(dst));
    so.chunk_key = key.value();
    auto ok = r.open(ch, msg, so.idle_timeout_ms);
    if (!ok.ok()) return fail(ok.error(), cli::Phase::session, cli::to_string(dst), open_code(ok.error()));
    auto st = run_source(ch, std::move(files), so);
    Run::note_rails(*t.value(), st.ok() ? std::optional<uint64_t>(st->bytes_pulled) : std::nullopt);
    if (!st.ok()) return fail(st.error(), cli::Phase::session);
    total = std::move(st.value());
  } else {
    const uint16_t flags = (o.fsync ? wire::kOpenFsync : 0) | (o.recursive ? wire::kOpenRecursive : 0) | del_flags | open_flags(o.rules);
    auto batches = cli::pull_batches(addrs, o.files_from, o.from0, o.recursive, flags, rules, o.shard);
    if (!batches.ok()) return fail(batches.error(), cli::Phase::local, "", ec::kUsage);
    for (;;) {
      auto b = batches.value().next();
      if (!b.ok()) return fail(b.error(), cli::Phase::local, "", ec::kFileSelection);
      if (!b->has_value()) break;
      cli::PullBatch& batch = **b;
      const cli::Address& a = *batch.addr;
      auto t = r.open_session();
      if (!t.ok()) return fail(t.error(), cli::Phase::connect);
      Channel ch(*t.value());
      SessionOptions so = session_options(r.set, Role::sink, t.value()->negotiated());
      so.on_progress = r.on_progress;
      so.on_totals = r.on_totals;
      so.on_item = r.on_item;
      last_session = !batches.value().may_have_more();
      // Only what was asked for may arrive: each requested path's own name
      // (with --files-from the listed paths), and with -r the names below.
      dest->expect = batch.expect;
      if (eff.del && dest->is_dir)
        dest->prune = PruneOptions{o.del_after, batch.root_contents, filter.value()};
      auto key = r.authenticate(ch, a);
      if (!key.ok()) return fail(key.error(), cli::Phase::session, cli::to_string(a));
      so.chunk_key = key.value();
      auto ok = r.open(ch, batch.open, so.idle_timeout_ms);
      if (!ok.ok()) {
        // One source the daemon refused: the others still go (as scp does).
        if (g_cancel) return fail(ok.error(), cli::Phase::session);
        const int code = open_code(ok.error());
        if (code != ec::kFileSelection) return fail(ok.error(), cli::Phase::session, cli::to_string(a));
        say("{}: {}", cli::to_string(a), words(ok.error()));
        g_report.errors.push_back(cli::to_string(a) + ": " + words(ok.error()));
        fatal = cli::worst(fatal, code);
        continue;
      }
      auto st = run_sink(ch, *dest, so);
      Run::note_rails(*t.value(), std::nullopt);
      if (!st.ok()) return fail(st.error(), cli::Phase::session);
      total.bytes += st->bytes;
      total.files_ok += st->files_ok;
      total.dirs_ok += st->dirs_ok;
      total.files_failed += st->files_failed;
      total.files_vanished += st->files_vanished;
      total.files_skipped += st->files_skipped;
      total.bytes_pulled += st->bytes_pulled;
      total.bytes_matched += st->bytes_matched;
      total.files_deleted += st->files_deleted;
      base = {sat(base.bytes, cur.bytes), sat(base.files, cur.files), sat(base.total_bytes, cur.total_bytes),
              sat(base.total_files, cur.total_files)};
      cur = {};
      for (auto& e : st->errors) total.note_error(e);
      total.errors_dropped += st->errors_dropped;
    }
  }
  progress.finish();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (o.verbose > 0 && !o.quiet && total.files_deleted > 0)
    say("deleted {} entr{} at the destination", total.files_deleted, total.files_deleted == 1 ? "y" : "ies");
  if (o.verbose > 0 && !o.quiet) {
    const uint32_t nfiles = total.files_ok - total.dirs_ok;
    std::string dirs = total.dirs_ok ? fmt::format(" and {} director{}", total.dirs_ok, total.dirs_ok == 1 ? "y" : "ies") : "";
    say("{}: {} file{}{}, {} bytes in {:.3f} s, {:.1f} MB/s, checksum {}", r.carried_by, nfiles, nfiles == 1 ? "" : "s",
        dirs, total.bytes, secs, secs > 0 ? static_cast<double>(total.bytes) / secs / 1e6 : 0.0, checksum_name(*algo));
  }
  for (const cli::RailReport& x : g_report.rails) {
    if (!x.failed.empty() && x.port == 0)
      say("rail {} to {} not used: {}", x.device, x.peer, x.failed);
    else if (!x.failed.empty())
      say("rail {} to {} failed during the copy: {}", x.device, x.peer, x.failed);
    else if (o.verbose > 0 && !o.quiet && g_report.rails.size() > 1)
      say("rail {} to {}: {} bytes read in {} chunks", x.device, x.peer, x.bytes, x.chunks);
  }
  for (const auto& e : total.errors) say("{}", e);
  if (total.errors_dropped > 0) say("... and {} more failed file(s), not listed", total.errors_dropped);
  g_report.files_total = total.files_ok + total.files_failed;
  g_report.files_transferred = total.files_ok - total.dirs_ok - total.files_skipped;
  g_report.files_skipped = total.files_skipped;
  g_report.files_deleted = total.files_deleted;
  g_report.files_failed = total.files_failed;
  g_report.bytes_total = total.bytes;
  g_report.bytes_transferred = total.bytes_pulled;
  g_report.bytes_matched = total.bytes_matched;
  g_report.errors.insert(g_report.errors.end(), total.errors.begin(), total.errors.end());
  g_report.errors_dropped = total.errors_dropped;
  return cli::worst(fatal, cli::transfer_exit_code(total.files_failed, total.files_vanished));
}

}  // namespace rcp::client
