// rcp: the scp-like client. Parses the command line (lib/cli: address forms,
// client config), connects, and runs the engine as source (push) or sink
// (pull), or asks the daemon for its module list; turns every failure into
// one "rcp: WHAT: REASON" line and one exit code from lib/cli/exit_codes.h.
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <fnmatch.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fmt/core.h>
#include <optional>

#include <pwd.h>

#include "cli/number_option.h"
#include "cli/address.h"
#include "cli/client_config.h"
#include "cli/exit_codes.h"
#include "cli/module_list.h"
#include "cli/pull_batches.h"
#include "preserve_options.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/shard.h"
#include "fs/filter.h"
#include "fs/itemize.h"
#include "util/token_bucket.h"
#include "fs/path.h"
#include "fs/path_list.h"
#include "hash/digest.h"
#include "session/authenticate.h"
#include "session/config.h"
#include "session/session.h"
#include "transport/connect.h"
#include "util/cpus.h"
#include "util/log.h"
#include "util/test_faults.h"

namespace {

using namespace rcp;
namespace ec = cli::exit_code;

/// a + b, or UINT64_MAX where it would wrap (a peer's counts are any numbers).
uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

std::atomic<bool> g_cancel{false};
void on_signal(int) { g_cancel = true; }

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
cli::Report g_report;

/// The one progress line; every message goes through say() so it erases the
/// line first.
cli::ProgressReporter* g_progress = nullptr;

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
std::string words(const Error& e) {
  if (e.code == 0) return e.context;
  std::string reason = std::strerror(e.code), lc = e.context;
  for (auto& c : reason) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (auto& c : lc) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lc.find(reason) != std::string::npos ? e.context : e.message();
}

/// The code for a daemon's refusal of an OPEN: one without an errno (a
/// wildcard in the wrong place, a path it cannot use) is about the files
/// the user named, like ENOENT, so exit 3 (not 12, a broken stream).
int open_code(const Error& e) {
  if (e.code == 0 || e.code == EINVAL) return ec::kFileSelection;
  return cli::exit_code_for(e, cli::Phase::session);
}

/// Fails with the code the table gives this error in this phase.
int fail(const Error& e, cli::Phase phase, const std::string& what = "", int forced = -1) {
  if (g_cancel || e.code == ECANCELED || e.code == EINTR) {
    say("interrupted");
    return ec::kSignal;
  }
  const int code = forced >= 0 ? forced : cli::exit_code_for(e, phase);
  std::string text = words(e);
  if (code == ec::kStartProtocol && (e.code == EUSERS || e.code == EBUSY))
    text = e.context;  // the daemon's own sentence says it is full
  if (!(what.empty() || text.rfind(what, 0) == 0)) text = what + ": " + text;
  say("{}", text);
  g_report.errors.push_back(text);
  return code;
}

/// "rcp -V": version, transports compiled in, and the RDMA devices found.
void print_version() {
  std::printf("rcp %s\n", RCP_VERSION);
  std::printf("transports: rdma (rdma_cm + verbs), tcp\n");
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  std::string devs;
  for (int i = 0; list && i < n; ++i) devs += (devs.empty() ? "" : ", ") + std::string(ibv_get_device_name(list[i]));
  if (list) ibv_free_device_list(list);
  std::printf("rdma devices: %s\n", devs.empty() ? "none (copies use TCP)" : devs.c_str());
}

bool has_glob(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

/// The filter rules in the order the command line gave them (the first
/// match wins, so `--include '*/' --include '*.c' --exclude '*'` means what
/// it says); none: nullptr.
Result<std::shared_ptr<const FilterList>> filters(const CLI::App& app, const Options& o) {
  FilterList f;
  size_t ex = 0, in = 0, exf = 0, inf = 0;
  for (const CLI::Option* opt : app.parse_order()) {
    const std::string n = opt->get_name();
    if (n == "--exclude" && ex < o.excludes.size()) RCP_TRY(f.add(o.excludes[ex++], false));
    if (n == "--include" && in < o.includes.size()) RCP_TRY(f.add(o.includes[in++], true));
    if (n == "--exclude-from" && exf < o.exclude_from.size()) RCP_TRY(f.add_from_file(o.exclude_from[exf++], false, o.from0));
    if (n == "--include-from" && inf < o.include_from.size()) RCP_TRY(f.add_from_file(o.include_from[inf++], true, o.from0));
  }
  if (f.empty()) return std::shared_ptr<const FilterList>{};
  return std::make_shared<const FilterList>(std::move(f));
}

/// --shard on a push: this run's part of the --files-from list, split by
/// size (cli/shard.h shard_by_size). The whole list is read first (every run
/// must see all of it to agree on the split), with the size of BASE/PATH
/// (lstat; stat with -L); a path that cannot be looked at weighs 0 and still
/// lands in one shard, whose run reports it. Memory: the list's paths, once.
Result<std::vector<std::string>> shard_of_list(PathList& list, const std::string& base, const Options& o) {
  std::vector<cli::WeighedPath> all;
  for (;;) {
    RCP_ASSIGN(auto line, list.next());
    if (!line) break;
    struct stat st {};
    const std::string full = base + "/" + *line;
    const int rc = o.preserve.copy_links ? ::stat(full.c_str(), &st) : ::lstat(full.c_str(), &st);
    all.push_back({std::move(*line), rc == 0 && S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0});
  }
  const auto shards = cli::shard_by_size(all, o.shard->count);
  std::vector<std::string> mine;
  for (size_t i = 0; i < all.size(); ++i)
    if (shards[i] == o.shard->index) mine.push_back(std::move(all[i].path));
  if (o.verbose > 0 && !o.quiet)
    say("shard {}/{}: {} of {} listed paths (split by size)", o.shard->index, o.shard->count, mine.size(), all.size());
  return mine;
}

/// What a push sends. Every local source must exist before anything
/// connects (a typo costs no connection and no partial copy); each is then
/// walked only when its turn comes (fs/sources.h: memory stays flat). With
/// --files-from the one source is the directory the listed paths are
/// relative to, and they arrive under those paths. Skipped entries of trees
/// are warnings.
Result<SourceStream> push_sources(const std::vector<std::string>& srcs, const Options& o,
                                  std::shared_ptr<const FilterList> filter, bool& tree, bool& contents,
                                  uint64_t& total_bytes, uint64_t& total_files) {
  tree = contents = false;
  ExpandOptions eo;
  eo.recursive = o.recursive;
  eo.devices = o.copy_devices;
  eo.walk = walk_options(o.preserve);
  eo.filter = std::move(filter);
  if (!o.quiet)
    eo.on_skip = [copy_links = o.preserve.copy_links](const std::string& e) {
      say("warning: skipping '{}': {}", e,
          copy_links ? "not a regular file or directory, or a dangling or looping symlink"
                     : "not a regular file or directory (-l copies symlinks, -D devices and specials)");
    };
  if (!o.files_from.empty()) {
    if (srcs.size() != 1)
      return make_error(EINVAL, "--files-from takes one source: the directory the listed paths are relative to");
    struct stat st {};
    if (::stat(srcs[0].c_str(), &st) != 0) return sys_error("'" + srcs[0] + "'");
    if (!S_ISDIR(st.st_mode)) return make_error(ENOTDIR, "'" + srcs[0] + "' is not a directory (--files-from)");
    RCP_ASSIGN(PathList list, PathList::open(o.files_from, o.from0));
    tree = true;
    eo.dir_alone = true;
    std::function<Result<std::optional<std::string>>()> next;
    if (o.shard) {
      RCP_ASSIGN(auto mine, shard_of_list(list, srcs[0], o));
      auto v = std::make_shared<std::vector<std::string>>(std::move(mine));
      next = [v, i = size_t{0}]() mutable -> Result<std::optional<std::string>> {
        if (i == v->size()) return std::optional<std::string>{};
        return std::optional<std::string>{std::move((*v)[i++])};
      };
    } else {
      auto l = std::make_shared<PathList>(std::move(list));
      next = [l]() { return l->next(); };
    }
    struct State {
      std::function<Result<std::optional<std::string>>()> next;
      SourceStream cur;
      bool done = false;
    };
    auto st2 = std::make_shared<State>(State{std::move(next), {}, false});
    const std::string base = srcs[0];
    return SourceStream([st2, base, eo]() -> std::optional<SourceOpener> {
      for (;;) {
        if (st2->cur) {
          if (auto e = st2->cur()) return e;
          st2->cur = nullptr;
        }
        if (st2->done) return std::nullopt;
        auto line = st2->next();
        if (!line.ok()) {
          st2->done = true;
          return failed_entry(line.error());
        }
        if (!line->has_value()) return std::nullopt;
        ExpandOptions one = eo;
        one.name = **line;
        auto set = expand_source(AT_FDCWD, base + "/" + **line, **line, one);
        st2->cur = set.ok() ? std::move(set->files) : stream_of({failed_entry(set.error())});
      }
    });
  }
  std::vector<std::function<SourceStream()>> parts;
  for (const auto& s : srcs) {
    struct stat st {};
    // -l: a source naming a symlink (no trailing '/') is sent as the link,
    // which need not lead anywhere.
    const bool as_link = o.preserve.links && !o.preserve.copy_links && !s.empty() && s.back() != '/';
    if ((as_link ? ::lstat(s.c_str(), &st) : ::stat(s.c_str(), &st)) != 0) return sys_error("'" + s + "'");
    if (S_ISREG(st.st_mode)) {
      total_bytes += static_cast<uint64_t>(st.st_size);
      ++total_files;
    }
    if (S_ISDIR(st.st_mode)) {
      if (!o.recursive) return make_error(EISDIR, "'" + s + "' is a directory (use -r)");
      tree = true;
      const std::string b = base_name(s);
      // ("dir/": dir's contents, rsync's rule, as "." and "/".)
      contents = contents || b == "." || b == "/" || (s.size() > 1 && s.back() == '/');
    }
    parts.push_back([s, eo]() -> SourceStream {
      auto set = expand_source(AT_FDCWD, s, s, eo);
      return set.ok() ? std::move(set->files) : stream_of({failed_entry(set.error())});
    });
  }
  return chain(std::move(parts));
}

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

/// "[4 - 65536]" in --help reads like a type signature; the range goes into
/// the option's description instead, and a value outside it says so in words.
CLI::Validator range(long lo, long hi) {
  return CLI::Validator([lo, hi](std::string& s) { return cli::integer_problem(s, lo, hi); }, "");
}

}  // namespace

int main(int argc, char** argv) {
  set_log_prefix("rcp");
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
