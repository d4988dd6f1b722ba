#include "daemon/listen_address.h"

namespace rcp::daemon {

std::optional<uint16_t> parse_port(std::string_view s) {
  if (s.empty() || s.size() > 5 || s.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  unsigned v = 0;
  for (char c : s) v = v * 10 + unsigned(c - '0');
  if (v == 0 || v > 65535) return std::nullopt;
  return static_cast<uint16_t>(v);
}

Result<std::pair<std::string, uint16_t>> parse_listen(const std::string& v) {
  auto bad = [&](const std::string& why) { return make_error(0, "--listen '" + v + "': " + why); };
  std::string host = v, port;
  if (!v.empty() && v.front() == '[') {
    const size_t rb = v.find(']');
    if (rb == std::string::npos) return bad("unterminated '[' (an IPv6 address is written [ADDR]:PORT)");
    host = v.substr(1, rb - 1);
    if (rb + 1 < v.size()) {
      if (v[rb + 1] != ':') return bad("expected ':PORT' after ']'");
      port = v.substr(rb + 2);
      if (port.empty()) return bad("empty port after ':'");
    }
  } else if (const size_t c = v.rfind(':'); c != std::string::npos && v.find(':') == c) {
    host = v.substr(0, c);
    port = v.substr(c + 1);
    if (port.empty()) return bad("empty port after ':'");
  }
  if (host == "*") host = "";
  uint16_t p = 0;
  if (!port.empty()) {
    auto pp = parse_port(port);
    if (!pp) return bad("port '" + port + "' is not a number from 1 to 65535");
    p = *pp;
  }
  return std::make_pair(host, p);
}

}  // namespace rcp::daemon
