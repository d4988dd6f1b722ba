#include "cli/address.h"

#include <cctype>

namespace rcp::cli {

namespace {

constexpr std::string_view kScheme = "rcp://";

Error bad(std::string_view arg, std::string_view why) {
  // Code 0: a usage error, not a system error, so message() is just the sentence.
  return make_error(0, "'" + std::string(arg) + "': " + std::string(why));
}

bool is_host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

/// Inside [...]: an IPv6 literal (hex digits, ':', '.' for a v4 tail) with an
/// optional "%zone", or a host name, which scp also accepts in brackets.
bool is_bracket_char(char c) { return is_host_char(c) || c == ':' || c == '%'; }

Status check_host(std::string_view arg, std::string_view host, bool bracketed) {
  if (host.empty())
    return bad(arg, bracketed ? "empty address between '[' and ']'" : "no host name before ':'");
  for (char c : host) {
    if (bracketed ? !is_bracket_char(c) : !is_host_char(c)) {
      std::string why = "'" + std::string(host) + "' is not a host name";
      if (!bracketed)
        why += " (for a local file whose name contains ':', write './" + std::string(arg) + "')";
      return bad(arg, why);
    }
  }
  return {};
}

Status check_module(std::string_view arg, std::string_view module) {
  if (module == "." || module == "..")
    return bad(arg, "'" + std::string(module) + "' is not a module name");
  if (module.find(':') != std::string_view::npos)
    return bad(arg, "module names cannot contain ':' (the form is HOST:MODULE/PATH or HOST::MODULE/PATH)");
  for (char c : module)
    if (std::iscntrl(static_cast<unsigned char>(c)))
      return bad(arg, "the module name contains a control character");
  if (module.size() > 255) return bad(arg, "the module name is longer than 255 bytes");
  return {};
}

/// "MODULE/PATH" after the host's ':' (or "::", or the URL's first '/').
Status parse_module_path(std::string_view arg, std::string_view rest, Address& a) {
  if (rest.empty()) {
    a.list_modules = true;
    return {};
  }
  const size_t slash = rest.find('/');
  const std::string_view module = rest.substr(0, slash);
  if (module.empty())
    return bad(arg,
               "no module name; a remote path is MODULE/PATH inside a module the daemon exports "
               "(list them with 'rcp " +
                   std::string(a.host.find(':') != std::string::npos ? "[" + a.host + "]" : a.host) + ":')");
  RCP_TRY(check_module(arg, module));
  a.module = module;
  if (slash != std::string_view::npos) {
    std::string_view path = rest.substr(slash + 1);
    a.trailing_slash = !rest.empty() && rest.back() == '/';
    while (!path.empty() && path.front() == '/') path.remove_prefix(1);  // "data//x" is data/x
    a.path = path;
  }
  return {};
}

Result<uint16_t> parse_port(std::string_view arg, std::string_view s) {
  if (s.empty()) return bad(arg, "empty port after ':' (leave out the ':' for the default port)");
  if (s.size() > 5 || s.find_first_not_of("0123456789") != std::string_view::npos)
    return bad(arg, "port '" + std::string(s) + "' is not a number from 1 to 65535");
  unsigned v = 0;
  for (char c : s) v = v * 10 + unsigned(c - '0');
  if (v == 0 || v > 65535) return bad(arg, "port " + std::string(s) + " is out of range (1-65535)");
  return static_cast<uint16_t>(v);
}

/// rcp://[USER@]HOST[:PORT][/MODULE[/PATH]]
Result<Address> parse_url(std::string_view arg) {
  Address a;
  a.is_remote = true;
  std::string_view rest = arg.substr(kScheme.size());
  const size_t slash = rest.find('/');
  std::string_view auth = rest.substr(0, slash);
  const std::string_view tail = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
  if (const size_t at = auth.rfind('@'); at != std::string_view::npos) {
    if (at == 0) return bad(arg, "empty user name before '@'");
    a.user = auth.substr(0, at);
    if (const size_t pw = a.user.find(':'); pw != std::string::npos) {
      // Quote the argument with the password masked: messages end up in logs and cron mail.
      const std::string masked = std::string(kScheme) + a.user.substr(0, pw) + ":***@" + std::string(rest.substr(at + 1));
      return bad(masked, "a password in the URL is not supported (set password_file in ~/.config/rcp/config.toml)");
    }
    auth.remove_prefix(at + 1);
  }
  std::string_view port;
  bool has_port = false;
  if (!auth.empty() && auth.front() == '[') {
    const size_t rb = auth.find(']');
    if (rb == std::string_view::npos) return bad(arg, "unterminated '[' in the host (an IPv6 address is written [addr])");
    RCP_TRY(check_host(arg, auth.substr(1, rb - 1), true));
    a.host = auth.substr(1, rb - 1);
    const std::string_view after = auth.substr(rb + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad(arg, "unexpected '" + std::string(after) + "' after ']' (expected :PORT or /)");
      port = after.substr(1);
      has_port = true;
    }
  } else {
    const size_t colon = auth.find(':');
    if (colon != std::string_view::npos && auth.find(':', colon + 1) != std::string_view::npos)
      return bad(arg, "an IPv6 address in a URL needs brackets, as in rcp://[::1]/MODULE/PATH");
    if (auth.empty()) return bad(arg, "no host name after rcp://");
    RCP_TRY(check_host(arg, auth.substr(0, colon), false));
    a.host = auth.substr(0, colon);
    if (colon != std::string_view::npos) {
      port = auth.substr(colon + 1);
      has_port = true;
    }
  }
  if (has_port) {
    RCP_ASSIGN(a.port, parse_port(arg, port));
  }
  RCP_TRY(parse_module_path(arg, tail, a));
  return a;
}

bool starts_with_scheme(std::string_view arg, std::string_view& scheme) {
  const size_t p = arg.find("://");
  if (p == std::string_view::npos || p == 0) return false;
  for (size_t i = 0; i < p; ++i) {
    const char c = arg[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.')) return false;
  }
  if (!std::isalpha(static_cast<unsigned char>(arg[0]))) return false;
  scheme = arg.substr(0, p);
  return true;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

}  // namespace

std::string Address::module_path() const { return path.empty() ? module : module + "/" + path; }

Result<Address> parse_address(std::string_view arg) {
  if (arg.empty()) return make_error(0, "empty path argument");
  std::string_view scheme;
  if (starts_with_scheme(arg, scheme)) {
    if (!iequals(scheme, "rcp"))
      return bad(arg, "unsupported URL scheme '" + std::string(scheme) +
                          "://' (rcp understands rcp://[USER@]HOST[:PORT]/MODULE/PATH)");
    return parse_url(arg);
  }

  Address local;
  local.path = arg;

  // Find the ':' that ends the host, as scp does: a '/' before it makes the
  // argument a local path; "[...]" at the start of the host (after any
  // USER@) may contain ':' and must be followed by ':'.
  size_t host_begin = 0;
  size_t colon = std::string_view::npos;
  bool bracketed = false;
  for (size_t i = 0; i < arg.size(); ++i) {
    const char c = arg[i];
    if (c == '/') return local;
    if (c == '@') {
      host_begin = i + 1;
      continue;
    }
    if (c == '[' && i == host_begin) {
      const size_t end = arg.find_first_of("]/", i);
      if (end == std::string_view::npos || arg[end] == '/') {
        const size_t col = arg.find(':', i);
        if (col != std::string_view::npos && col < end)
          return bad(arg, "unterminated '[' in the host (an IPv6 address is written [addr]:MODULE/PATH; "
                          "for a local file, write './" + std::string(arg) + "')");
        return local;
      }
      if (end + 1 < arg.size() && arg[end + 1] == ':') {
        colon = end + 1;
        bracketed = true;
        break;
      }
      return local;  // "[draft] notes.txt"
    }
    if (c == ':') {
      colon = i;
      break;
    }
  }
  if (colon == std::string_view::npos || colon == 0) return local;  // ":x" is local, as in scp

  Address a;
  a.is_remote = true;
  if (host_begin > 0) {
    if (host_begin == 1) return bad(arg, "empty user name before '@'");
    a.user = arg.substr(0, host_begin - 1);
  }
  const std::string_view host =
      bracketed ? arg.substr(host_begin + 1, colon - host_begin - 2) : arg.substr(host_begin, colon - host_begin);
  RCP_TRY(check_host(arg, host, bracketed));
  a.host = host;
  std::string_view rest = arg.substr(colon + 1);
  if (!rest.empty() && rest.front() == ':') rest.remove_prefix(1);  // HOST::MODULE/PATH
  RCP_TRY(parse_module_path(arg, rest, a));
  return a;
}

std::string to_string(const Address& a) {
  if (!a.is_remote) return a.path;
  const bool v6 = a.host.find(':') != std::string::npos;
  const std::string host = v6 ? "[" + a.host + "]" : a.host;
  const std::string user = a.user.empty() ? "" : a.user + "@";
  std::string mp = a.list_modules ? "" : a.module_path();
  if (a.trailing_slash && !mp.empty() && mp.back() != '/') mp += '/';
  if (a.port != 0) return "rcp://" + user + host + ":" + std::to_string(a.port) + "/" + mp;
  return user + host + ":" + mp;
}

}  // namespace rcp::cli
