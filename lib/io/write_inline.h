/// Which file writes the session loop does itself instead of through io_uring.
///
/// tmpfs (and ramfs) refuse non-blocking buffered writes, so io_uring punts
/// every write to them to an io-wq worker thread, which then copies out of
/// pool memory that the loop's core has just filled: on loopback, 2 GiB into
/// tmpfs, the sink's write copies cost 1.7x socat's, and a plain pwrite on
/// the loop measured 0.68 -> 0.58 CPU-s/GiB (bench/README.md). A write to
/// memory never waits for a device, so the loop stalls only for the copy it
/// would have paid for anyway. Every other file system keeps io_uring, whose
/// writes may block on a disk.
#pragma once

namespace rcp {

/// Whether writes to this open file land in memory only (tmpfs, ramfs):
/// then the sink writes them inline with pwrite. false when unknown.
bool write_inline(int fd);

/// The same for the source's reads: io_uring punts buffered reads from tmpfs
/// to an io-wq worker too (an iou-wrk thread of the sending rcp took a third
/// of its CPU in a 2 GiB push). pread on the loop instead, measured on
/// loopback at load 12, interleaved: sending side 0.96 -> 0.86 CPU-s/GiB
/// (push, median of 4), 1.04 -> 0.93 (pull, median of 3); perf stat of the
/// sending rcp: 1,490 -> 1,060 context switches and 0.85 -> 0.75 task-clock
/// s per GiB (bench/README.md, "TCP CPU profile").
bool read_inline(int fd);

}  // namespace rcp
