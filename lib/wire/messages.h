/// The rcp control protocol: every message the engine exchanges on the
/// control channel (RDMA SEND/RECV or a TCP frame), and the hello carried in
/// the rdma_cm connect private data. All integers are big-endian; every
/// message starts with magic, version, type and payload length, and a
/// decoder accepts a message only if every field fits and nothing is left over.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "util/result.h"

namespace rcp::wire {

constexpr uint32_t kMagic = 0x52435030;  // "RCP0"
/// 2: FILE_SKIPPED (a source reports each file it cannot send).
/// 3: FILE_BEGIN carries mtime_ns; FILE_RESULT says skipped/pulled/matched;
///    STOP_FILE (the sink has the file already).
/// 4: OPEN carries more source paths and filter rules; DONE the entries deleted.
/// 5: WALK_TOTALS (the source's count of what it sends, for the sink's progress line).
/// 6: FILE_BEGIN carries, after the name, the entry's owner, group, symlink
///    target, device number and hard-link leader; OPEN carries the metadata
///    to preserve (-a/-p/-o/-g/-l/-D/-H) and the contents/mkpath flags.
/// 7: HOLE (a range of a file that is all zeros: no chunk is sent for it);
///    OPEN's preserve carries --discard.
/// 8: OPEN's dry-run flag (-n); FILE_RESULT carries the changes made
///    (-i, fs/itemize.h); ENTRY_DELETED (sink → source: --delete's removals).
/// 9: FILE_SKIPPED says whether the entry vanished (exit 24).
/// 10: XATTR (-X/-A: an entry's extended attributes, in pieces); OPEN's
///     preserve carries -X and -A; FILE_RESULT's changes the 'a' and 'x' letters.
///     Also multi-rail RDMA sessions (wire/rails.h): the daemon's accept may list
///     its other rails' addresses, a join may name a rail, RAIL_KEYS.
/// 11: RDMA: the first queue pair carries control only (rcpd takes its
///     receives from a shared receive queue); hello's qps counts it, and
///     every accept carries the session token the data queue pairs join with.
/// 12: SMALL_FILE (a small file whole in one record, over TCP).
constexpr uint16_t kVersion = 12;
/// The version this process speaks: kVersion, unless the test-only fault
/// switch RCP_TEST_FAULT=protocol-version=N makes it pretend to be another
/// release (so the suite can prove a mismatch is refused with a clear error).
uint16_t protocol_version();
/// magic u32 + version u16 + type u16 + payload length u32.
constexpr size_t kHeaderSize = 12;
/// Largest control message, header included. RDMA receive buffers are this
/// size; 4096 fits a path of kMaxPath bytes with room to spare and is one page.
constexpr size_t kMaxMessage = 4096;
/// Longest path or name accepted from the wire (Linux PATH_MAX is 4096 with
/// the terminator; 3072 keeps every message inside kMaxMessage).
constexpr size_t kMaxPath = 3072;
/// Longest error text carried on the wire.
constexpr size_t kMaxText = 1024;
/// Largest digest (SHA-256).
constexpr size_t kMaxDigest = 32;
/// Most slots one ChunkDone may return (keeps it far below kMaxMessage).
constexpr size_t kMaxDoneBatch = 256;
/// Largest chunk either side will announce or accept: 64 MiB bounds what a
/// peer can make us pin for one chunk.
constexpr uint32_t kMaxChunk = 64u << 20;
/// Longest user or group name carried in FILE_BEGIN.
constexpr size_t kMaxIdName = 255;

enum class MsgType : uint16_t {
  open = 1,
  open_ok = 2,
  file_begin = 3,
  chunk_ready = 4,
  chunk_done = 5,
  file_end = 6,
  file_result = 7,
  finish = 8,
  done = 9,
  error = 10,
  file_skipped = 11,
  module_list = 12,
  stop_file = 13,
  walk_totals = 14,
  hole = 15,
  entry_deleted = 16,
  xattr = 17,
  small_file = 18,
};

/// list: OPEN's path is empty; the daemon answers with MODULE_LIST (no OPEN_OK).
enum class Op : uint8_t { put = 1, get = 2, list = 3 };

/// Checksum algorithms; the numeric values are also bits in Hello::checksums.
enum class Checksum : uint8_t { none = 0, xxh128 = 1, sha256 = 2 };

struct Digest {
  uint8_t len = 0;
  std::array<uint8_t, kMaxDigest> bytes{};
  bool operator==(const Digest& o) const {
    return len == o.len && len <= kMaxDigest && std::equal(bytes.begin(), bytes.begin() + len, o.bytes.begin());
  }
};

/// Client → daemon: what this connection is for. For put, path is the
/// destination; for get, the source. Both are relative to the export:
/// "MODULE/PATH".
struct Open {
  Op op = Op::put;
  Checksum checksum = Checksum::xxh128;
  uint32_t flags = 0;  // (u16 before protocol 8) kOpenMulti: several sources, so the destination must be a directory
  std::string path;
  /// get: more sources in the same module, relative to it (no "MODULE/"),
  /// sent in this order after `path`'s — one session for many files. At most
  /// kMaxOpenPaths, each at most kMaxPath bytes, all inside one message.
  std::vector<std::string> more;
  /// Filter rules ("+ PATTERN" / "- PATTERN", fs/filter.h), in order: a get's
  /// source applies them to what it sends; a put's sink protects what they
  /// exclude from --delete. At most kMaxOpenRules of kMaxOpenRuleLen bytes.
  std::vector<std::string> filters;
  /// The metadata to preserve: fs/metadata.h Preserve::bits(); a bit outside
  /// kPreserveKnown is refused by the decoder.
  uint32_t preserve = 0;
};
constexpr uint32_t kPreserveKnown = (1u << 14) - 1;
constexpr uint16_t kOpenMulti = 1;
constexpr uint16_t kOpenFsync = 2;
constexpr uint16_t kOpenRecursive = 4;  // get: a directory source is sent with everything below it
/// How the sink (the daemon on a put, the client on a get) treats a file
/// that exists at the destination (rsync's options of the same names):
constexpr uint16_t kOpenChecksum = 8;         // -c: compare content, not size and mtime
constexpr uint16_t kOpenIgnoreExisting = 16;  // --ignore-existing: never replace an existing file
constexpr uint16_t kOpenExisting = 32;        // --existing: never create a file
constexpr uint16_t kOpenUpdate = 64;          // -u: keep a destination file newer than the source's
constexpr uint16_t kOpenWholeFile = 128;      // --whole-file: no chunk reuse from the existing file
constexpr uint16_t kOpenPartial = 256;        // --partial: keep what an interrupted copy wrote, reuse it next time
/// --delete: the sink removes what the source did not send from the
/// directories the source sends (fs/prune.h); kOpenDeleteAfter: only once
/// every file is in. kOpenDeleteRoot: the destination directory itself is
/// being copied (a source "." or an export's root), so it is pruned too.
constexpr uint16_t kOpenDelete = 1u << 9;
constexpr uint16_t kOpenDeleteAfter = 1u << 10;
constexpr uint16_t kOpenDeleteRoot = 1u << 11;
/// get (--files-from): each entry keeps its path below the module ("a/b/c"
/// arrives as a/b/c, not as c), as rsync's --relative.
constexpr uint16_t kOpenRelative = 1u << 12;
constexpr size_t kMaxOpenPaths = 1024;
constexpr size_t kMaxOpenRules = 256;
constexpr size_t kMaxOpenRuleLen = 1024;
/// Bytes `o` takes on the wire, header included (a client fills an OPEN up to
/// kOpenBudget: kMaxMessage less room for an authenticated session's MAC).
size_t open_size(const Open& o);
constexpr size_t kOpenBudget = kMaxMessage - 64;
/// get: the source path ended in '/': a directory's contents are sent, not
/// the directory itself (rsync's "src/" versus "src").
constexpr uint16_t kOpenContents = 1u << 13;
/// put: the destination is a directory (-r, several sources or a trailing
/// '/'): created with its missing parents when it does not exist (--mkpath).
constexpr uint16_t kOpenMakeDir = 1u << 14;
/// -n/--dry-run: the sink changes nothing (no file, directory, temp file,
/// metadata or deletion) and fetches no data: it stops every file, answers
/// each with what it would have done (FILE_RESULT skipped 0 = would write,
/// changes = what would change) and lists --delete's removals without
/// making them. A daemon older than protocol 8 refuses this bit (and the
/// hello's version check refuses that daemon first).
constexpr uint16_t kOpenDryRun = 1u << 15;
/// Every bit a peer may set; an OPEN with another bit is refused.
constexpr uint32_t kOpenKnownFlags = (1u << 16) - 1;

struct OpenOk {
  uint8_t dest_is_dir = 0;
};

/// Source → sink: an entry starts. name is its name (no directories, but
/// '/'-separated below a recursive copy) for the sink to use when its
/// destination is a directory. mode: S_IFMT type bits (0 or S_IFREG: a
/// regular file; S_IFDIR, S_IFLNK, S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK) and
/// permission bits 07777; nothing else. Only a regular file has a size
/// (data follows in chunks); only a symlink a link_target (1 to kMaxPath
/// bytes, no NUL, verbatim: never resolved by the sink); only a device an
/// rdev. user/group name uid/gid for the sink to map (at most kMaxIdName
/// bytes, no NUL; "" = use the number). link_to (-H, regular files only):
/// 0, or file_id itself for the first of a hard-link group (the sink keeps
/// its place), or an earlier file_id of that group: this entry is a hard
/// link to it and carries no data (size 0).
struct FileBegin {
  uint32_t file_id = 0;
  uint64_t size = 0;
  uint32_t mode = 0644;
  int64_t mtime_ns = 0;  ///< the source's modification time, ns since the epoch
  std::string name;
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string user;
  std::string group;
  std::string link_target;
  uint64_t rdev = 0;
  uint32_t link_to = 0;
};

/// Source → sink: a chunk sits in the source's registered memory at
/// (addr, rkey) and may be pulled; digest is of its bytes.
struct ChunkReady {
  uint32_t file_id = 0;
  uint32_t slot = 0;
  uint64_t offset = 0;
  uint32_t length = 0;
  uint64_t addr = 0;
  uint32_t rkey = 0;
  Digest digest;
};

/// Sink → source: these slots were pulled and may be reused (the credit).
struct ChunkDone {
  std::vector<uint32_t> slots;
};

/// Source → sink: no more chunks of this file; digest is over the ordered chunk digests.
struct FileEnd {
  uint32_t file_id = 0;
  uint64_t size = 0;
  Digest digest;
};

/// Sink → source: the file is committed (err == 0) or failed. skipped: the
/// destination already had it (nothing written). pulled: file bytes that
/// crossed the network for it (re-fetches included); matched: bytes taken
/// from the destination's existing file because their chunk digests matched.
/// The source checks both against the file's size.
struct FileResult {
  uint32_t file_id = 0;
  int32_t err = 0;
  uint8_t skipped = 0;  ///< 0 or 1
  uint64_t pulled = 0;
  uint64_t matched = 0;
  std::string message;
  /// What the sink changed (dry run: would change) in the destination
  /// entry: fs/itemize.h's kChange* bits, 0 for none or a failed entry. A
  /// bit outside kResultChangesKnown is refused by the decoder.
  uint16_t changes = 0;
};
constexpr uint16_t kResultChangesKnown = (1u << 11) - 1;

/// Source → sink: no more files.
struct Finish {};

/// Sink → source: every FileResult has been sent; the session may close.
struct Done {
  uint32_t files_ok = 0;
  uint32_t files_failed = 0;
  uint32_t files_deleted = 0;  ///< --delete: entries the sink removed
};

/// Either way: the session failed; message names what failed.
struct ErrorMsg {
  int32_t err = 0;
  std::string message;
};

/// Source → sink: an entry the source does not send, in its place among the
/// files. err != 0: the source could not open or read it (unreadable,
/// vanished, a FIFO, socket or device named explicitly): the sink counts a
/// failed file, so the copy ends non-zero naming it. err == 0: a notice — a
/// symlink or special file below a recursive copy, skipped by design (the
/// pull shows it as the push does). message names the entry. No FILE_RESULT
/// answers it: nothing was begun. vanished = 1 (only with err != 0): the
/// entry was listed and gone when its turn came (rsync's "file has
/// vanished"), which alone ends the copy with 24 rather than 23.
struct FileSkipped {
  int32_t err = 0;
  std::string message;
  uint8_t vanished = 0;
};

/// Daemon → client, the answer to an OPEN with Op::list: the modules this
/// client may see, in the daemon's order. Bounded so it fits one message:
/// at most kMaxModules entries, names and comments at most kMaxModuleText
/// bytes each, and the whole message within kMaxMessage; `truncated` says
/// the daemon had more than fit.
struct ModuleList {
  struct Entry {
    std::string name;
    std::string comment;
  };
  std::vector<Entry> modules;
  uint8_t truncated = 0;
};
constexpr size_t kMaxModules = 64;

/// Sink → source, right after a FILE_BEGIN: the destination already has this
/// file (quick check, --ignore-existing, ...), so send no more of its chunks.
/// Chunks already announced are returned unread; FILE_END still follows (its
/// digest is not checked) and FILE_RESULT answers it with skipped = 1.
struct StopFile {
  uint32_t file_id = 0;
};
constexpr size_t kMaxModuleText = 255;

/// Source → sink: what the source's walk has produced so far — entries
/// (files and directories as FILE_BEGINs, and FILE_SKIPPEDs with an error)
/// and the bytes of their sizes —
/// so the sink's progress line can show a total and an ETA (rsync's
/// --info=progress2). final = 1: the walk is over and these are the totals
/// of the session; 0: a count that may still grow (rsync's "ir-chk"). Sent
/// after the FILE_BEGINs it counts, never decreasing, at most one final one,
/// and no FILE_BEGIN after it may exceed it (the sink refuses a liar).
/// files fits a file id (u32): a source never begins more.
struct WalkTotals {
  uint64_t files = 0;
  uint64_t bytes = 0;
  uint8_t final = 0;  ///< 0 or 1
};
constexpr uint64_t kMaxWalkFiles = UINT32_MAX;

/// Source → sink: bytes [offset, offset + length) of a regular file begun
/// and not ended are a hole (SEEK_DATA found no data there), so they read as
/// zeros and no chunk is sent for them. The sink leaves them unallocated
/// (-S), allocates them as zeros, or on a device writes or discards them
/// (--discard). Like a chunk, a hole is claimed in the file's ledger: one
/// that is empty, leaves the file or overlaps a chunk or another hole is
/// refused. Its place in the file digest is hole_digest (session/loop.h),
/// folded in offset order with the chunk digests, so the FILE_END digest
/// covers the holes too. An honest source sends whole chunks only.
struct Hole {
  uint32_t file_id = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
};

/// Sink → source, only in a session with --delete (kOpenDelete): the sink
/// removed (dry run: would remove) this entry, its path below the
/// destination (1 to kMaxPath bytes, no NUL), so the pushing client can
/// list it (-i, -n). Sent before DONE; DONE's files_deleted counts them,
/// and the source refuses more ENTRY_DELETEDs than that (or any without
/// --delete).
struct EntryDeleted {
  std::string name;
  uint8_t is_dir = 0;  ///< 0 or 1
};

/// Source → sink (-X/-A), between an entry's FILE_BEGIN and its FILE_END:
/// a piece of one of the entry's extended attributes (an ACL is the xattr
/// system.posix_acl_access or _default, carried verbatim). A value may be
/// 64 KiB and a control message is at most kMaxMessage (4 KiB), so a value
/// travels in pieces of at most kMaxXattrPiece bytes, in order: the first at
/// offset 0, each next one where the one before ended, all with the same
/// name and total; the value is complete when offset + data.size() == total
/// (a 0-byte value is one empty piece). The decoder holds each piece to
/// Linux's bounds (name 1 to XATTR_NAME_MAX bytes without NUL, total at most
/// XATTR_SIZE_MAX, the piece inside its value); the sink holds an entry's
/// xattrs to fs/xattr_rules.h's XattrTally (count, bytes, no repeat, only
/// the names asked for) and the pieces to their order.
struct XattrPiece {
  uint32_t file_id = 0;
  std::string name;
  uint32_t total = 0;   ///< the value's length, bytes
  uint32_t offset = 0;  ///< where in the value this piece goes
  std::string data;     ///< at most kMaxXattrPiece bytes; empty only when total is 0
};
/// Linux's XATTR_NAME_MAX and XATTR_SIZE_MAX (fs/xattr_rules.h has the same).
constexpr size_t kMaxXattrNameLen = 255;
constexpr uint32_t kMaxXattrValueLen = 65536;
/// Bytes of a value per XATTR: with a name of 255 bytes the message is 3,355
/// bytes, inside kMaxMessage less an authenticated session's 64-byte MAC.
constexpr size_t kMaxXattrPiece = 3072;

/// Source → sink: a small regular file whole, in one record: what its
/// FILE_BEGIN would say, the digest of its one chunk (offset 0, the whole
/// file; session/loop.h chunk_digest) and its bytes. It stands for FILE_BEGIN,
/// CHUNK_READY, the read and FILE_END: the sink verifies the bytes against
/// the digest, writes and commits the file and answers with a FILE_RESULT
/// (pulled = its size). Only a plain regular file of 1 to kMaxFileData bytes
/// with no hard link (the decoder refuses others), only where a message
/// may exceed kMaxMessage (TCP: Transport::max_message()), and only in a
/// session whose options need nothing more of a file
/// (session/small_file.h: the sink refuses it in any other).
struct SmallFile {
  FileBegin begin;
  Digest digest;
  std::string data;
};
/// 4 KiB: the page, and the files of bench/run's small-file rows. The data
/// rides in the message, so this bounds what one receive holds.
constexpr size_t kMaxFileData = 4096;
/// The largest message of all, SMALL_FILE's: a FILE_BEGIN that fits
/// kMaxMessage, a digest (33 bytes with its length), the data with its
/// 2-byte length, and an authenticated session's MAC; every other message
/// stays within kMaxMessage (max_message()).
constexpr size_t kMaxLargeMessage = kMaxMessage + kMaxFileData + 128;
/// Bytes `m` takes on the wire, header included.
size_t small_file_size(const SmallFile& m);

/// Every control message. The order is the wire: alternative i travels as
/// MsgType i + 1 (checked below), and decode() picks the alternative by that
/// index, so there is no switch to forget a case in.
///
/// Adding a message (each step but the first is a build error when missed):
///  1. its struct above, and a MsgType enumerator equal to its position + 1;
///  2. append it to Message below;
///  3. its entry in MsgTraits (type and name) below;
///  4. encode: its lambda in the overloaded{} visit of encode() (messages.cc);
///  5. decode: a read_body(Reader&, T&) overload (messages.cc);
///  6. its handler in Source::on_message (session/source.cc) and
///     Sink::on_message (session/sink.cc): both visit with overloaded{} and
///     no generic branch, so even a message a role never expects is named
///     there (and refused as "unexpected");
///  7. a sample in tests/unit/wire_test.cc samples(), which round-trips and
///     truncates every message.
using Message = std::variant<Open, OpenOk, FileBegin, ChunkReady, ChunkDone, FileEnd, FileResult,
                             Finish, Done, ErrorMsg, FileSkipped, ModuleList, StopFile, WalkTotals, Hole,
                             EntryDeleted, XattrPiece, SmallFile>;

/// The wire type and the name (for logs and errors) of each message. No
/// primary definition: a message without an entry does not compile.
template <class M>
struct MsgTraits;
#define RCP_WIRE_MSG(T, enumerator, text)                 \
  template <>                                             \
  struct MsgTraits<T> {                                   \
    static constexpr MsgType type = MsgType::enumerator;  \
    static constexpr const char* name = text;             \
  }
RCP_WIRE_MSG(Open, open, "OPEN");
RCP_WIRE_MSG(OpenOk, open_ok, "OPEN_OK");
RCP_WIRE_MSG(FileBegin, file_begin, "FILE_BEGIN");
RCP_WIRE_MSG(ChunkReady, chunk_ready, "CHUNK_READY");
RCP_WIRE_MSG(ChunkDone, chunk_done, "CHUNK_DONE");
RCP_WIRE_MSG(FileEnd, file_end, "FILE_END");
RCP_WIRE_MSG(FileResult, file_result, "FILE_RESULT");
RCP_WIRE_MSG(Finish, finish, "FINISH");
RCP_WIRE_MSG(Done, done, "DONE");
RCP_WIRE_MSG(ErrorMsg, error, "ERROR");
RCP_WIRE_MSG(FileSkipped, file_skipped, "FILE_SKIPPED");

RCP_WIRE_MSG(ModuleList, module_list, "MODULE_LIST");
RCP_WIRE_MSG(StopFile, stop_file, "STOP_FILE");
RCP_WIRE_MSG(WalkTotals, walk_totals, "WALK_TOTALS");
RCP_WIRE_MSG(Hole, hole, "HOLE");
RCP_WIRE_MSG(EntryDeleted, entry_deleted, "ENTRY_DELETED");
RCP_WIRE_MSG(XattrPiece, xattr, "XATTR");
RCP_WIRE_MSG(SmallFile, small_file, "SMALL_FILE");
#undef RCP_WIRE_MSG

/// Messages in the protocol: MsgType values 1 .. kMessageTypes.
constexpr size_t kMessageTypes = std::variant_size_v<Message>;

namespace detail {
template <size_t... I>
constexpr bool types_follow_variant(std::index_sequence<I...>) {
  return ((static_cast<size_t>(MsgTraits<std::variant_alternative_t<I, Message>>::type) == I + 1) && ...);
}
}  // namespace detail
static_assert(detail::types_follow_variant(std::make_index_sequence<kMessageTypes>{}),
              "wire::Message alternative i must be MsgType i + 1: decode() and type_name() index by it");

MsgType type_of(const Message& m);
/// The largest a message of type t may be, header included: kMaxMessage,
/// or kMaxLargeMessage for SMALL_FILE.
constexpr size_t max_message(MsgType t) { return t == MsgType::small_file ? kMaxLargeMessage : kMaxMessage; }
const char* type_name(MsgType t);

/// Appends the framed message to out. Fails only if a field exceeds its limit.
Status encode(const Message& m, std::vector<uint8_t>& out);
/// Decodes exactly one framed message occupying all of buf.
Result<Message> decode(std::span<const uint8_t> buf);
/// Reads the header alone: returns the payload length announced, after checking
/// magic, version and that the whole message fits max_message() of its type. Used by stream
/// transports to know how much more to read.
Result<uint32_t> peek_length(std::span<const uint8_t> header);

/// The hello exchanged at connect time (rdma_cm private data, or the first
/// bytes of a TCP stream). 32 bytes: under the 56 rdma_connect allows.
struct Hello {
  uint16_t version = protocol_version();
  uint16_t ctrl_depth = 0;      ///< control receives posted = initial send credits for the peer
  uint16_t rd_init = 0;         ///< RDMA READs this side can have outstanding (max_qp_init_rd_atom)
  uint16_t rd_resp = 0;         ///< RDMA READs this side can serve at once (max_qp_rd_atom)
  uint16_t max_sge_rd = 0;      ///< SGEs per READ work request
  uint16_t checksums = 0;       ///< bitmask of 1 << Checksum supported
  uint16_t qps = 0;             ///< connections (RDMA queue pairs or TCP streams) the client will open for this session; 0 reads as 1; the daemon admits no more
  uint32_t max_chunk = 0;       ///< largest chunk this side accepts
  uint32_t ctrl_msg_size = kMaxMessage;
  uint32_t flags = 0;
};
constexpr size_t kHelloSize = 32;

/// Hello::flags bits for sessions of several connections (TCP streams or
/// RDMA queue pairs). kHelloToken: the daemon's hello is followed by the
/// session's token. kHelloJoin: the client's hello is followed by a token and
/// asks to add a connection to that session instead of starting one.
constexpr uint32_t kHelloToken = 1u << 0;
constexpr uint32_t kHelloJoin = 1u << 1;
/// TCP only. In the daemon's hello: it offers TLS 1.3 (rcpd encrypt is not
/// "never"). In the client's: a TLS handshake follows the hellos on this
/// stream, and the token and join acknowledgement travel inside it.
constexpr uint32_t kHelloTls = 1u << 2;
/// Session tokens are 64 random bits, never 0 (0 means "no token").
constexpr size_t kTokenSize = 8;
/// A hello followed by a token: 40 bytes, still under rdma_connect's 56.
constexpr size_t kHelloTokenSize = kHelloSize + kTokenSize;

std::vector<uint8_t> encode_hello(const Hello& h);
/// Accepts len >= kHelloSize (transports may pad private data) with our magic;
/// a different version is refused with a message naming both versions.
Result<Hello> decode_hello(std::span<const uint8_t> buf);
/// The hello with `flags` set, then the token, big-endian (kHelloTokenSize bytes).
std::vector<uint8_t> encode_hello_token(Hello h, uint32_t flags, uint64_t token);
/// The token behind a hello (buf as given to decode_hello): refuses a buffer
/// too short to hold one and the token 0.
Result<uint64_t> decode_hello_token(std::span<const uint8_t> buf);
/// A fresh session token from the kernel's CSPRNG (getrandom): a peer that
/// saw its own tokens learns nothing about another session's.
Result<uint64_t> new_session_token();

}  // namespace rcp::wire
