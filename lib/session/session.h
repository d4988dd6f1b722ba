/// The engine: one source and one sink state machine, written once and run
/// on any Transport. The source reads files with io_uring into its
/// registered pool and announces chunks; the sink pulls them with reads that
/// scatter into its own pool, verifies each chunk's digest, writes it with
/// io_uring into a temp file and returns the slot as a credit. Files are
/// renamed into place only when every byte is in and the file digest agrees.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fs/path.h"
#include "hash/digest.h"
#include "session/plan.h"
#include "transport/transport.h"
#include "util/fd.h"
#include "util/result.h"
#include "wire/messages.h"

namespace rcp {

struct SessionOptions {
  Checksum checksum = Checksum::xxh128;
  uint32_t chunk_size = 1u << 20;  ///< source: bytes per chunk (and per slot)
  uint32_t slots = 16;             ///< source: slots in its pool (chunks announced at once)
  uint32_t block_size = 64u << 10; ///< sink: bytes per block; a chunk scatters over several
  uint32_t blocks = 256;           ///< sink: blocks in its pool
  bool fsync = false;
  /// Digest workers off the loop; 0 hashes on the loop itself. 1 by default:
  /// on the 2-core test hosts 2 workers per side measured slower than 1
  /// (both ends share the cores); raise it on hosts with cores to spare.
  unsigned hash_threads = 1;
  int idle_timeout_ms = 30000;
  const std::atomic<bool>* cancel = nullptr;  ///< set by a signal handler to abort
};

/// One file the source will send, already opened.
struct SourceFile {
  Fd fd;
  uint64_t size = 0;
  uint32_t mode = 0644;
  bool is_dir = false;  ///< a directory entry of a recursive copy (no data, no fd)
  std::string name;   ///< the name the sink gives it when its destination is a directory; may
                      ///< hold '/'-separated components in a recursive copy
  std::string shown;  ///< for messages
};
using SourceOpener = std::function<Result<SourceFile>()>;

/// Opens a local regular file for sending.
Result<SourceFile> open_source_file(int dir_fd, const std::string& path, std::string shown, bool beneath);

/// What a recursive copy of the directory `dir` sends: the directory itself
/// (named `base`, unless base is "" — then its contents land directly in the
/// destination) and everything below it, files opened beneath dir when their
/// turn comes. Symlinks and special files are skipped and listed in `skipped`.
Result<std::vector<SourceOpener>> tree_sources(std::shared_ptr<Fd> dir, const std::string& base, unsigned mode,
                                               const std::string& shown, std::vector<std::string>& skipped);

struct TransferStats {
  uint64_t bytes = 0;
  uint32_t files_ok = 0;
  uint32_t files_failed = 0;
  std::vector<std::string> errors;  ///< one line per failed file
};

/// A connection's control channel with a backlog, so that messages that
/// arrive together with the one awaited are not lost.
class Channel {
 public:
  explicit Channel(Transport& t) : t_(t) {}
  Transport& transport() { return t_; }
  Status send(const wire::Message& m);
  /// Waits for the next control message (only before the data phase).
  Result<wire::Message> receive(int timeout_ms, const std::atomic<bool>* cancel = nullptr);
  /// Next event: from the backlog, else from one poll of the transport.
  Status poll(std::vector<TransportEvent>& out);

 private:
  Transport& t_;
  std::vector<TransportEvent> backlog_;
};

Result<TransferStats> run_source(Channel& ch, std::vector<SourceOpener> files, const SessionOptions& opt);
Result<TransferStats> run_sink(Channel& ch, Destination& dest, const SessionOptions& opt);

}  // namespace rcp
