#include "daemon/exports.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fmt/core.h>

#include "fs/path.h"
#include "session/authenticate.h"
#include "util/log.h"
#include "util/test_faults.h"

namespace rcp::daemon {

const Module* Exports::find(const std::string& name) const {
  auto it = modules.find(name);
  return it == modules.end() ? nullptr : it->second.get();
}

Result<DaemonConfig> config_from_exports(const std::vector<std::string>& specs) {
  DaemonConfig c;
  c.file = "--export";
  for (const auto& e : specs) {
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == e.size())
      return make_error(EINVAL, fmt::format("--export '{}': expected NAME=DIR", e));
    ModuleConfig m;
    m.name = e.substr(0, eq);
    m.path = e.substr(eq + 1);
    if (!valid_module_name(m.name)) return make_error(EINVAL, fmt::format("--export '{}': module name must be a plain name", e));
    if (c.find_module(m.name)) return make_error(EINVAL, fmt::format("--export '{}': module {} given twice", e, m.name));
    m.read_only = false;  // what --export has always meant
    c.modules.push_back(std::move(m));
  }
  return c;
}

namespace {
bool stale_temp_name(const char* n) {
  // ".<target>.rcp-" then 8 of [a-z0-9]
  const size_t len = std::strlen(n);
  if (len < 15 || n[0] != '.') return false;
  if (std::strncmp(n + len - 13, ".rcp-", 5) != 0) return false;
  for (size_t i = len - 8; i < len; ++i)
    if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9'))) return false;
  return true;
}

/// ".<target>.rcp-partial" (--partial, fs/tempfile.h) untouched for this
/// long: its client is not coming back for it.
constexpr time_t kPartialMaxAge = 7 * 24 * 3600;

bool stale_partial(const char* n, const struct stat& st) {
  const size_t len = std::strlen(n);
  constexpr size_t kTail = sizeof(".rcp-partial") - 1;
  return len > kTail + 1 && n[0] == '.' && std::strcmp(n + len - kTail, ".rcp-partial") == 0 &&
         st.st_mtime < ::time(nullptr) - kPartialMaxAge;
}

size_t clean_dir(int dfd, int depth) {
  if (depth > 64) return 0;
  int fd = ::openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return 0;
  }
  size_t n = 0;
  while (dirent* e = ::readdir(d)) {
    if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, "..")) continue;
    struct stat st {};
    if (::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISREG(st.st_mode) && (stale_temp_name(e->d_name) || stale_partial(e->d_name, st))) {
      if (::unlinkat(fd, e->d_name, 0) == 0) ++n;
    } else if (S_ISDIR(st.st_mode)) {
      int sub = ::openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) {
        n += clean_dir(sub, depth + 1);
        ::close(sub);
      }
    }
  }
  ::closedir(d);
  return n;
}
}  // namespace

size_t clean_stale_temps(int root_fd) { return clean_dir(root_fd, 0); }

Result<std::shared_ptr<const Exports>> open_exports(DaemonConfig cfg) {
  auto ex = std::make_shared<Exports>();
  for (const ModuleConfig& mc : cfg.modules) {
    auto m = std::make_shared<Module>();
    m->cfg = mc;
    if (mc.is_device()) {
      // Opened per session, by this configured path only (never one a client sends).
      struct stat st;
      if (::stat(mc.device.c_str(), &st) != 0)
        return sys_error(fmt::format("{}: module {}: device '{}'", cfg.file, mc.name, mc.device));
      if (!S_ISBLK(st.st_mode))
        return make_error(EINVAL, fmt::format("{}: module {}: '{}' is not a block device", cfg.file, mc.name, mc.device));
    } else {
      int fd = ::open(mc.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) return sys_error(fmt::format("{}: module {}: cannot open directory '{}'", cfg.file, mc.name, mc.path));
      m->root.reset(fd);
    }
    if (mc.auth_required()) {
      auto s = load_secrets(mc.secrets_file);
      if (!s.ok()) return make_error(s.error().code, fmt::format("{}: module {}: secrets_file: {}", cfg.file, mc.name,
                                                                 s.error().message()));
      m->secrets.emplace(std::move(s.value()));
    }
    ex->modules[mc.name] = std::move(m);
  }
  ex->config = std::move(cfg);
  return std::shared_ptr<const Exports>(std::move(ex));
}

Result<IpAddress> peer_address(const std::string& peer) {
  auto c = peer.rfind(':');
  std::string host = c == std::string::npos ? peer : peer.substr(0, c);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return parse_ip(host);
}

Result<Admitted> admit(Channel& ch, const Exports& ex, const std::string& peer, int timeout_ms,
                       const std::atomic<bool>* cancel) {
  RCP_ASSIGN(std::vector<uint8_t> frame, ch.receive_frame(timeout_ms, cancel));
  Admitted a;
  auto module_for = [&](const std::string& name) -> Result<std::shared_ptr<const Module>> {
    auto it = ex.modules.find(name);
    if (it == ex.modules.end()) return make_error(ENOENT, "unknown module '" + name + "'");
    auto ip = peer_address(peer);
    if (!ip.ok() || !allowed(it->second->cfg, ip.value()))
      return make_error(EACCES, fmt::format("access to module '{}' denied for host {}", name,
                                            ip.ok() ? ip->to_string() : peer));
    // Before authentication: an unencrypted session would carry the exchange in the clear.
    if (ex.config.encryption_required(it->second->cfg) && !ch.transport().encrypted())
      return make_error(ENOPROTOOPT, fmt::format("module '{}' requires encryption: use rcp --encrypt (TCP only; "
                                                 "RDMA sessions are not encrypted)", name));
    return it->second;
  };
  if (wire::is_auth_frame(frame)) {
    auto m = wire::decode_auth(frame);
    if (!m.ok()) return make_error(m.error().code, "from " + peer + ": " + m.error().context);
    auto* req = std::get_if<wire::AuthRequest>(&m.value());
    if (!req) return make_error(EPROTO, "expected AUTH_REQUEST or OPEN as the first message");
    RCP_ASSIGN(a.module, module_for(req->module));
    if (test_faults().auth_skip) {  // an impostor that pretends authentication went through
      RCP_TRY(ch.send(wire::OpenOk{0}));
      return make_error(EKEYREJECTED, "test fault auth-skip");
    }
    if (!a.module->cfg.auth_required())
      return make_error(EPROTONOSUPPORT, fmt::format("module '{}' does not use authentication", req->module));
    const std::string* secret = a.module->cfg.has_user(req->user) && a.module->secrets ? a.module->secrets->find(req->user) : nullptr;
    RCP_ASSIGN(a.keys, server_authenticate(ch, *req, secret, timeout_ms, cancel));
    RCP_ASSIGN(wire::Message next, ch.receive(timeout_ms, cancel));
    auto* open = std::get_if<wire::Open>(&next);
    if (!open) return make_error(EPROTO, "expected OPEN after authentication");
    a.open = *open;
    auto [mod, rest] = split_module(a.open.path);
    if (mod != req->module)
      return make_error(EACCES, fmt::format("authenticated for module '{}', not '{}'", req->module, mod));
  } else {
    auto m = wire::decode(frame);
    if (!m.ok()) return make_error(m.error().code, "from " + peer + ": " + m.error().context);
    auto* open = std::get_if<wire::Open>(&m.value());
    if (!open) return make_error(EPROTO, "expected OPEN as the first message");
    a.open = *open;
    // `rcp HOST:` lists modules: no module, nothing to authenticate; the
    // caller answers with the ones this peer may see.
    if (a.open.op == wire::Op::list) {
      if (ex.config.encrypt == EncryptPolicy::required && !ch.transport().encrypted())
        return make_error(ENOPROTOOPT, "this daemon requires encryption: use rcp --encrypt (TCP only)");
      return a;
    }
    auto [mod, rest] = split_module(a.open.path);
    RCP_ASSIGN(a.module, module_for(mod));
    if (a.module->cfg.auth_required())
      return make_error(EKEYREJECTED, fmt::format("module '{}' requires authentication: give USER@HOST:{}/... and "
                                                  "--password-file FILE or RCP_PASSWORD", mod, mod));
  }
  const ModuleConfig& mc = a.module->cfg;
  if (a.open.op == wire::Op::put && mc.read_only)
    return make_error(EACCES, fmt::format("module '{}' is read-only: push refused", mc.name));
  if (a.open.op == wire::Op::get && mc.write_only)
    return make_error(EACCES, fmt::format("module '{}' is write-only: pull refused", mc.name));
  return a;
}

}  // namespace rcp::daemon
