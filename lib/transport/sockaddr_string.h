/// A socket address as peers and logs show it, for both transports (the
/// TCP sockets' and the rdma_cm ids' addresses are plain sockaddrs).
#pragma once

#include <sys/socket.h>

#include <string>

namespace rcp {

/// "10.0.0.1:7471", "[fe80::1]:7471", or "?" for null or another family.
std::string sockaddr_string(const sockaddr* sa);

}  // namespace rcp
