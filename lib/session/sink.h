/// The sink role: writes the bytes, and is always the one that reads
/// remote memory. Each FILE_BEGIN is named and opened in the destination
/// (fs/destination.h); each CHUNK_READY is pulled with reads that scatter it
/// over free blocks of the sink's registered pool, verified against its
/// digest (fetched once more on a mismatch), written with io_uring
/// WRITE_FIXED into the temp file, and its slot returned as a credit
/// (CHUNK_DONE). At FILE_END the size and file digest are checked and the
/// file renamed into place; FILE_RESULT reports it, DONE ends the session.
#pragma once

#include "fs/destination.h"
#include "session/channel.h"
#include "session/options.h"
#include "util/result.h"

namespace rcp {

/// Receives files into dest over ch, as the sink of a session whose OPEN
/// has been answered. Files that fail are counted in the stats; an error is
/// returned only for a failed session (and sent to the peer as ERROR).
Result<TransferStats> run_sink(Channel& ch, Destination& dest, const SessionOptions& opt);

}  // namespace rcp
