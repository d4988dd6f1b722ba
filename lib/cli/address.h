/// What a user types for one side of a copy, parsed once into one struct.
/// rcp accepts the forms scp and rsync users already type:
///
///   path/to/file  ./a:b  /x:y        local (a ':' after a '/' is part of a local name, as in scp)
///   HOST:MODULE/PATH                 remote; MODULE is a name the daemon exports
///   [v6addr]:MODULE/PATH             IPv6 literal (a zone such as fe80::1%eth0 is kept)
///   USER@HOST:MODULE/PATH            user for authentication (split at the last '@')
///   HOST::MODULE/PATH                rsync daemon style; means the same as one ':'
///   rcp://[USER@]HOST[:PORT]/MODULE/PATH   URL form; the only form that carries a port
///   HOST:  HOST::  rcp://HOST/       list the modules the daemon lets this client see
///
/// Parsing is pure (no DNS, no file system): "HOST" is whatever precedes the
/// ':' and is checked only for characters no host name can contain, so a
/// typo fails here with a message instead of later as a resolver error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.h"

namespace rcp::cli {

struct Address {
  bool is_remote = false;
  std::string user;    ///< "" when not given
  std::string host;    ///< without the brackets of an IPv6 literal
  uint16_t port = 0;   ///< 0 = the configured or built-in default (only rcp:// sets it)
  std::string module;  ///< remote only; "" only when list_modules
  /// Remote: the path inside the module as written, without the '/' that
  /// follows the module ("" = the module's root; globs are kept for the
  /// daemon to expand). Local: the argument exactly as given.
  std::string path;
  bool list_modules = false;   ///< "HOST:", "HOST::" or "rcp://HOST[/]"
  bool trailing_slash = false; ///< the remote path ended in '/' ("host:data/dir/", "host:data/")

  /// "MODULE/PATH" or "MODULE" — what the Open message carries today.
  std::string module_path() const;
};

/// Parses one command-line argument. Errors (EINVAL) say what is wrong in the
/// user's words and quote the argument, e.g.
///   "'rcp://h:99999/data': port 99999 is out of range (1-65535)".
Result<Address> parse_address(std::string_view arg);

/// The canonical spelling, for messages: "user@host:module/path",
/// "[::1]:module/path", "rcp://host:7000/module/path", "host:" or the local path.
std::string to_string(const Address& a);

}  // namespace rcp::cli
