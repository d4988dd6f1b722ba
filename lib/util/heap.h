/// Giving freed heap memory back to the kernel.
///
/// rcpd runs each handshake and session on a thread of its own, and glibc
/// gives threads their own malloc arenas (up to 8 per core). What a thread
/// frees stays in its arena, resident, until the arena's top shrinks — which
/// fragmentation rarely lets happen. Measured on rcpd after 200 connections
/// stalled in the TLS handshake (limits suite): +2.1 to +12.6 MiB resident
/// that never came back, varying run to run with how the 64 concurrent
/// handshakes spread over the arenas. malloc_trim walks every arena and
/// returns the free pages inside it too: +0.5 to +1.9 MiB after the same
/// flood (6 runs), the rest being chunks in use and each arena's first pages.
#pragma once

namespace rcp {

/// Returns the heap's free pages to the kernel (every arena). Takes each
/// arena's lock in turn, so callers rate-limit it (rcpd: when its accept
/// loop has been idle for 500 ms after connections ended). A no-op where the
/// C library has no malloc_trim.
void release_free_heap();

}  // namespace rcp
