// rcpd's state shared by its files: what it serves (swapped on SIGHUP),
// the settings every session starts from, and the stop flag the signals set.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "daemon/exports.h"
#include "session/config.h"
#include "transport/rails_option.h"

namespace rcp::rcpd {

/// SIGINT/SIGTERM: every session's waits look at it (main.cc sets it).
extern std::atomic<bool> g_stop;

struct Daemon {
  /// What is served now; SIGHUP swaps in a new one, sessions keep theirs.
  std::mutex mu;
  std::shared_ptr<const daemon::Exports> exports;
  std::string config_file;  ///< "" when the modules came from --export
  Settings settings;  ///< every session's, but for the checksum and fsync its OPEN asks for
  RailsOption rails;  ///< --rails: the devices offered as more rails (not enabled: all)
  uint32_t max_connections = 64;
  uint32_t max_per_host = 0;  ///< 0: none
  double hello_timeout = 10;  ///< seconds for a whole TCP hello
  std::map<std::string, uint32_t> module_sessions;  ///< by module name, those with a max_connections
  std::shared_ptr<const daemon::Exports> current() {
    std::lock_guard lk(mu);
    return exports;
  }
  bool enter_module(const std::string& name, uint32_t max) {
    std::lock_guard lk(mu);
    uint32_t& n = module_sessions[name];
    if (n >= max) return false;
    ++n;
    return true;
  }
  void leave_module(const std::string& name) {
    std::lock_guard lk(mu);
    if (auto it = module_sessions.find(name); it != module_sessions.end() && --it->second == 0) module_sessions.erase(it);
  }
};

}  // namespace rcp::rcpd
