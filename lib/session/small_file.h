/// SMALL_FILE (wire/messages.h): a small file sent whole in one record
/// instead of FILE_BEGIN, CHUNK_READY, a read and FILE_END. Both ends ask
/// the same question of a session: the source before it sends one, the sink
/// to refuse one in a session that needs more of a file.
#pragma once

#include "session/options.h"

namespace rcp {

/// May this session's small files travel whole? Not when a file needs what
/// only the chunked path does: a dry run (nothing is written, nothing
/// pulled), -c and --partial (the destination's own chunks compared or
/// reused), --fsync (flushed through the ring, several at once), -X/-A
/// (XATTR pieces between FILE_BEGIN and FILE_END) and -S (blocks of zeros
/// left as holes). Only what OPEN carries, so both ends answer alike; what
/// each end chooses alone (--direct, --bwlimit) keeps its own source from
/// sending whole (Source), and a sink with either takes a whole file anyway:
/// written buffered, its bytes counted by the sink's pacer.
bool small_files_whole(const SessionOptions& opt);

}  // namespace rcp
