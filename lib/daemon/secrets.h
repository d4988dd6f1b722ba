/// The secrets file of an authenticated module: "user:secret" lines, as in
/// rsyncd. The file is refused unless it is a regular file owned by the user
/// the daemon runs as and has no permission bits for group or others (rsyncd's
/// "strict modes", always on): a secret others can read or replace is no
/// secret. Reading is bounded (64 KiB, 1,024 entries, 1,024 bytes a line) so a
/// wrong path such as /dev/zero cannot hang or exhaust the daemon. Secrets are
/// wiped from memory (OPENSSL_cleanse) when a Secrets is destroyed.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.h"

namespace rcp::daemon {

constexpr size_t kMaxSecretsBytes = 64 * 1024;
constexpr size_t kMaxSecretsEntries = 1024;
constexpr size_t kMaxSecretsLine = 1024;
/// Shortest secret accepted: the proofs on the wire allow an offline guessing
/// attack by whoever sees them, so a secret must not be trivially short.
constexpr size_t kMinSecret = 8;

class Secrets {
 public:
  Secrets() = default;
  Secrets(Secrets&&) noexcept = default;
  Secrets& operator=(Secrets&& o) noexcept;
  Secrets(const Secrets&) = delete;
  Secrets& operator=(const Secrets&) = delete;
  ~Secrets();

  /// The secret of `user`, or nullptr.
  const std::string* find(std::string_view user) const;
  size_t size() const { return entries_.size(); }

 private:
  friend Result<Secrets> parse_secrets(std::string_view, std::string_view);
  void wipe();
  std::vector<std::pair<std::string, std::string>> entries_;
};

/// Parses the text of a secrets file: one "user:secret" per line (the secret
/// is everything after the first ':' up to the end of the line, a trailing
/// '\r' removed), blank lines and lines whose first non-blank character is '#'
/// ignored. User names as valid_user_name(); each user once; secrets of
/// kMinSecret bytes or more. Errors (EINVAL) read "FILE:LINE: what" and never
/// contain a secret.
Result<Secrets> parse_secrets(std::string_view text, std::string_view filename);

/// Opens (O_NOFOLLOW, non-blocking), checks and parses a secrets file. Refused:
/// not a regular file (ELOOP for a symlink), owner other than expected_owner
/// (EPERM), any group or other permission bit (EPERM), larger than
/// kMaxSecretsBytes (EFBIG).
Result<Secrets> load_secrets(const std::string& path, uid_t expected_owner);
/// The same with the daemon's effective uid as the expected owner.
Result<Secrets> load_secrets(const std::string& path);

}  // namespace rcp::daemon
