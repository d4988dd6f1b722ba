/// How many CPUs this process may run on: the automatic choices that depend
/// on the host (session/config.h hash_threads_for) ask once, at start-up.
#pragma once

namespace rcp {

/// The CPUs in this process's affinity mask (taskset, cgroup cpusets), not
/// the host's count; 0 if it cannot be read.
unsigned usable_cpus();

}  // namespace rcp
