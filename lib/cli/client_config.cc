#include "cli/client_config.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <toml++/toml.h>

#include "util/fd.h"

namespace rcp::cli {

namespace {

constexpr std::string_view kKnownKeys = "transport, port, tcp_port, streams, progress, encrypt, user, password_file";
constexpr size_t kMaxConfigBytes = 1 << 20;

std::string where(const std::string& file, const toml::source_region& r) {
  return file + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
}

Error bad(const std::string& file, const toml::source_region& r, const std::string& what) {
  return make_error(0, where(file, r) + ": " + what);
}

const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a number with a fraction";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

std::string strip_brackets(std::string_view h) {
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  return std::string(h);
}

std::string dir_of(const std::string& file) {
  const size_t s = file.rfind('/');
  if (s == std::string::npos) return ".";
  return s == 0 ? "/" : file.substr(0, s);
}

struct Parser {
  const std::string& file;
  const std::string& home;

  Result<int64_t> integer(const toml::key& k, const toml::node& v, int64_t lo, int64_t hi) {
    const auto* i = v.as_integer();
    if (!i || i->get() < lo || i->get() > hi)
      return bad(file, v.source(),
                 "'" + std::string(k.str()) + "' must be an integer from " + std::to_string(lo) + " to " +
                     std::to_string(hi) + (i ? ", not " + std::to_string(i->get()) : std::string(", not ") + type_name(v)));
    return i->get();
  }

  Result<std::string> string(const toml::key& k, const toml::node& v) {
    const auto* s = v.as_string();
    if (!s) return bad(file, v.source(), "'" + std::string(k.str()) + "' must be a string, not " + type_name(v));
    return s->get();
  }

  Result<std::string> path(const toml::key& k, const toml::node& v) {
    auto r = string(k, v);  // (not RCP_ASSIGN: GCC 12 warns falsely about the moved-out string)
    if (!r.ok()) return r.error();
    const std::string& p = r.value();
    if (p.empty()) return bad(file, v.source(), "'" + std::string(k.str()) + "' is empty");
    if (p == "~" || p.rfind("~/", 0) == 0) {
      if (home.empty()) return bad(file, v.source(), "'" + std::string(k.str()) + "' starts with '~' but HOME is not set");
      return home + p.substr(1);
    }
    if (p[0] == '~') return bad(file, v.source(), "'~user' paths are not supported in '" + std::string(k.str()) + "'");
    if (p[0] != '/') return dir_of(file) + "/" + p;
    return p;
  }

  /// One table of defaults; `allow_hosts`: the top level, where [hosts] may appear.
  Status defaults(const toml::table& t, ClientDefaults& d, ClientConfig* top) {
    for (auto&& [k, v] : t) {
      const std::string_view name = k.str();
      if (name == "transport") {
        auto r = string(k, v);
        if (!r.ok()) return r.error();
        const std::string& s = r.value();
        if (s != "auto" && s != "rdma" && s != "tcp")
          return bad(file, v.source(), "'transport' must be \"auto\", \"rdma\" or \"tcp\", not \"" + s + "\"");
        d.transport = s;
      } else if (name == "port") {
        RCP_ASSIGN(auto p, integer(k, v, 1, 65535));
        d.port = static_cast<uint16_t>(p);
      } else if (name == "tcp_port") {
        RCP_ASSIGN(auto p, integer(k, v, 1, 65535));
        d.tcp_port = static_cast<uint16_t>(p);
      } else if (name == "streams") {
        RCP_ASSIGN(auto n, integer(k, v, 1, 16));
        d.streams = static_cast<uint32_t>(n);
      } else if (name == "progress") {
        const auto* b = v.as_boolean();
        if (!b) return bad(file, v.source(), std::string("'progress' must be true or false, not ") + type_name(v));
        d.progress = b->get();
      } else if (name == "encrypt") {
        const auto* b = v.as_boolean();
        if (!b) return bad(file, v.source(), std::string("'encrypt' must be true or false, not ") + type_name(v));
        d.encrypt = b->get();
      } else if (name == "user") {
        RCP_ASSIGN(std::string u, string(k, v));
        if (u.empty()) return bad(file, v.source(), "'user' is empty");
        d.user = u;
      } else if (name == "password_file") {
        RCP_ASSIGN(d.password_file, path(k, v));
      } else if (name == "hosts" && top) {
        const auto* hosts = v.as_table();
        if (!hosts) return bad(file, v.source(), std::string("'hosts' must be a table of [hosts.\"NAME\"], not ") + type_name(v));
        for (auto&& [hk, hv] : *hosts) {
          const auto* ht = hv.as_table();
          if (!ht)
            return bad(file, hv.source(),
                       "'hosts." + std::string(hk.str()) + "' must be a table ([hosts.\"" + std::string(hk.str()) +
                           "\"]), not " + type_name(hv));
          if (hk.str().empty()) return bad(file, hk.source(), "empty host name in [hosts.\"\"]");
          ClientDefaults hd;
          RCP_TRY(defaults(*ht, hd, nullptr));
          top->hosts.emplace_back(strip_brackets(hk.str()), std::move(hd));
        }
      } else {
        return bad(file, k.source(),
                   "unknown key '" + std::string(name) + "'" + (top ? "" : " in a [hosts] table") + " (known: " +
                       std::string(kKnownKeys) + (top ? ", and [hosts.\"NAME\"] tables" : "") + ")");
      }
    }
    return {};
  }
};

}  // namespace

void ClientDefaults::merge(const ClientDefaults& o) {
  if (o.transport) transport = o.transport;
  if (o.port) port = o.port;
  if (o.tcp_port) tcp_port = o.tcp_port;
  if (o.streams) streams = o.streams;
  if (o.progress) progress = o.progress;
  if (o.encrypt) encrypt = o.encrypt;
  if (o.user) user = o.user;
  if (o.password_file) password_file = o.password_file;
}

ClientDefaults ClientConfig::for_host(std::string_view host) const {
  ClientDefaults d = all;
  const std::string h = strip_brackets(host);
  for (const auto& [name, hd] : hosts)
    if (iequals(name, h)) d.merge(hd);
  return d;
}

void ClientConfig::merge(const ClientConfig& o) {
  all.merge(o.all);
  for (const auto& [name, hd] : o.hosts) {
    bool found = false;
    for (auto& [mine, md] : hosts)
      if (iequals(mine, name)) {
        md.merge(hd);
        found = true;
      }
    if (!found) hosts.emplace_back(name, hd);
  }
  files.insert(files.end(), o.files.begin(), o.files.end());
}

Result<ClientConfig> parse_client_config(std::string_view text, const std::string& file, const std::string& home) {
  toml::table t;
  try {
    t = toml::parse(text, std::string_view(file));
  } catch (const toml::parse_error& e) {
    return bad(file, e.source(), std::string(e.description()));
  }
  ClientConfig c;
  c.files.push_back(file);
  Parser p{file, home};
  RCP_TRY(p.defaults(t, c.all, &c));
  return c;
}

std::vector<std::string> default_client_config_paths() {
  std::vector<std::string> paths;
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  const char* home = std::getenv("HOME");
  if (xdg && xdg[0] == '/')
    paths.push_back(std::string(xdg) + "/rcp/config.toml");
  else if (home && home[0])
    paths.push_back(std::string(home) + "/.config/rcp/config.toml");
  paths.push_back("/etc/rcp/config.toml");
  return paths;
}

Result<ClientConfig> load_client_config(const std::vector<std::string>& paths) {
  const char* home_env = std::getenv("HOME");
  const std::string home = home_env ? home_env : "";
  ClientConfig merged;
  // Least important first, so each later merge overrides.
  for (auto it = paths.rbegin(); it != paths.rend(); ++it) {
    const std::string& path = *it;
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
      if (errno == ENOENT || errno == ENOTDIR) continue;
      return sys_error("cannot read config file '" + path + "'");
    }
    std::string text;
    char buf[8192];
    for (;;) {
      const ssize_t n = ::read(fd.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return sys_error("cannot read config file '" + path + "'");
      if (n == 0) break;
      text.append(buf, static_cast<size_t>(n));
      if (text.size() > kMaxConfigBytes)
        return make_error(EFBIG, "config file '" + path + "' is larger than 1 MiB");
    }
    RCP_ASSIGN(ClientConfig c, parse_client_config(text, path, home));
    merged.merge(c);
  }
  return merged;
}

}  // namespace rcp::cli
