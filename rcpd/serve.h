// One connection of rcpd, from its OPEN to its end: admission, the module's
// limits, then the session as sink (a put) or source (a get); every failure
// is sent to the client and logged, none escapes.
#pragma once

#include <string>

#include "daemon.h"
#include "transport/transport.h"

namespace rcp::rcpd {

/// Handles one connection from its OPEN to its end.
void serve(Daemon& d, Transport& t);

/// A connection beyond --max-connections: read its OPEN, answer that the
/// daemon is full (the client prints it and exits 5), close.
void refuse_busy(Transport& t, const std::string& why);

}  // namespace rcp::rcpd
