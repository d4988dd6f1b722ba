/// The engine: one source and one sink state machine, written once and run
/// on any Transport. The source reads files with io_uring into its
/// registered pool and announces chunks; the sink pulls them with reads that
/// scatter into its own pool, verifies each chunk's digest, writes it with
/// io_uring into a temp file and returns the slot as a credit. Files are
/// renamed into place only when every byte is in and the file digest agrees.
///
/// This header gathers the engine's entry points; each concept has its own:
///   session/config.h    settings + negotiated limits -> SessionOptions (computed once)
///   session/options.h   SessionOptions, TransferStats
///   session/channel.h   Channel: control messages, with a backlog
///   session/source.h    run_source      session/sink.h   run_sink
///   session/loop.h      the epoll loop both roles share; session/pool.h their buffers
///   fs/sources.h        what a copy sends;  fs/destination.h  where it lands
#pragma once

#include "fs/destination.h"
#include "fs/sources.h"
#include "session/channel.h"
#include "session/options.h"
#include "session/plan.h"
#include "session/sink.h"
#include "session/source.h"

