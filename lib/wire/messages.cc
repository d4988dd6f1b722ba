#include "wire/messages.h"

#include "util/test_faults.h"

#include <fmt/core.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

#include "util/overloaded.h"
#include "wire/codec.h"

namespace rcp::wire {
namespace {

/// Writes a digest; false (nothing trustworthy written) if its length is impossible.
bool put_digest(Writer& w, const Digest& d) {
  if (d.len > kMaxDigest) return false;
  w.u8(d.len);
  w.bytes({d.bytes.data(), d.len});
  return true;
}

Digest get_digest(Reader& r) {
  Digest d;
  d.len = r.u8();
  if (d.len > kMaxDigest) {
    r.fail();
    return {};
  }
  r.bytes(d.bytes.data(), d.len);
  return d;
}

Error proto(std::string what) { return make_error(EPROTO, std::move(what)); }

}  // namespace

uint16_t protocol_version() {
  static const uint16_t v = [] {
    const int forced = test_faults().protocol_version;
    return forced >= 0 ? static_cast<uint16_t>(forced) : kVersion;
  }();
  return v;
}

MsgType type_of(const Message& m) {
  return std::visit([](const auto& msg) { return MsgTraits<std::decay_t<decltype(msg)>>::type; }, m);
}

namespace {

template <size_t... I>
constexpr std::array<const char*, kMessageTypes> make_names(std::index_sequence<I...>) {
  return {MsgTraits<std::variant_alternative_t<I, Message>>::name...};
}
/// Names by variant index (= MsgType - 1, asserted in messages.h).
constexpr auto kNames = make_names(std::make_index_sequence<kMessageTypes>{});
static_assert(kNames.size() == std::variant_size_v<Message>, "one name per message");

}  // namespace

const char* type_name(MsgType t) {
  const auto i = static_cast<size_t>(t);
  return i >= 1 && i <= kNames.size() ? kNames[i - 1] : "UNKNOWN";
}

static void put_file_begin(Writer& w, const FileBegin& f, Status& st) {
  if (f.name.size() > kMaxPath) st = proto("name longer than " + std::to_string(kMaxPath));
  w.u32(f.file_id);
  w.u64(f.size);
  w.u32(f.mode);
  w.u64(static_cast<uint64_t>(f.mtime_ns));
  w.str(f.name.substr(0, kMaxPath));
  if (f.user.size() > kMaxIdName || f.group.size() > kMaxIdName)
    st = proto("user or group name longer than " + std::to_string(kMaxIdName));
  if (f.link_target.size() > kMaxPath) st = proto("symlink target longer than " + std::to_string(kMaxPath));
  w.u32(f.uid);
  w.u32(f.gid);
  w.str(f.user.substr(0, kMaxIdName));
  w.str(f.group.substr(0, kMaxIdName));
  w.str(f.link_target.substr(0, kMaxPath));
  w.u64(f.rdev);
  w.u32(f.link_to);
}

Status encode(const Message& m, std::vector<uint8_t>& out) {
  const size_t start = out.size();
  Writer w(out);
  w.u32(kMagic);
  w.u16(protocol_version());
  w.u16(static_cast<uint16_t>(type_of(m)));
  w.u32(0);  // payload length, patched below
  Status st;
  std::visit(overloaded{
                 [&](const Open& o) {
                   if (o.path.size() > kMaxPath) st = proto("path longer than " + std::to_string(kMaxPath));
                   w.u8(static_cast<uint8_t>(o.op));
                   w.u8(static_cast<uint8_t>(o.checksum));
                   w.u32(o.flags);
                   w.str(o.path.substr(0, kMaxPath));
                   if (o.more.size() > kMaxOpenPaths) st = proto("too many paths in OPEN");
                   if (o.filters.size() > kMaxOpenRules) st = proto("too many filter rules in OPEN");
                   w.u16(static_cast<uint16_t>(std::min(o.more.size(), kMaxOpenPaths)));
                   for (size_t i = 0; i < o.more.size() && i < kMaxOpenPaths; ++i) {
                     if (o.more[i].size() > kMaxPath) st = proto("path longer than " + std::to_string(kMaxPath));
                     w.str(o.more[i].substr(0, kMaxPath));
                   }
                   w.u16(static_cast<uint16_t>(std::min(o.filters.size(), kMaxOpenRules)));
                   for (size_t i = 0; i < o.filters.size() && i < kMaxOpenRules; ++i) {
                     if (o.filters[i].size() > kMaxOpenRuleLen) st = proto("filter rule too long");
                     w.str(o.filters[i].substr(0, kMaxOpenRuleLen));
                   }
                   w.u32(o.preserve);
                 },
                 [&](const OpenOk& o) { w.u8(o.dest_is_dir); },
                 [&](const FileBegin& f) { put_file_begin(w, f, st); },
                 [&](const SmallFile& sf) {
                   put_file_begin(w, sf.begin, st);
                   if (!put_digest(w, sf.digest)) st = proto("digest longer than 32 bytes");
                   if (sf.data.size() > kMaxFileData) st = proto("SMALL_FILE data longer than " + std::to_string(kMaxFileData));
                   w.str(std::string_view(sf.data).substr(0, kMaxFileData));
                 },
                 [&](const ChunkReady& c) {
                   w.u32(c.file_id);
                   w.u32(c.slot);
                   w.u64(c.offset);
                   w.u32(c.length);
                   w.u64(c.addr);
                   w.u32(c.rkey);
                   if (!put_digest(w, c.digest)) st = proto("digest longer than 32 bytes");
                 },
                 [&](const ChunkDone& c) {
                   if (c.slots.size() > kMaxDoneBatch) st = proto("too many slots in CHUNK_DONE");
                   w.u16(static_cast<uint16_t>(c.slots.size()));
                   for (size_t i = 0; i < c.slots.size() && i < kMaxDoneBatch; ++i) w.u32(c.slots[i]);
                 },
                 [&](const FileEnd& f) {
                   w.u32(f.file_id);
                   w.u64(f.size);
                   if (!put_digest(w, f.digest)) st = proto("digest longer than 32 bytes");
                 },
                 [&](const FileResult& f) {
                   w.u32(f.file_id);
                   w.u32(static_cast<uint32_t>(f.err));
                   w.u8(f.skipped);
                   w.u64(f.pulled);
                   w.u64(f.matched);
                   w.str(f.message.substr(0, kMaxText));
                   if (f.changes & ~kResultChangesKnown) st = proto("FILE_RESULT with unknown change bits");
                   w.u16(f.changes);
                 },
                 [&](const Finish&) {},
                 [&](const Done& d) {
                   w.u32(d.files_ok);
                   w.u32(d.files_failed);
                   w.u32(d.files_deleted);
                 },
                 [&](const ErrorMsg& e) {
                   w.u32(static_cast<uint32_t>(e.err));
                   w.str(e.message.substr(0, kMaxText));
                 },
                 [&](const FileSkipped& f) {
                   w.u32(static_cast<uint32_t>(f.err));
                   w.str(f.message.substr(0, kMaxText));
                   w.u8(f.vanished);
                 },
                 [&](const StopFile& f) { w.u32(f.file_id); },
                 [&](const Hole& h) {
                   if (h.length == 0 || h.offset > UINT64_MAX - h.length) st = proto("HOLE range empty or past 2^64");
                   w.u32(h.file_id);
                   w.u64(h.offset);
                   w.u64(h.length);
                 },
                 [&](const EntryDeleted& d) {
                   if (d.name.empty() || d.name.size() > kMaxPath || d.name.find('\0') != std::string::npos ||
                       d.is_dir > 1)
                     st = proto("ENTRY_DELETED name empty, too long or with a NUL");
                   w.str(d.name.substr(0, kMaxPath));
                   w.u8(d.is_dir);
                 },
                 [&](const XattrPiece& x) {
                   if (x.name.empty() || x.name.size() > kMaxXattrNameLen || x.name.find('\0') != std::string::npos ||
                       x.data.size() > kMaxXattrPiece || x.total > kMaxXattrValueLen ||
                       uint64_t{x.offset} + x.data.size() > x.total || (x.data.empty() && x.total != 0))
                     st = proto("XATTR name, value size or piece out of range");
                   w.u32(x.file_id);
                   w.str(x.name.substr(0, kMaxXattrNameLen));
                   w.u32(x.total);
                   w.u32(x.offset);
                   w.str(std::string_view(x.data).substr(0, kMaxXattrPiece));
                 },
                 [&](const WalkTotals& t) {
                   if (t.files > kMaxWalkFiles || t.final > 1) st = proto("WALK_TOTALS out of range");
                   w.u64(t.files);
                   w.u64(t.bytes);
                   w.u8(t.final);
                 },
                 [&](const ModuleList& l) {
                   if (l.modules.size() > kMaxModules) st = proto("too many modules in MODULE_LIST");
                   w.u8(l.truncated);
                   w.u16(static_cast<uint16_t>(std::min(l.modules.size(), kMaxModules)));
                   for (size_t i = 0; i < l.modules.size() && i < kMaxModules; ++i) {
                     const auto& e = l.modules[i];
                     if (e.name.size() > kMaxModuleText || e.comment.size() > kMaxModuleText)
                       st = proto("module name or comment longer than " + std::to_string(kMaxModuleText));
                     w.str(e.name.substr(0, kMaxModuleText));
                     w.str(e.comment.substr(0, kMaxModuleText));
                   }
                 },
             },
             m);
  if (!st.ok()) {
    out.resize(start);
    return st;
  }
  const size_t len = out.size() - start - kHeaderSize;
  if (len + kHeaderSize > max_message(type_of(m))) {
    out.resize(start);
    return proto("message too large");
  }
  for (int i = 0; i < 4; ++i) out[start + 8 + i] = static_cast<uint8_t>(len >> (24 - 8 * i));
  return {};
}

size_t small_file_size(const SmallFile& m) {
  const FileBegin& f = m.begin;
  // The header (12) and FILE_BEGIN's fixed fields with its strings' lengths (52).
  return 64 + f.name.size() + f.user.size() + f.group.size() + f.link_target.size() + 1 + m.digest.len +
         2 + m.data.size();
}

size_t open_size(const Open& o) {
  size_t n = kHeaderSize + 6 + 2 + o.path.size() + 2 + 2 + 4;  // op, checksum, flags (u32)
  for (auto& p : o.more) n += 2 + p.size();
  for (auto& f : o.filters) n += 2 + f.size();
  return n;
}

Result<uint32_t> peek_length(std::span<const uint8_t> header) {
  if (header.size() < kHeaderSize) return proto("truncated message header");
  Reader r(header);
  const uint32_t magic = r.u32();
  const uint16_t version = r.u16();
  const uint16_t type = r.u16();
  const uint32_t len = r.u32();
  if (magic != kMagic) return proto(fmt::format("bad message magic {:#010x}", magic));
  if (version != protocol_version())
    return proto(fmt::format("peer speaks protocol version {}, this side speaks {}", version, protocol_version()));
  const size_t limit = max_message(static_cast<MsgType>(type));
  if (len > limit - kHeaderSize) return proto(fmt::format("message length {} exceeds limit {}", len, limit));
  return len;
}

namespace {

// One read_body per message: reads its payload, then checks what the reader
// alone cannot (a Status error is returned as is). There is deliberately no
// generic overload: a message without one does not compile (see decode_as).

Status read_body(Reader& r, Open& o) {
  o.op = static_cast<Op>(r.u8());
  o.checksum = static_cast<Checksum>(r.u8());
  o.flags = r.u32();
  o.path = r.str(kMaxPath);
  const uint16_t np = r.u16();
  if (r.ok() && np > kMaxOpenPaths) return proto(fmt::format("OPEN with {} paths (limit {})", np, kMaxOpenPaths));
  for (uint16_t i = 0; i < np && r.ok(); ++i) o.more.push_back(r.str(kMaxPath));
  const uint16_t nf = r.u16();
  if (r.ok() && nf > kMaxOpenRules) return proto(fmt::format("OPEN with {} filter rules (limit {})", nf, kMaxOpenRules));
  for (uint16_t i = 0; i < nf && r.ok(); ++i) {
    o.filters.push_back(r.str(kMaxOpenRuleLen));
    const std::string& f = o.filters.back();
    if (r.ok() && (f.size() < 3 || (f[0] != '+' && f[0] != '-') || f[1] != ' ' || f.find('\0') != std::string::npos))
      return proto("OPEN with a malformed filter rule");
  }
  o.preserve = r.u32();
  // (after the last field: a message cut short is "truncated", whatever it held)
  for (const std::string& p : o.more)
    if (r.ok() && (p.empty() || p.find('\0') != std::string::npos)) return proto("OPEN with an empty path or a NUL byte");
  if (r.ok() && (o.preserve & ~kPreserveKnown) != 0)
    return proto(fmt::format("OPEN asks to preserve unknown metadata {:#x}", o.preserve & ~kPreserveKnown));
  if (r.ok() && o.op != Op::put && o.op != Op::get && o.op != Op::list) return proto("OPEN with unknown operation");
  if (r.ok() && static_cast<uint8_t>(o.checksum) > 2) return proto("OPEN with unknown checksum");
  if (r.ok() && (o.flags & ~kOpenKnownFlags) != 0) return proto(fmt::format("OPEN with unknown flags {:#x}", o.flags));
  return {};
}

Status read_body(Reader& r, OpenOk& o) {
  o.dest_is_dir = r.u8();
  return {};
}

Status read_body(Reader& r, FileBegin& f) {
  f.file_id = r.u32();
  f.size = r.u64();
  f.mode = r.u32();
  f.mtime_ns = static_cast<int64_t>(r.u64());
  f.name = r.str(kMaxPath);
  f.uid = r.u32();
  f.gid = r.u32();
  f.user = r.str(kMaxIdName);
  f.group = r.str(kMaxIdName);
  f.link_target = r.str(kMaxPath);
  f.rdev = r.u64();
  f.link_to = r.u32();
  if (!r.ok()) return {};
  const uint32_t type = f.mode & S_IFMT;
  if ((f.mode & ~static_cast<uint32_t>(S_IFMT | 07777)) != 0)
    return proto(fmt::format("FILE_BEGIN mode {:#o} has unknown bits", f.mode));
  const bool regular = type == 0 || type == S_IFREG;
  if (!regular && type != S_IFDIR && type != S_IFLNK && type != S_IFIFO && type != S_IFSOCK && type != S_IFCHR &&
      type != S_IFBLK)
    return proto(fmt::format("FILE_BEGIN with unknown file type {:#o}", type));
  if (!regular && f.size != 0) return proto("FILE_BEGIN: only a regular file has a size");
  if ((type == S_IFLNK) != !f.link_target.empty())
    return proto(type == S_IFLNK ? "FILE_BEGIN: symlink without a target" : "FILE_BEGIN: link target on a non-symlink");
  if (f.rdev != 0 && type != S_IFCHR && type != S_IFBLK) return proto("FILE_BEGIN: device number on a non-device");
  if (f.link_to != 0 && !regular) return proto("FILE_BEGIN: hard link on a non-file");
  if (f.link_to > f.file_id) return proto("FILE_BEGIN: hard link to a later file");
  if (f.link_to != 0 && f.link_to < f.file_id && f.size != 0) return proto("FILE_BEGIN: a hard link with data");
  for (const std::string* s : {&f.user, &f.group, &f.link_target})
    if (s->find('\0') != std::string::npos) return proto("FILE_BEGIN: an owner name or link target holds a NUL byte");
  return {};
}

Status read_body(Reader& r, SmallFile& m) {
  RCP_TRY(read_body(r, m.begin));
  m.digest = get_digest(r);
  m.data = r.str(kMaxFileData);
  if (!r.ok()) return {};
  const FileBegin& f = m.begin;
  if ((f.mode & S_IFMT) != 0 && (f.mode & S_IFMT) != S_IFREG) return proto("SMALL_FILE: not a regular file");
  if (f.link_to != 0) return proto("SMALL_FILE: a hard link");
  if (m.data.empty()) return proto("SMALL_FILE: no data");
  if (m.data.size() != f.size) return proto(fmt::format("SMALL_FILE: size {} with {} bytes of data", f.size, m.data.size()));
  return {};
}

Status read_body(Reader& r, ChunkReady& c) {
  c.file_id = r.u32();
  c.slot = r.u32();
  c.offset = r.u64();
  c.length = r.u32();
  c.addr = r.u64();
  c.rkey = r.u32();
  c.digest = get_digest(r);
  if (r.ok() && (c.length == 0 || c.length > kMaxChunk)) return proto(fmt::format("CHUNK_READY length {} out of range", c.length));
  if (r.ok() && c.offset + c.length < c.offset) return proto("CHUNK_READY offset overflows");
  return {};
}

Status read_body(Reader& r, ChunkDone& c) {
  const uint16_t n = r.u16();
  if (n > kMaxDoneBatch) return proto(fmt::format("CHUNK_DONE with {} slots (limit {})", n, kMaxDoneBatch));
  // (n bounds the reservation; a short body fails the reads: "truncated CHUNK_DONE message")
  c.slots.reserve(n);
  for (uint16_t i = 0; i < n; ++i) c.slots.push_back(r.u32());
  return {};
}

Status read_body(Reader& r, FileEnd& f) {
  f.file_id = r.u32();
  f.size = r.u64();
  f.digest = get_digest(r);
  return {};
}

Status read_body(Reader& r, FileResult& f) {
  f.file_id = r.u32();
  f.err = static_cast<int32_t>(r.u32());
  f.skipped = r.u8();
  f.pulled = r.u64();
  f.matched = r.u64();
  f.message = r.str(kMaxText);
  f.changes = r.u16();
  if (r.ok() && (f.changes & ~kResultChangesKnown) != 0)
    return proto(fmt::format("FILE_RESULT with unknown change bits {:#x}", f.changes));
  if (r.ok() && f.skipped > 1) return proto("FILE_RESULT with skipped not 0 or 1");
  if (r.ok() && f.skipped && f.err != 0) return proto("FILE_RESULT both skipped and failed");
  return {};
}

Status read_body(Reader& r, EntryDeleted& d) {
  d.name = r.str(kMaxPath);
  d.is_dir = r.u8();
  if (r.ok() && (d.name.empty() || d.name.find('\0') != std::string::npos))
    return proto("ENTRY_DELETED with an empty name or a NUL in it");
  if (r.ok() && d.is_dir > 1) return proto("ENTRY_DELETED with is_dir not 0 or 1");
  return {};
}

Status read_body(Reader& r, XattrPiece& x) {
  x.file_id = r.u32();
  x.name = r.str(kMaxXattrNameLen);  // (longer: the reader fails, "truncated")
  x.total = r.u32();
  x.offset = r.u32();
  x.data = r.str(kMaxXattrPiece);
  if (!r.ok()) return {};
  if (x.name.empty() || x.name.find('\0') != std::string::npos) return proto("XATTR with an empty name or a NUL in it");
  if (x.total > kMaxXattrValueLen)
    return proto(fmt::format("XATTR '{}' of {} bytes (at most {})", x.name, x.total, kMaxXattrValueLen));
  if (uint64_t{x.offset} + x.data.size() > x.total)
    return proto(fmt::format("XATTR '{}' piece [{}, +{}) outside its {} bytes", x.name, x.offset, x.data.size(), x.total));
  if (x.data.empty() && x.total != 0) return proto(fmt::format("XATTR '{}': an empty piece of a {}-byte value", x.name, x.total));
  return {};
}

Status read_body(Reader& r, StopFile& f) {
  f.file_id = r.u32();
  return {};
}

Status read_body(Reader& r, Hole& h) {
  h.file_id = r.u32();
  h.offset = r.u64();
  h.length = r.u64();
  // (Whether it fits the file is the sink's ledger's to say; it knows the size.)
  if (r.ok() && h.length == 0) return proto("HOLE of 0 bytes");
  if (r.ok() && h.offset > UINT64_MAX - h.length) return proto("HOLE range wraps past 2^64");
  return {};
}

Status read_body(Reader& r, WalkTotals& t) {
  t.files = r.u64();
  t.bytes = r.u64();
  t.final = r.u8();
  if (r.ok() && t.final > 1) return proto("WALK_TOTALS with final not 0 or 1");
  if (r.ok() && t.files > kMaxWalkFiles)
    return proto(fmt::format("WALK_TOTALS announces {} files (a session holds at most {})", t.files, kMaxWalkFiles));
  return {};
}

Status read_body(Reader&, Finish&) { return {}; }

Status read_body(Reader& r, Done& d) {
  d.files_ok = r.u32();
  d.files_failed = r.u32();
  d.files_deleted = r.u32();
  return {};
}

Status read_body(Reader& r, ErrorMsg& e) {
  e.err = static_cast<int32_t>(r.u32());
  e.message = r.str(kMaxText);
  return {};
}

Status read_body(Reader& r, FileSkipped& f) {
  f.err = static_cast<int32_t>(r.u32());
  f.message = r.str(kMaxText);
  f.vanished = r.u8();
  // A notice (err 0) is skipped by design: it cannot have vanished.
  if (r.ok() && (f.vanished > 1 || (f.vanished && f.err == 0)))
    return proto(fmt::format("FILE_SKIPPED vanished={} with err={}", f.vanished, f.err));
  return {};
}

Status read_body(Reader& r, ModuleList& l) {
  l.truncated = r.u8();
  const uint16_t n = r.u16();
  if (r.ok() && n > kMaxModules) return proto(fmt::format("MODULE_LIST with {} modules (limit {})", n, kMaxModules));
  for (uint16_t i = 0; i < n && r.ok(); ++i) {
    ModuleList::Entry e;
    e.name = r.str(kMaxModuleText);
    e.comment = r.str(kMaxModuleText);
    l.modules.push_back(std::move(e));
  }
  return {};
}

template <class M>
Result<Message> decode_as(Reader& r) {
  M m;
  RCP_TRY(read_body(r, m));
  return Message(std::move(m));
}

using BodyDecoder = Result<Message> (*)(Reader&);
template <size_t... I>
constexpr std::array<BodyDecoder, kMessageTypes> make_decoders(std::index_sequence<I...>) {
  return {&decode_as<std::variant_alternative_t<I, Message>>...};
}
/// Decoders by variant index (= MsgType - 1, asserted in messages.h).
constexpr auto kDecoders = make_decoders(std::make_index_sequence<kMessageTypes>{});

}  // namespace

Result<Message> decode(std::span<const uint8_t> buf) {
  RCP_ASSIGN(uint32_t len, peek_length(buf));
  if (buf.size() != kHeaderSize + len)
    return proto(fmt::format("message length {} does not match {} bytes received", len, buf.size() - kHeaderSize));
  const uint16_t wire_type = static_cast<uint16_t>((buf[6] << 8) | buf[7]);
  if (wire_type == 0 || wire_type > kDecoders.size()) return proto(fmt::format("unknown message type {}", wire_type));
  const auto type = static_cast<MsgType>(wire_type);
  Reader r(buf.subspan(kHeaderSize));
  RCP_ASSIGN(Message m, kDecoders[wire_type - 1](r));
  if (!r.ok()) return proto(fmt::format("truncated {} message", type_name(type)));
  if (!r.at_end()) return proto(fmt::format("{} message has {} trailing bytes", type_name(type), r.remaining()));
  return m;
}

std::vector<uint8_t> encode_hello(const Hello& h) {
  std::vector<uint8_t> out;
  Writer w(out);
  w.u32(kMagic);
  w.u16(h.version);
  w.u16(static_cast<uint16_t>(kHelloSize));
  w.u16(h.ctrl_depth);
  w.u16(h.rd_init);
  w.u16(h.rd_resp);
  w.u16(h.max_sge_rd);
  w.u16(h.checksums);
  w.u16(h.qps);  // was reserved (0): older peers announce nothing, which reads as 1
  w.u32(h.max_chunk);
  w.u32(h.ctrl_msg_size);
  w.u32(h.flags);
  return out;
}

Result<Hello> decode_hello(std::span<const uint8_t> buf) {
  if (buf.size() < 8) return proto(fmt::format("hello too short ({} bytes)", buf.size()));
  Reader r(buf);
  const uint32_t magic = r.u32();
  Hello h;
  h.version = r.u16();
  const uint16_t size = r.u16();
  if (magic != kMagic) return proto(fmt::format("peer is not an rcp endpoint (hello magic {:#010x})", magic));
  if (h.version != protocol_version())
    return proto(fmt::format("peer speaks rcp protocol version {}, this side speaks {}", h.version, protocol_version()));
  if (size < kHelloSize || buf.size() < kHelloSize) return proto(fmt::format("hello too short ({} bytes)", buf.size()));
  h.ctrl_depth = r.u16();
  h.rd_init = r.u16();
  h.rd_resp = r.u16();
  h.max_sge_rd = r.u16();
  h.checksums = r.u16();
  h.qps = r.u16();
  h.max_chunk = r.u32();
  h.ctrl_msg_size = r.u32();
  h.flags = r.u32();  // (32 bytes read, and buf holds kHelloSize = 32 or more: no read fails)
  // One buffer would leave the peer no credit to send data with (the last
  // credit is kept for credit grants), so 2 is the least that works.
  if (h.ctrl_depth < 2) return proto(fmt::format("hello announces {} control receive buffers (need 2 or more)", h.ctrl_depth));
  if (h.ctrl_msg_size < 256 || h.ctrl_msg_size > kMaxMessage)
    return proto(fmt::format("hello control message size {} out of range", h.ctrl_msg_size));
  if (h.max_chunk == 0 || h.max_chunk > kMaxChunk) return proto(fmt::format("hello chunk size {} out of range", h.max_chunk));
  if (h.max_sge_rd == 0) return proto("hello announces 0 SGEs per READ");
  return h;
}

std::vector<uint8_t> encode_hello_token(Hello h, uint32_t flags, uint64_t token) {
  h.flags |= flags;
  std::vector<uint8_t> out = encode_hello(h);
  Writer w(out);
  w.u64(token);
  return out;
}

Result<uint64_t> decode_hello_token(std::span<const uint8_t> buf) {
  if (buf.size() < kHelloTokenSize)
    return proto(fmt::format("hello announces a session token but holds only {} bytes", buf.size()));
  Reader r(buf.subspan(kHelloSize, kTokenSize));
  const uint64_t token = r.u64();  // (kHelloTokenSize = kHelloSize + kTokenSize bytes are there)
  if (token == 0) return proto("session token 0");
  return token;
}

Result<uint64_t> new_session_token() {
  uint64_t token = 0;
  while (token == 0) {
    ssize_t n = ::getrandom(&token, sizeof token, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof token)) return sys_error("getrandom (session token)");
  }
  return token;
}

}  // namespace rcp::wire
