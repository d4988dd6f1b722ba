/// RLIMIT_NOFILE at start. A receiver holds one descriptor per file it is
/// receiving (its temp file, and the file it replaces when chunks are
/// reused): a pull of 5,000 files of 4 KiB over TCP loopback peaked at 398
/// descriptors in rcp, so under a soft limit of 256 it failed 138 files with
/// EMFILE. The soft limit is advisory — a process may raise it to the hard
/// limit itself, and the common defaults leave that far above (systemd:
/// 1,024 soft, 524,288 hard) — so both programs raise it at start, as
/// systemd's documentation asks of programs that need many descriptors.
/// select(2) is never used, so a descriptor above FD_SETSIZE is harmless.
#pragma once

#include <sys/resource.h>

#include <string>

namespace rcp {

/// The soft limit for a process whose limits are `lim` (pure, for tests):
/// the hard limit, or `cap` when that is lower (RLIM_INFINITY is never
/// asked for: a soft limit above fs.nr_open fails with EPERM).
rlim_t raised_nofile(const rlimit& lim, rlim_t cap);

/// Raises this process's soft RLIMIT_NOFILE to its hard limit (at most
/// `cap`, 1 Mi by default: the kernel's default fs.nr_open). Returns the soft
/// limit in force afterwards; a failed setrlimit leaves the limit as it was.
rlim_t raise_nofile_limit(rlim_t cap = rlim_t{1} << 20);

/// What an EMFILE message adds (util/result.cc's Error::message()):
/// " (RLIMIT_NOFILE allows N; ...)": the limit in force and how to
/// raise its hard limit.
std::string nofile_advice();

}  // namespace rcp
