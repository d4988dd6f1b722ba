#include "serve.h"

#include <chrono>
#include <functional>
#include <limits>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/core.h>

#include "daemon/device_module.h"
#include "daemon/glob.h"
#include "fs/filter.h"
#include "fs/path.h"
#include "fs/sources.h"
#include "session/session.h"
#include "util/log.h"

namespace rcp::rcpd {
namespace {

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
  auto v = std::make_shared<std::vector<std::pair<std::string, std::string>>>();  // (path, as shown)
  for (auto& q : paths) v->emplace_back(slashed(q), shown(q));
  return chain(v->size(), [root, v, eo](size_t i) -> SourceStream {
    auto set = expand_source(root, (*v)[i].first, (*v)[i].second, eo);
    return set.ok() ? std::move(set->files) : stream_of({failed_entry(set.error())});
  });
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
  if (open.flags & wire::kOpenRelative) {
    if (more.empty()) return make_error(EINVAL, "a --files-from OPEN without paths");
    eo.dir_alone = true;
    auto v = std::make_shared<std::vector<std::string>>(std::move(more));
    return chain(v->size(), [root, v, rel, mod, eo](size_t i) -> SourceStream {
      ExpandOptions one = eo;
      one.name = (*v)[i];
      const std::string p = rel.empty() ? (*v)[i] : rel + "/" + (*v)[i];
      auto set = expand_source(root, p, mod + "/" + p, one);
      return set.ok() ? std::move(set->files) : stream_of({failed_entry(set.error())});
    });
  }
  if (more.empty()) return expand_get(root, rel, mod, eo, open.flags & wire::kOpenContents);
  more.insert(more.begin(), rel);
  auto v = std::make_shared<std::vector<std::string>>(std::move(more));
  return chain(v->size(), [root, v, mod, eo](size_t i) -> SourceStream {
    auto s = expand_get(root, (*v)[i], mod, eo);
    return s.ok() ? std::move(s.value()) : stream_of({failed_entry(s.error())});
  });
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
void drain_sends(Transport& t) {
  std::vector<TransportEvent> ev;
  for (int i = 0; i < 100 && t.send_pending(); ++i) {
    (void)t.poll(ev);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace

void refuse_busy(Transport& t, const std::string& why) {
  Channel ch(t);
  (void)ch.receive(2000, &g_stop);
  (void)ch.send(wire::ErrorMsg{EUSERS, why});
  drain_sends(t);
}

void serve(Daemon& d, Transport& t) {
  Channel ch(t);
  const std::shared_ptr<const daemon::Exports> ex = d.current();
  auto drain = [&] { drain_sends(t); };
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

}  // namespace rcp::rcpd
