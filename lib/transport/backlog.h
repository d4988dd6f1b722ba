/// Control messages a transport holds for its peer (queued, or handed to
/// the kernel or the NIC and not yet sent) are bounded. Without a bound a
/// peer that stops reading grows them for as long as it keeps talking: each
/// empty file a pushing client announces costs the daemon a FILE_RESULT
/// (≈ 60 bytes, ≈ 190 held with its bookkeeping), a million of them 190 MB.
///
/// What an honest peer leaves unread stays far below: the source keeps at
/// most kMaxFilesInFlight (1,024) files unanswered and kMaxSlots (4,096)
/// chunks out, so the answers owed to it are ≈ 1 MiB; a sink's own bulk
/// (--delete's removals) waits below kUnsentSoft before it is queued. A
/// transport refuses a message that would take the backlog past kMaxUnsent
/// (the session ends, naming the peer that does not read; the daemon
/// serves everyone else), much as TCP's READ_REQ replies are bounded by
/// the reads agreed (tcp/framing.cc).
#pragma once

#include <cstddef>
#include <string>

#include "util/result.h"

namespace rcp {

/// Bytes of messages held for one peer, bookkeeping included (unsent_cost).
constexpr size_t kMaxUnsent = size_t{32} << 20;
/// Below this a role queues messages of its own making (not answers).
constexpr size_t kUnsentSoft = size_t{4} << 20;
/// What holding one message of n bytes costs: the bytes and ≈ 128 of
/// bookkeeping (its buffer's allocation, the queue entry).
constexpr size_t unsent_cost(size_t n) { return n + 128; }

/// The refusal: ENOBUFS, naming the peer and what it left unread.
Error unsent_error(const std::string& peer, size_t held, size_t messages);

}  // namespace rcp
