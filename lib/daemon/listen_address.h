/// rcpd's --listen ADDR[:PORT], checked in the user's words.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "util/result.h"

namespace rcp::daemon {

/// A port from the command line: digits only, 1-65535.
std::optional<uint16_t> parse_port(std::string_view s);

/// --listen ADDR[:PORT]: "*" (or "") for every address (TCP: IPv4 and IPv6);
/// an IPv6 address in brackets when a port follows ("[::1]:7472"), bare
/// otherwise ("::1"). The port is 0 when none is given. Errors are whole
/// sentences for the user, naming the value.
Result<std::pair<std::string, uint16_t>> parse_listen(const std::string& v);

}  // namespace rcp::daemon
