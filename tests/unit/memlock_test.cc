// The RLIMIT_MEMLOCK advice: names the limit and the KiB needed, says how to
// raise it and that root needs CAP_IPC_LOCK; given only when the limit explains the failure.
#include <doctest/doctest.h>

#include <cerrno>
#include <string>

#include "util/memlock.h"

using namespace rcp;

namespace {
bool has(const std::string& s, const std::string& w) { return s.find(w) != std::string::npos; }
}  // namespace

TEST_CASE("memlock: the advice names the limit, the KiB needed and how to raise it, also for root") {
  MemlockState s;
  s.limit = 64 * 1024;
  s.locked = 1024 * 1024;
  const std::string a = memlock_advice(16u << 20, s);
  INFO(a);
  CHECK(has(a, "RLIMIT_MEMLOCK is 64 KiB"));
  CHECK(has(a, "17408 KiB must be locked"));  // 16 MiB asked + 1 MiB already locked
  CHECK(has(a, "16384 KiB for these buffers"));
  CHECK(has(a, "ulimit -l 17408"));
  CHECK(has(a, "LimitMEMLOCK=infinity"));
  CHECK(has(a, "root too unless it has CAP_IPC_LOCK"));
}

TEST_CASE("memlock: only a limit that is exceeded, without CAP_IPC_LOCK, explains ENOMEM") {
  MemlockState s;
  s.limit = 64 * 1024;
  CHECK(memlock_explains(ENOMEM, 1u << 20, s));
  CHECK_FALSE(memlock_explains(EINVAL, 1u << 20, s));  // another failure
  CHECK_FALSE(memlock_explains(ENOMEM, 4096, s));      // fits: not the limit
  MemlockState cap = s;
  cap.cap_ipc_lock = true;  // root with CAP_IPC_LOCK (or anyone with it) is exempt
  CHECK_FALSE(memlock_explains(ENOMEM, 1u << 20, cap));
  MemlockState unl = s;
  unl.unlimited = true;
  CHECK_FALSE(memlock_explains(ENOMEM, 1u << 20, unl));
}

TEST_CASE("memlock: a registration error carries the advice only when the limit explains it") {
  const MemlockState now = memlock_state();
  const Error e = registration_error(EINVAL, 1u << 20, "the buffer pool", "ibv_reg_mr: bad");
  CHECK(e.context == "ibv_reg_mr: bad");
  const uint64_t huge = uint64_t{1} << 46;  // 64 TiB: beyond any finite limit
  const Error big = registration_error(ENOMEM, huge, "the buffer pool", "ibv_reg_mr: no memory");
  if (!now.unlimited && !now.cap_ipc_lock)
    CHECK(has(big.context, "cannot lock the buffer pool of"));
  else
    CHECK(big.context == "ibv_reg_mr: no memory");
}
