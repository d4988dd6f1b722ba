/// Readiness and status for the service manager (sd_notify(3)). Every call is a
/// no-op when the process was not started by systemd with Type=notify
/// (NOTIFY_SOCKET unset), so the programs call them unconditionally.
#pragma once

#include <string_view>

namespace rcp {

/// READY=1: the daemon listens and accepts connections.
void notify_ready();
/// STOPPING=1: the daemon is shutting down.
void notify_stopping();
/// STATUS=...: a one-line status shown by `systemctl status`.
void notify_status(std::string_view status);

}  // namespace rcp
