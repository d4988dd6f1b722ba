#include "daemon/secrets.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/config.h"
#include "util/fd.h"

namespace rcp::daemon {
namespace {

void cleanse(std::string& s) {
  if (!s.empty()) OPENSSL_cleanse(s.data(), s.size());
  s.clear();
}

/// Wipes a buffer however the function that filled it returns.
struct WipeOnExit {
  std::string& s;
  ~WipeOnExit() { cleanse(s); }
};

}  // namespace

Secrets& Secrets::operator=(Secrets&& o) noexcept {
  if (this != &o) {
    wipe();
    entries_ = std::move(o.entries_);
  }
  return *this;
}

Secrets::~Secrets() { wipe(); }

void Secrets::wipe() {
  for (auto& [u, s] : entries_) cleanse(s);
  entries_.clear();
}

const std::string* Secrets::find(std::string_view user) const {
  for (const auto& [u, s] : entries_)
    if (u == user) return &s;
  return nullptr;
}

Result<Secrets> parse_secrets(std::string_view text, std::string_view filename) {
  const std::string file(filename);
  if (text.size() > kMaxSecretsBytes)
    return make_error(EFBIG, file + ": larger than " + std::to_string(kMaxSecretsBytes) + " bytes");
  Secrets out;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    ++line_no;
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    auto bad = [&](const std::string& what) {
      return make_error(EINVAL, file + ":" + std::to_string(line_no) + ": " + what);
    };
    if (line.size() > kMaxSecretsLine) return bad("line longer than " + std::to_string(kMaxSecretsLine) + " bytes");
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return bad("expected user:secret");
    const std::string_view user = line.substr(0, colon);
    const std::string_view secret = line.substr(colon + 1);
    if (!valid_user_name(user)) return bad("user name is not 1 to 64 of A-Z a-z 0-9 _ . @ -");
    if (out.find(user) != nullptr) return bad("user '" + std::string(user) + "' appears twice");
    if (secret.size() < kMinSecret)
      return bad("secret of '" + std::string(user) + "' is shorter than " + std::to_string(kMinSecret) + " bytes");
    if (secret.find('\0') != std::string_view::npos) return bad("secret contains a NUL byte");
    if (out.entries_.size() == kMaxSecretsEntries)
      return bad("more than " + std::to_string(kMaxSecretsEntries) + " entries");
    out.entries_.emplace_back(std::string(user), std::string(secret));
  }
  return out;
}

Result<Secrets> load_secrets(const std::string& path, uid_t expected_owner) {
  const int raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (raw < 0) return sys_error("cannot open secrets file " + path);
  Fd fd(raw);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return sys_error("cannot stat secrets file " + path);
  if (!S_ISREG(st.st_mode)) return make_error(EINVAL, "secrets file " + path + " is not a regular file");
  if (st.st_uid != expected_owner) {
    return make_error(EPERM, "secrets file " + path + " is owned by uid " + std::to_string(st.st_uid) +
                                 ", not by uid " + std::to_string(expected_owner) + " that rcpd runs as");
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return make_error(EPERM, "secrets file " + path + " has mode " + mode +
                                 ": group and others must have no access (chmod 600)");
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxSecretsBytes)
    return make_error(EFBIG, "secrets file " + path + " is larger than " + std::to_string(kMaxSecretsBytes) + " bytes");
  std::string text(kMaxSecretsBytes + 1, '\0');
  WipeOnExit wipe{text};
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("cannot read secrets file " + path);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  // A file that grew since fstat is refused by parse_secrets' size check.
  return parse_secrets(std::string_view(text.data(), got), path);
}

Result<Secrets> load_secrets(const std::string& path) { return load_secrets(path, geteuid()); }

}  // namespace rcp::daemon
