/// rcpd's configuration file (/etc/rcpd.conf, TOML; see rcpd.conf(5)) parsed
/// into one struct. Every key is checked: an unknown key, a value of the wrong
/// type or out of range, a missing required key, or a malformed file is an
/// Error (EINVAL) whose context reads "FILE:LINE: KEY: what is wrong", so the
/// daemon can print it as is and refuse to start (or, on SIGHUP, keep the
/// configuration it has). Parsing is pure: nothing is opened but the file
/// itself, paths are not checked for existence (the daemon does that when it
/// starts), secrets files are not read here (see daemon/secrets.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/access.h"
#include "session/config.h"
#include "util/result.h"

namespace rcp::daemon {

/// Which transports the daemon listens on.
enum class TransportChoice { auto_, rdma, tcp };

/// `[daemon] encrypt`: whether TCP clients may (allowed), must (required) or
/// cannot (never) use TLS. RDMA sessions are never encrypted.
enum class EncryptPolicy { never, allowed, required };

/// One exported directory (or block device), `[modules.NAME]`.
struct ModuleConfig {
  std::string name;
  std::string path;                ///< absolute; required unless `device` is given
  std::string device;              ///< absolute path of a block device exported instead of a directory
  bool direct = false;             ///< O_DIRECT reads and writes of the module's data (io/direct.h)
  std::string comment;             ///< shown to clients that list modules
  bool read_only = true;           ///< refuse pushes (the default: exporting is read-only unless said otherwise)
  bool write_only = false;         ///< refuse pulls
  bool list = true;                ///< show the module when a client lists modules
  HostRules hosts;                 ///< hosts_allow (absent = everyone) and hosts_deny
  std::vector<std::string> auth_users;  ///< empty = no authentication for this module
  std::string secrets_file;        ///< required with auth_users, refused without
  uint32_t max_connections = 0;    ///< 0 = only the daemon-wide limit applies
  bool encrypt = false;            ///< refuse sessions that are not encrypted (TLS over TCP)
  bool auth_required() const { return !auth_users.empty(); }
  bool is_device() const { return !device.empty(); }
  bool has_user(std::string_view user) const;
};

/// The whole file. Defaults are the values an absent key takes.
struct DaemonConfig {
  std::string file;  ///< where it was read from (for messages)
  std::vector<std::string> listen = {"0.0.0.0", "::"};  ///< literal addresses; both families by default
  uint16_t port = 7471;             ///< rdma_cm
  uint16_t tcp_port = 7472;         ///< TCP
  TransportChoice transport = TransportChoice::auto_;
  std::string user;                 ///< started as root: drop to this user after binding (empty = stay)
  std::string group;                ///< and this group (empty = the user's primary group)
  uint32_t max_connections = 64;    ///< every connection, joined streams and QPs included
  uint32_t max_per_host = 8;        ///< connections from one address (default: 8, or max_connections if smaller)
  uint32_t max_files_per_session = 64;  ///< files one session may hold open at once
  uint32_t hello_timeout = 10;      ///< seconds for a whole hello (and the authentication exchange)
  uint32_t idle_timeout = 600;      ///< seconds without progress before a session is dropped; 0 = never
  uint32_t hash_threads = kHashThreadsAuto;  ///< as rcpd --hash-threads
  std::string pid_file;             ///< empty = none
  EncryptPolicy encrypt = EncryptPolicy::allowed;  ///< TLS offered to TCP clients (set at start)
  std::vector<ModuleConfig> modules;  ///< in file order; may be empty (then nothing is served)

  const ModuleConfig* find_module(std::string_view name) const;
  /// Whether sessions for `m` must be encrypted (the module's or the daemon's rule).
  bool encryption_required(const ModuleConfig& m) const { return m.encrypt || encrypt == EncryptPolicy::required; }
};

/// Whether a peer may use a module: host_allowed() with the module's rules.
inline bool allowed(const ModuleConfig& module, const IpAddress& peer) { return host_allowed(module.hosts, peer); }

/// Limits applied before the TOML parser sees anything.
constexpr size_t kMaxConfigBytes = 1 << 20;
constexpr size_t kMaxModuleName = 64;
constexpr size_t kMaxUserName = 64;

/// A module name: 1 to 64 of [A-Za-z0-9_.-], not starting with '.' or '-'
/// (it is the first component of every path a client sends).
bool valid_module_name(std::string_view name);
/// A user name in auth_users and secrets files: 1 to 64 of [A-Za-z0-9_.@-],
/// not starting with '-' (no ':' — the secrets file separator — no blanks).
bool valid_user_name(std::string_view name);

/// Parses the text of a configuration file; filename is only used in messages.
Result<DaemonConfig> parse_config_string(std::string_view text, std::string_view filename);
/// Reads (at most kMaxConfigBytes) and parses a configuration file.
Result<DaemonConfig> load_config(const std::string& path);

}  // namespace rcp::daemon
