/// What rcpd serves, built from a DaemonConfig (rcpd.conf(5)) or from
/// `--export NAME=DIR` options: each module's directory opened, its secrets
/// loaded (ownership and mode checked by load_secrets). An Exports is never
/// changed once built; SIGHUP builds a new one from the re-read file and
/// swaps it in, while sessions already running keep the one they started with
/// (shared_ptr), so a reload never drops a copy.
///
/// admit() is the one decision a connection goes through before its OPEN is
/// acted on: the module, the host rules, authentication (session/authenticate)
/// when the module lists auth_users, and read_only / write_only.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "auth/handshake.h"
#include "daemon/access.h"
#include "daemon/config.h"
#include "daemon/secrets.h"
#include "session/channel.h"
#include "util/fd.h"
#include "util/result.h"
#include "wire/messages.h"

namespace rcp::daemon {

struct Module {
  ModuleConfig cfg;
  Fd root;                          ///< the directory, O_DIRECTORY
  std::optional<Secrets> secrets;   ///< loaded when cfg.auth_required()
};

struct Exports {
  DaemonConfig config;
  std::map<std::string, std::shared_ptr<const Module>> modules;
  const Module* find(const std::string& name) const;
};

/// Modules from `--export NAME=DIR` options: read-write, no authentication,
/// every host (for quick local use; rcpd says so on stderr).
Result<DaemonConfig> config_from_exports(const std::vector<std::string>& specs);

/// Opens every module's directory and loads its secrets. Errors name the
/// module and the path.
Result<std::shared_ptr<const Exports>> open_exports(DaemonConfig cfg);

/// Removes stale temp files (".NAME.rcp-XXXXXXXX", lib/fs/tempfile) below a
/// module's directory, left by a daemon that was killed mid-copy; symlinks
/// are not followed; and --partial files (".NAME.rcp-partial") not written
/// to for 7 days. Returns how many were removed.
size_t clean_stale_temps(int root_fd);

/// The peer's address from Transport::peer() ("host:port", IPv6 unbracketed).
Result<IpAddress> peer_address(const std::string& peer);

/// A connection allowed to go on: the module, the OPEN to act on, and the
/// session's keys when it authenticated.
struct Admitted {
  std::shared_ptr<const Module> module;
  wire::Open open;
  std::optional<auth::SessionKeys> keys;
};

/// Reads the first message (AUTH_REQUEST or OPEN), and refuses (the error is
/// for the caller to send to the client and log): an unknown module (ENOENT),
/// a host the module's rules refuse (EACCES), a session that is not
/// encrypted for a module (or daemon) that requires it (ENOPROTOOPT), an OPEN without authentication
/// for a module with auth_users, or a failed authentication (EKEYREJECTED), a
/// push to a read_only module or a pull from a write_only one (EACCES).
Result<Admitted> admit(Channel& ch, const Exports& ex, const std::string& peer, int timeout_ms,
                       const std::atomic<bool>* cancel);

}  // namespace rcp::daemon
