// toml++ is used header-only and without exceptions, in this one translation
// unit: lib/ has no exceptions in its API (the parse result is checked like a
// Result), and the parser is compiled with our sanitizer and fuzzer
// instrumentation instead of coming precompiled from libtomlplusplus3.
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#define TOML_ENABLE_FORMATTERS 0
#include <toml++/toml.h>

#include "daemon/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <set>

#include "util/fd.h"

namespace rcp::daemon {
namespace {

const char* type_name(toml::node_type t) {
  switch (t) {
    case toml::node_type::none: return "nothing";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
  }
  return "an unknown type";
}

/// Builds the "FILE:LINE: KEY: what" errors.
class Checker {
 public:
  explicit Checker(std::string_view file) : file_(file) {}

  Error at(const toml::source_region& where, std::string_view key, std::string_view what) const {
    return make_error(EINVAL, file_ + ":" + std::to_string(where.begin.line) + ": " + std::string(key) + ": " +
                                  std::string(what));
  }
  Error wrong_type(const toml::node& n, std::string_view key, std::string_view expected) const {
    return at(n.source(), key, "expected " + std::string(expected) + ", got " + type_name(n.type()));
  }

  Result<std::string> string(const toml::node& n, std::string_view key) const {
    const auto* s = n.as_string();
    if (s == nullptr) return wrong_type(n, key, "a string");
    const std::string& v = s->get();
    if (v.find('\0') != std::string::npos) return at(n.source(), key, "contains a NUL byte");
    return v;
  }
  Result<bool> boolean(const toml::node& n, std::string_view key) const {
    const auto* b = n.as_boolean();
    if (b == nullptr) return wrong_type(n, key, "a boolean (true or false)");
    return b->get();
  }
  Result<uint32_t> integer(const toml::node& n, std::string_view key, int64_t lo, int64_t hi) const {
    const auto* i = n.as_integer();
    if (i == nullptr) return wrong_type(n, key, "an integer");
    const int64_t v = i->get();
    if (v < lo || v > hi) {
      return at(n.source(), key,
                std::to_string(v) + " is out of range (" + std::to_string(lo) + " to " + std::to_string(hi) + ")");
    }
    return static_cast<uint32_t>(v);
  }
  /// An array of strings, each passed to check (which returns an error text or "").
  template <class Check>
  Result<std::vector<std::string>> strings(const toml::node& n, std::string_view key, Check check) const {
    const auto* a = n.as_array();
    if (a == nullptr) return wrong_type(n, key, "an array of strings");
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const toml::node& e : *a) {
      const auto* s = e.as_string();
      if (s == nullptr) return wrong_type(e, key, "an array of strings; an element is not a string");
      const std::string& v = s->get();
      if (std::string why = check(v); !why.empty()) return at(e.source(), key, why);
      if (!seen.insert(v).second) return at(e.source(), key, "'" + v + "' is listed twice");
      out.push_back(v);
    }
    return out;
  }
  Result<std::vector<Cidr>> cidrs(const toml::node& n, std::string_view key) const {
    std::vector<Cidr> out;
    auto texts = strings(n, key, [&](const std::string& t) -> std::string {
      auto c = parse_cidr(t);
      if (!c) return c.error().context;
      out.push_back(c.value());
      return {};
    });
    if (!texts) return texts.error();
    return out;
  }

 private:
  std::string file_;
};

/// toml++ 3.3.0 (Debian 12) reaches __builtin_unreachable() -- undefined
/// behaviour, found by tests/fuzz/fuzz_config -- when it asks whether one of
/// these code points is whitespace, which it does after values, while
/// recording numbers and dates and in multi-line strings: its generated table
/// for non-ASCII horizontal whitespace misses these blocks (derived from the
/// table's 0x7FFFFFFFFFFFF75E mask and its two handled cases). The text is
/// refused before the parser sees it, naming the line; inside a string the
/// character can be written as a \u escape.
struct CodeRange {
  char32_t lo, hi;
};
constexpr CodeRange kTomlUnsafe[] = {{0xA1, 0x499}, {0x2C5E, 0x2FFF}, {0x3001, 0x3057}, {0xFB26, 0xFEFE}};

Status check_toml_safe(std::string_view text, std::string_view filename) {
  size_t line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b == '\n') ++line;
    if (b < 0xC2 || b > 0xEF) continue;  // ASCII, continuation, 4-byte leads: not in the ranges
    const size_t n = b < 0xE0 ? 2 : 3;
    if (i + n > text.size()) continue;  // truncated: toml++ refuses malformed UTF-8 itself
    char32_t c = b & (n == 2 ? 0x1F : 0x0F);
    bool well_formed = true;
    for (size_t k = 1; k < n; ++k) {
      const auto cb = static_cast<unsigned char>(text[i + k]);
      if ((cb & 0xC0) != 0x80) well_formed = false;
      c = (c << 6) | (cb & 0x3F);
    }
    if (!well_formed) continue;
    for (const CodeRange& r : kTomlUnsafe) {
      if (c >= r.lo && c <= r.hi) {
        char cp[16];
        snprintf(cp, sizeof cp, "U+%04X", static_cast<unsigned>(c));
        return make_error(EINVAL, std::string(filename) + ":" + std::to_string(line) + ": character " + cp +
                                      " is not accepted here by the TOML parser (toml++ 3.3); in a string write it as "
                                      "a \\u escape, elsewhere remove it");
      }
    }
  }
  return {};
}

bool portable_name_char(char c, std::string_view extra) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         extra.find(c) != std::string_view::npos;
}

/// Unix account names (useradd's default pattern, a bit wider).
bool valid_account(std::string_view s) {
  if (s.empty() || s.size() > 32 || s[0] == '-') return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return portable_name_char(c, "_.-"); });
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

Result<ModuleConfig> parse_module(const Checker& ck, std::string_view name, const toml::node& node) {
  const std::string prefix = "modules." + std::string(name);
  const auto* tbl = node.as_table();
  if (tbl == nullptr) return ck.wrong_type(node, prefix, "a table ([" + prefix + "])");
  ModuleConfig m;
  m.name = std::string(name);
  bool have_path = false;
  const toml::node* secrets_node = nullptr;
  const toml::node* users_node = nullptr;
  const toml::node* wo_node = nullptr;
  const toml::node* path_node = nullptr;
  const toml::node* device_node = nullptr;
  for (auto&& [k, v] : *tbl) {
    const std::string key = prefix + "." + std::string(k.str());
    const std::string_view kn = k.str();
    if (kn == "path") {
      RCP_ASSIGN(m.path, ck.string(v, key));
      if (m.path.empty() || m.path[0] != '/') return ck.at(v.source(), key, "must be an absolute path");
      have_path = true;
      path_node = &v;
    } else if (kn == "device") {
      RCP_ASSIGN(m.device, ck.string(v, key));
      if (m.device.empty() || m.device[0] != '/') return ck.at(v.source(), key, "must be an absolute path");
      device_node = &v;
    } else if (kn == "direct") {
      RCP_ASSIGN(m.direct, ck.boolean(v, key));
    } else if (kn == "comment") {
      RCP_ASSIGN(m.comment, ck.string(v, key));
      if (m.comment.size() > 256) return ck.at(v.source(), key, "longer than 256 bytes");
      if (std::any_of(m.comment.begin(), m.comment.end(),
                      [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
        return ck.at(v.source(), key, "contains a control character");
    } else if (kn == "read_only") {
      RCP_ASSIGN(m.read_only, ck.boolean(v, key));
    } else if (kn == "write_only") {
      RCP_ASSIGN(m.write_only, ck.boolean(v, key));
      wo_node = &v;
    } else if (kn == "list") {
      RCP_ASSIGN(m.list, ck.boolean(v, key));
    } else if (kn == "hosts_allow") {
      RCP_ASSIGN(m.hosts.allow, ck.cidrs(v, key));
    } else if (kn == "hosts_deny") {
      RCP_ASSIGN(m.hosts.deny, ck.cidrs(v, key));
    } else if (kn == "auth_users") {
      RCP_ASSIGN(m.auth_users, ck.strings(v, key, [](const std::string& u) -> std::string {
                   return valid_user_name(u) ? "" : quoted(u) + " is not a valid user name (1 to 64 of A-Z a-z 0-9 _ . @ -)";
                 }));
      if (m.auth_users.empty()) return ck.at(v.source(), key, "is empty; leave it out for a module without authentication");
      users_node = &v;
    } else if (kn == "secrets_file") {
      RCP_ASSIGN(m.secrets_file, ck.string(v, key));
      if (m.secrets_file.empty() || m.secrets_file[0] != '/') return ck.at(v.source(), key, "must be an absolute path");
      secrets_node = &v;
    } else if (kn == "max_connections") {
      RCP_ASSIGN(m.max_connections, ck.integer(v, key, 0, 65536));
    } else if (kn == "encrypt") {
      RCP_ASSIGN(m.encrypt, ck.boolean(v, key));
    } else {
      return ck.at(k.source(), key, "unknown key");
    }
  }
  if (path_node != nullptr && device_node != nullptr)
    return ck.at(device_node->source(), prefix + ".device", "a module exports a directory (path) or a device, not both");
  if (!have_path && device_node == nullptr)
    return ck.at(tbl->source(), prefix + ".path", "missing (every module needs a directory, or a device)");
  if (m.read_only && m.write_only) {
    return ck.at(wo_node->source(), prefix + ".write_only",
                 "write_only = true needs read_only = false (read_only is true unless set)");
  }
  if (users_node != nullptr && secrets_node == nullptr)
    return ck.at(users_node->source(), prefix + ".secrets_file", "missing: auth_users needs a secrets_file");
  if (secrets_node != nullptr && users_node == nullptr)
    return ck.at(secrets_node->source(), prefix + ".auth_users",
                 "missing: a secrets_file without auth_users would leave the module open to everyone");
  return m;
}

Status parse_daemon(const Checker& ck, const toml::node& node, DaemonConfig& c) {
  const auto* tbl = node.as_table();
  if (tbl == nullptr) return ck.wrong_type(node, "daemon", "a table ([daemon])");
  const toml::node* mph = nullptr;
  for (auto&& [k, v] : *tbl) {
    const std::string key = "daemon." + std::string(k.str());
    const std::string_view kn = k.str();
    if (kn == "listen") {
      RCP_ASSIGN(c.listen, ck.strings(v, key, [](const std::string& a) -> std::string {
                   auto ip = parse_ip(a);
                   return ip ? "" : ip.error().context + " (listen takes literal addresses)";
                 }));
      if (c.listen.empty()) return ck.at(v.source(), key, "is empty: the daemon would listen nowhere");
    } else if (kn == "port") {
      RCP_ASSIGN(c.port, ck.integer(v, key, 1, 65535));
    } else if (kn == "tcp_port") {
      RCP_ASSIGN(c.tcp_port, ck.integer(v, key, 1, 65535));
    } else if (kn == "transport") {
      RCP_ASSIGN(std::string t, ck.string(v, key));
      if (t == "auto") c.transport = TransportChoice::auto_;
      else if (t == "rdma") c.transport = TransportChoice::rdma;
      else if (t == "tcp") c.transport = TransportChoice::tcp;
      else return ck.at(v.source(), key, quoted(t) + " is not one of auto, rdma, tcp");
    } else if (kn == "user" || kn == "group") {
      RCP_ASSIGN(std::string u, ck.string(v, key));
      if (!valid_account(u)) return ck.at(v.source(), key, quoted(u) + " is not a valid account name");
      (kn == "user" ? c.user : c.group) = u;
    } else if (kn == "max_connections") {
      RCP_ASSIGN(c.max_connections, ck.integer(v, key, 1, 65536));
    } else if (kn == "max_per_host") {
      RCP_ASSIGN(c.max_per_host, ck.integer(v, key, 1, 65536));
      mph = &v;
    } else if (kn == "max_files_per_session") {
      RCP_ASSIGN(c.max_files_per_session, ck.integer(v, key, 1, 4096));
    } else if (kn == "hello_timeout") {
      RCP_ASSIGN(c.hello_timeout, ck.integer(v, key, 1, 300));
    } else if (kn == "idle_timeout") {
      RCP_ASSIGN(c.idle_timeout, ck.integer(v, key, 0, 86400));
    } else if (kn == "hash_threads") {
      RCP_ASSIGN(c.hash_threads, ck.integer(v, key, 0, 64));
    } else if (kn == "encrypt") {
      RCP_ASSIGN(std::string e, ck.string(v, key));
      if (e == "never") c.encrypt = EncryptPolicy::never;
      else if (e == "allowed") c.encrypt = EncryptPolicy::allowed;
      else if (e == "required") c.encrypt = EncryptPolicy::required;
      else return ck.at(v.source(), key, quoted(e) + " is not one of never, allowed, required");
    } else if (kn == "pid_file") {
      RCP_ASSIGN(c.pid_file, ck.string(v, key));
      if (c.pid_file.empty() || c.pid_file[0] != '/') return ck.at(v.source(), key, "must be an absolute path");
    } else {
      return ck.at(k.source(), key, "unknown key");
    }
  }
  // Left at its default, max_per_host follows a smaller max_connections;
  // set explicitly above it, it is a mistake worth reporting.
  if (mph == nullptr) c.max_per_host = std::min(c.max_per_host, c.max_connections);
  if (c.max_per_host > c.max_connections) {
    return ck.at(mph->source(), "daemon.max_per_host",
                 std::to_string(c.max_per_host) + " exceeds daemon.max_connections (" +
                     std::to_string(c.max_connections) + ")");
  }
  return {};
}

}  // namespace

bool ModuleConfig::has_user(std::string_view user) const {
  return std::find(auth_users.begin(), auth_users.end(), user) != auth_users.end();
}

const ModuleConfig* DaemonConfig::find_module(std::string_view name) const {
  for (const ModuleConfig& m : modules)
    if (m.name == name) return &m;
  return nullptr;
}

// valid_module_name and valid_user_name: daemon/names.cc (rcpcore; the handshake uses them).

Result<DaemonConfig> parse_config_string(std::string_view text, std::string_view filename) {
  const Checker ck(filename);
  if (text.size() > kMaxConfigBytes) {
    return make_error(EFBIG, std::string(filename) + ": larger than " + std::to_string(kMaxConfigBytes) + " bytes");
  }
  RCP_TRY(check_toml_safe(text, filename));
  toml::parse_result parsed = toml::parse(text, filename);
  if (!parsed) {
    const toml::parse_error& e = parsed.error();
    return make_error(EINVAL, std::string(filename) + ":" + std::to_string(e.source().begin.line) +
                                  ": not valid TOML: " + std::string(e.description()));
  }
  const toml::table& root = parsed.table();
  DaemonConfig c;
  c.file = std::string(filename);
  std::vector<std::pair<std::string, const toml::node*>> encrypted_modules;
  for (auto&& [k, v] : root) {
    const std::string_view kn = k.str();
    if (kn == "daemon") {
      RCP_TRY(parse_daemon(ck, v, c));
    } else if (kn == "modules") {
      const auto* mods = v.as_table();
      if (mods == nullptr) return ck.wrong_type(v, "modules", "a table of [modules.NAME] tables");
      for (auto&& [mk, mv] : *mods) {
        if (!valid_module_name(mk.str())) {
          return ck.at(mk.source(), "modules." + std::string(mk.str()),
                       "module name must be 1 to 64 of A-Z a-z 0-9 _ . - and not start with . or -");
        }
        RCP_ASSIGN(ModuleConfig m, parse_module(ck, mk.str(), mv));
        if (m.encrypt) encrypted_modules.emplace_back(m.name, mv.as_table()->get("encrypt"));
        c.modules.push_back(std::move(m));
      }
    } else {
      return ck.at(k.source(), kn, "unknown key (expected [daemon] or [modules.NAME])");
    }
  }
  // No module is a valid file (the packaged one ships that way): rcpd
  // starts, says it serves nothing, and a reload adds modules.
  if (c.encrypt == EncryptPolicy::never && !encrypted_modules.empty()) {
    auto& [name, node] = encrypted_modules.front();
    return ck.at(node->source(), "modules." + name + ".encrypt",
                 "true, but [daemon] encrypt = \"never\": no client could use this module");
  }
  return c;
}

Result<DaemonConfig> load_config(const std::string& path) {
  const int raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (raw < 0) return sys_error("cannot open configuration " + path);
  Fd fd(raw);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return sys_error("cannot stat configuration " + path);
  if (!S_ISREG(st.st_mode)) return make_error(EINVAL, path + ": not a regular file");
  if (static_cast<uint64_t>(st.st_size) > kMaxConfigBytes)
    return make_error(EFBIG, path + ": larger than " + std::to_string(kMaxConfigBytes) + " bytes");
  std::string text;
  text.resize(static_cast<size_t>(st.st_size) + 1);
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("cannot read configuration " + path);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  text.resize(got);  // a file that grew since fstat is refused by parse_config_string's size check
  return parse_config_string(text, path);
}

}  // namespace rcp::daemon
