/// The source role: holds the bytes. Opens each file when its turn comes
/// (fs/sources.h), reads it with io_uring READ_FIXED into the slots of its
/// registered pool, hashes each chunk and announces it (CHUNK_READY: address,
/// key, digest) for the sink to pull; a CHUNK_DONE returns slots to refill.
/// FILE_END carries the file digest; the sink answers each file with a
/// FILE_RESULT and the session with DONE.
#pragma once

#include <vector>

#include "fs/sources.h"
#include "session/channel.h"
#include "session/options.h"
#include "util/result.h"

namespace rcp {

/// The most a source hashes and announces in one turn of its loop (chunks
/// read inline from tmpfs, or through the ring) before the loop polls its
/// transport again, which hands the peer what was announced so far and
/// serves its requests. Reading and hashing a whole free window first (16
/// MiB at the start) kept the sink idle meanwhile: 16 MiB
/// over TCP loopback took 26.2 -> 24.0 ms to pull and 25.6 -> 24.5 ms to
/// push with 2 MiB, 1 GiB pulls 447 -> 427 ms (medians of 40 and 10
/// interleaved runs); 1 MiB measured as 2 MiB did, 128 KiB files did not
/// move.
constexpr uint64_t kReadPerTurn = 2u << 20;

/// Sends `files` in order over ch, as the source of a session whose OPEN
/// has been answered. Files that fail are counted in the stats; an error is
/// returned only for a failed session (and sent to the peer as ERROR).
Result<TransferStats> run_source(Channel& ch, std::vector<SourceOpener> files, const SessionOptions& opt);
/// The same, walking what it sends as it goes (fs/sources.h).
Result<TransferStats> run_source(Channel& ch, SourceStream files, const SessionOptions& opt);

}  // namespace rcp
