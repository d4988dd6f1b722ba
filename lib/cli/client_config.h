/// Client defaults from TOML, so a nightly job or a user's habit does not
/// have to repeat ports, transport, streams or a password file on every
/// command line. Two files, both optional:
///
///   ~/.config/rcp/config.toml   ($XDG_CONFIG_HOME/rcp/config.toml when set)
///   /etc/rcp/config.toml
///
/// The user's file wins key by key over the system's; the command line wins
/// over both. Top-level keys apply to every host; a [hosts."NAME"] table
/// overrides them for the host written exactly so on the command line
/// (case-insensitive; an IPv6 host without brackets):
///
///   transport = "auto"            # auto | rdma | tcp
///   port = 7471                   # rdma_cm port, 1-65535
///   tcp_port = 7472               # TCP port, 1-65535
///   streams = 2                   # 1-16
///   progress = true               # progress line on a terminal
///   encrypt = false               # as --encrypt (TLS 1.3 over TCP)
///
///   [hosts."backup-host"]
///   port = 17471
///   user = "backup"               # as USER@ on the command line
///   password_file = "~/.config/rcp/backup.pw"   # "~/" = $HOME; relative = next to this file
///
/// A mistake is an error that names the file, line and key
/// ("/etc/rcp/config.toml:3:1: unknown key 'prot' (known: ...)"), never a
/// silently ignored line: a typo in a backup job's config must not change
/// where the data goes without a word.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.h"

namespace rcp::cli {

/// One set of defaults; unset = not configured (use the next level down).
struct ClientDefaults {
  std::optional<std::string> transport;
  std::optional<uint16_t> port;
  std::optional<uint16_t> tcp_port;
  std::optional<uint32_t> streams;
  std::optional<bool> progress;
  std::optional<bool> encrypt;
  std::optional<std::string> user;
  std::optional<std::string> password_file;  ///< absolute after loading

  /// Copies every key set in `over` onto this.
  void merge(const ClientDefaults& over);
};

struct ClientConfig {
  ClientDefaults all;                                      ///< top-level keys
  std::vector<std::pair<std::string, ClientDefaults>> hosts;  ///< [hosts."NAME"], in file order
  std::vector<std::string> files;                          ///< the files read, in load order

  /// The defaults for one host: top level, then that host's table.
  ClientDefaults for_host(std::string_view host) const;
  /// Applies `over` on top of this (the user's file over the system's).
  void merge(const ClientConfig& over);
};

/// Parses one file's text; `file` names it in errors and anchors relative
/// password_file paths. `home` expands "~/" ("" leaves "~" paths an error).
/// Errors (code 0) read "FILE:LINE:COL: what is wrong".
Result<ClientConfig> parse_client_config(std::string_view text, const std::string& file, const std::string& home);

/// The files to read, most important first: the user's, then the system's.
/// Uses $XDG_CONFIG_HOME, else $HOME/.config; no user file without either.
std::vector<std::string> default_client_config_paths();

/// Reads the files in `paths` (most important first; a missing file is
/// skipped, an unreadable one is an error) and merges them.
Result<ClientConfig> load_client_config(const std::vector<std::string>& paths);

}  // namespace rcp::cli
