/// RLIMIT_MEMLOCK and registered memory. Every buffer pool is pinned twice
/// over: as io_uring fixed buffers (both transports) and, over RDMA, as a
/// memory region (ibv_reg_mr). The kernel counts both against RLIMIT_MEMLOCK
/// and refuses with ENOMEM past it — for root too, unless the process holds
/// CAP_IPC_LOCK (being uid 0 is not enough: a systemd unit or container that
/// bounds capabilities leaves root under the limit). Debian's default is
/// 8 MiB, less than one session's default pool (16 x 1 MiB), so the failure
/// must say what is needed and how to raise it.
#pragma once

#include <cstdint>
#include <string>

#include "util/result.h"

namespace rcp {

struct MemlockState {
  bool unlimited = false;
  uint64_t limit = 0;         ///< soft limit in bytes (when !unlimited)
  uint64_t locked = 0;        ///< already locked or pinned by this process (VmLck + VmPin)
  bool cap_ipc_lock = false;  ///< effective CAP_IPC_LOCK: the limit does not apply
};

/// This process's state, from getrlimit and /proc/self/status.
MemlockState memlock_state();

/// Whether the limit explains a registration of `bytes` that failed with errno `err`.
bool memlock_explains(int err, uint64_t bytes, const MemlockState& s);

/// The advice for pinning `bytes` more (pure, for tests): the limit, the
/// number of KiB needed, how to raise it, and that root needs CAP_IPC_LOCK.
std::string memlock_advice(uint64_t bytes, const MemlockState& s);

/// The error for a registration (`what`, of `bytes`) that failed with
/// errno `err`: the advice added when the limit explains it.
Error registration_error(int err, uint64_t bytes, const std::string& what, const std::string& detail);

/// At start: "" when `bytes` (what the process pins at most) fit the limit,
/// else a warning with the same advice.
std::string memlock_warning(uint64_t bytes);

}  // namespace rcp
