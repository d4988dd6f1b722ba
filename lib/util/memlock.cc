#include "util/memlock.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/core.h>

namespace rcp {

namespace {

constexpr int kCapIpcLock = 14;  // linux/capability.h CAP_IPC_LOCK

uint64_t kib_up(uint64_t bytes) { return (bytes + 1023) / 1024; }

}  // namespace

MemlockState memlock_state() {
  MemlockState s;
  rlimit rl{};
  if (::getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
    s.unlimited = rl.rlim_cur == RLIM_INFINITY;
    s.limit = s.unlimited ? 0 : rl.rlim_cur;
  } else {
    s.unlimited = true;  // unknown: claim nothing
  }
  if (FILE* f = std::fopen("/proc/self/status", "re")) {
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
      unsigned long long v = 0;
      if (std::sscanf(line, "VmLck: %llu kB", &v) == 1 || std::sscanf(line, "VmPin: %llu kB", &v) == 1)
        s.locked += v * 1024;
      if (std::sscanf(line, "CapEff: %llx", &v) == 1) s.cap_ipc_lock = (v >> kCapIpcLock) & 1;
    }
    std::fclose(f);
  }
  return s;
}

bool memlock_explains(int err, uint64_t bytes, const MemlockState& s) {
  return (err == ENOMEM || err == EPERM || err == EAGAIN) && !s.unlimited && !s.cap_ipc_lock &&
         s.locked + bytes > s.limit;
}

std::string memlock_advice(uint64_t bytes, const MemlockState& s) {
  const uint64_t need = kib_up(s.locked + bytes);
  return fmt::format(
      "RLIMIT_MEMLOCK is {} KiB and {} KiB must be locked ({} KiB for these buffers{}): raise it to at least {} KiB "
      "(more for connections at once) with `ulimit -l {}` or `ulimit -l unlimited` before starting, "
      "LimitMEMLOCK=infinity in the systemd unit, or a memlock line in /etc/security/limits.conf; "
      "this applies to root too unless it has CAP_IPC_LOCK",
      s.limit / 1024, need, kib_up(bytes), s.locked ? fmt::format(", {} KiB already locked", kib_up(s.locked)) : "",
      need, need);
}

Error registration_error(int err, uint64_t bytes, const std::string& what, const std::string& detail) {
  const MemlockState s = memlock_state();
  if (!memlock_explains(err, bytes, s)) return make_error(err, detail);
  return make_error(err, fmt::format("cannot lock {} of {} KiB: {}", what, kib_up(bytes), memlock_advice(bytes, s)));
}

std::string memlock_warning(uint64_t bytes) {
  const MemlockState s = memlock_state();
  if (s.unlimited || s.cap_ipc_lock || s.locked + bytes <= s.limit) return "";
  return "a session of this size cannot pin its buffers: " + memlock_advice(bytes, s);
}

}  // namespace rcp
