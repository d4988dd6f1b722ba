// Proves the wire codec round-trips every message and the hello, writes big-endian, and refuses every truncated, oversized or malformed input.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <limits>
#include <string>
#include <variant>
#include <vector>

#include "wire/codec.h"
#include "wire/messages.h"

using namespace rcp;
using namespace rcp::wire;

namespace {

using Bytes = std::vector<uint8_t>;
// The header's version field, big-endian: the exact-encoding tests follow kVersion.
constexpr uint8_t kVerHi = kVersion >> 8, kVerLo = kVersion & 0xff;

Digest make_digest(uint8_t len, uint8_t seed) {
  Digest d;
  d.len = len;
  for (uint8_t i = 0; i < len; ++i) d.bytes[i] = static_cast<uint8_t>(seed + 37 * i);
  return d;
}

bool eq(const Open& a, const Open& b) {
  return a.op == b.op && a.checksum == b.checksum && a.flags == b.flags && a.path == b.path && a.more == b.more &&
         a.filters == b.filters && a.preserve == b.preserve;
}
bool eq(const OpenOk& a, const OpenOk& b) { return a.dest_is_dir == b.dest_is_dir; }
bool eq(const FileBegin& a, const FileBegin& b) {
  return a.file_id == b.file_id && a.size == b.size && a.mode == b.mode && a.mtime_ns == b.mtime_ns &&
         a.name == b.name && a.uid == b.uid && a.gid == b.gid && a.user == b.user && a.group == b.group &&
         a.link_target == b.link_target && a.rdev == b.rdev && a.link_to == b.link_to;
}
bool eq(const ChunkReady& a, const ChunkReady& b) {
  return a.file_id == b.file_id && a.slot == b.slot && a.offset == b.offset && a.length == b.length &&
         a.addr == b.addr && a.rkey == b.rkey && a.digest == b.digest;
}
bool eq(const ChunkDone& a, const ChunkDone& b) { return a.slots == b.slots; }
bool eq(const FileEnd& a, const FileEnd& b) {
  return a.file_id == b.file_id && a.size == b.size && a.digest == b.digest;
}
bool eq(const FileResult& a, const FileResult& b) {
  return a.file_id == b.file_id && a.err == b.err && a.skipped == b.skipped && a.pulled == b.pulled &&
         a.matched == b.matched && a.message == b.message && a.changes == b.changes;
}
bool eq(const EntryDeleted& a, const EntryDeleted& b) { return a.name == b.name && a.is_dir == b.is_dir; }
bool eq(const StopFile& a, const StopFile& b) { return a.file_id == b.file_id; }
bool eq(const Hole& a, const Hole& b) { return a.file_id == b.file_id && a.offset == b.offset && a.length == b.length; }
bool eq(const WalkTotals& a, const WalkTotals& b) { return a.files == b.files && a.bytes == b.bytes && a.final == b.final; }
bool eq(const Finish&, const Finish&) { return true; }
bool eq(const XattrPiece& a, const XattrPiece& b) {
  return a.file_id == b.file_id && a.name == b.name && a.total == b.total && a.offset == b.offset && a.data == b.data;
}
bool eq(const SmallFile& a, const SmallFile& b) { return eq(a.begin, b.begin) && a.digest == b.digest && a.data == b.data; }
bool eq(const Done& a, const Done& b) {
  return a.files_ok == b.files_ok && a.files_failed == b.files_failed && a.files_deleted == b.files_deleted;
}
bool eq(const ErrorMsg& a, const ErrorMsg& b) { return a.err == b.err && a.message == b.message; }
bool eq(const FileSkipped& a, const FileSkipped& b) {
  return a.err == b.err && a.message == b.message && a.vanished == b.vanished;
}
bool eq(const ModuleList& a, const ModuleList& b) {
  if (a.truncated != b.truncated || a.modules.size() != b.modules.size()) return false;
  for (size_t i = 0; i < a.modules.size(); ++i)
    if (a.modules[i].name != b.modules[i].name || a.modules[i].comment != b.modules[i].comment) return false;
  return true;
}

bool same(const Message& a, const Message& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        return eq(x, std::get<T>(b));
      },
      a);
}

const std::string kUtf8 = "r\xC3\xA9sum\xC3\xA9/\xE6\x97\xA5\xE6\x9C\xAC.txt";  // "résumé/日本.txt"

/// Messages of every type with non-trivial values and at their limits.
std::vector<Message> samples() {
  std::vector<Message> v;
  v.push_back(Open{Op::put, Checksum::xxh128, kOpenMulti | kOpenFsync, "mod/dir with space/file\nname"});
  v.push_back(Open{Op::get, Checksum::sha256, 0, ""});
  v.push_back(Open{Op::put, Checksum::none, kOpenKnownFlags, std::string(kMaxPath, 'p')});
  v.push_back(Open{Op::get, Checksum::xxh128, kOpenFsync, "export/" + kUtf8});
  v.push_back(Open{Op::get, Checksum::xxh128, kOpenRecursive | kOpenDelete, "m/a", {"b", kUtf8, "c/d"},
                   {"- *.o", "+ keep/", "- /top/***"}});
  v.push_back(OpenOk{0});
  v.push_back(OpenOk{1});
  v.push_back(FileBegin{0xDEADBEEF, 0x0123456789ABCDEFull, 0100755, 0, "\xE6\x97\xA5 \xE8\xAA\x9E\n.txt"});
  v.push_back(FileBegin{0, 0, 0, 0, ""});
  v.push_back(FileBegin{3, 5, 0644, std::numeric_limits<int64_t>::min(), "old"});
  v.push_back(FileBegin{4, 5, 0644, 1700000000123456789ll, "ns"});
  v.push_back(FileBegin{7, std::numeric_limits<uint64_t>::max(), 0644, 0, std::string(kMaxPath, 'n')});
  // Metadata at its limits: mtimes before 1970 and to the nanosecond, owner
  // names, a symlink's target, a device's number.
  v.push_back(FileBegin{8, 0, S_IFDIR | 07777, -1, "d", 0xFFFFFFFF, 0, "root", std::string(kMaxIdName, 'g'), "", 0});
  v.push_back(FileBegin{9, 0, S_IFLNK | 0777, 1700000000123456789, "l", 1000, 1000, kUtf8, "", "../" + kUtf8, 0});
  v.push_back(FileBegin{10, 0, S_IFLNK | 0777, std::numeric_limits<int64_t>::min(), "l", 0, 0, "", "",
                        std::string(kMaxPath, 't'), 0});
  v.push_back(FileBegin{11, 0, S_IFCHR | 0600, 0, "null", 0, 0, "", "", "", 0x0103});
  v.push_back(FileBegin{12, 0, S_IFIFO | 0644, std::numeric_limits<int64_t>::max(), "fifo"});
  v.push_back(FileBegin{13, 77, S_IFREG | 0600, 0, "leader", 0, 0, "", "", "", 0, 13});
  v.push_back(FileBegin{0xFFFFFFFF, 0, S_IFREG | 0600, 0, "follower", 0, 0, "", "", "", 0, 0xFFFFFFFE});
  v.push_back(Open{Op::put, Checksum::xxh128, kOpenMulti, "m/d", {"e"}, {"+ f"}, kPreserveKnown});
  v.push_back(ChunkReady{1, 2, 0x1122334455667788ull, kMaxChunk, 0xFEDCBA9876543210ull, 0xCAFEBABE, make_digest(32, 1)});
  v.push_back(ChunkReady{0xFFFFFFFF, 0xFFFFFFFF, 0, 1, 0, 0, make_digest(16, 200)});
  v.push_back(ChunkReady{3, 0, std::numeric_limits<uint64_t>::max() - 1, 1, 1, 1, Digest{}});
  v.push_back(ChunkDone{});
  v.push_back(ChunkDone{{42}});
  {
    ChunkDone full;
    for (uint32_t i = 0; i < kMaxDoneBatch; ++i) full.slots.push_back(i * 0x01010101u + (i == 255 ? 0xFFu : 0u));
    full.slots[0] = 0xFFFFFFFF;
    v.push_back(full);
  }
  v.push_back(FileEnd{9, 0x8000000000000001ull, make_digest(32, 9)});
  v.push_back(FileEnd{10, 12345, make_digest(16, 3)});
  v.push_back(FileEnd{11, 0, Digest{}});
  v.push_back(FileResult{5, -ENOSPC, 0, 0, 0, "no space left on '" + kUtf8 + "'"});
  v.push_back(FileResult{0xFFFFFFFF, std::numeric_limits<int32_t>::min(), 0, 0, 0, ""});
  v.push_back(FileResult{1, 0, 0, 0, 0, std::string(kMaxText, 't')});
  v.push_back(FileResult{2, 0, 1, 0, 0, ""});
  v.push_back(FileResult{3, 0, 0, std::numeric_limits<uint64_t>::max(), 0x0102030405060708ull, "x"});
  v.push_back(StopFile{0});
  v.push_back(StopFile{0xFFFFFFFF});
  v.push_back(Finish{});
  v.push_back(Done{0xFFFFFFFF, 0});
  v.push_back(Done{3, 4, 5});
  v.push_back(ErrorMsg{EPROTO, "bad thing\nsecond line"});
  v.push_back(ErrorMsg{std::numeric_limits<int32_t>::max(), std::string(kMaxText, 'e')});
  v.push_back(ErrorMsg{0, ""});
  v.push_back(FileSkipped{EACCES, "'data/tree/secret': Permission denied"});
  v.push_back(FileSkipped{0, "skipping 'data/tree/fifo': not a regular file or directory"});
  v.push_back(FileSkipped{std::numeric_limits<int32_t>::min(), std::string(kMaxText, 's')});
  v.push_back(FileSkipped{ENOENT, "file has vanished: 'data/t/x': No such file or directory", 1});
  v.push_back(ModuleList{});
  v.push_back(ModuleList{{{"data", ""}, {"logs", "nightly logs\twith a tab"}, {kUtf8, std::string(kMaxModuleText, 'c')}}, 1});
  v.push_back(Open{Op::list, Checksum::xxh128, 0, ""});
  v.push_back(WalkTotals{});
  v.push_back(WalkTotals{12, 0x0123456789ABCDEFull, 1});
  v.push_back(WalkTotals{kMaxWalkFiles, std::numeric_limits<uint64_t>::max(), 0});
  v.push_back(Hole{1, 0, 1});
  v.push_back(Hole{0xFFFFFFFF, 3u << 20, 1021u << 20});
  v.push_back(Hole{2, 0, std::numeric_limits<uint64_t>::max()});
  v.push_back(FileResult{4, 0, 0, 10, 0, "", kResultChangesKnown});
  v.push_back(FileResult{4, 0, 0, 0, 0, "", 0x0001});
  v.push_back(EntryDeleted{"a", 0});
  v.push_back(EntryDeleted{"dir/" + kUtf8 + "/sub", 1});
  v.push_back(EntryDeleted{std::string(kMaxPath, 'd'), 1});
  v.push_back(Open{Op::put, Checksum::xxh128, kOpenDryRun | kOpenDelete, "m/d"});
  v.push_back(XattrPiece{1, "user.a", 0, 0, ""});
  v.push_back(XattrPiece{7, "user." + kUtf8, 5, 0, "v\0a\xff!"});
  v.push_back(XattrPiece{0xFFFFFFFF, std::string(kMaxXattrNameLen, 'n'), kMaxXattrValueLen,
                         kMaxXattrValueLen - static_cast<uint32_t>(kMaxXattrPiece), std::string(kMaxXattrPiece, 'x')});
  v.push_back(XattrPiece{3, "system.posix_acl_default", 8000, 3072, std::string(kMaxXattrPiece, '\1')});
  v.push_back(SmallFile{FileBegin{5, 1, 0100644, 1700000000123456789ll, "a"}, make_digest(16, 9), "x"});
  v.push_back(SmallFile{FileBegin{0xFFFFFFFF, 3, 0644, -1, kUtf8, 1000, 1000, kUtf8, "g", "", 0}, Digest{}, std::string("\0\n\xff", 3)});
  // The largest: a name of kMaxPath bytes, a 32-byte digest, kMaxFileData bytes (more than kMaxMessage in all).
  v.push_back(SmallFile{FileBegin{6, kMaxFileData, 0644, 0, std::string(kMaxPath, 'n'), 0, 0, std::string(kMaxIdName, 'u'),
                                  std::string(kMaxIdName, 'g'), "", 0},
                        make_digest(32, 1), std::string(kMaxFileData, '\x5a')});
  return v;
}

Bytes enc(const Message& m) {
  Bytes out;
  auto st = encode(m, out);
  REQUIRE_MESSAGE(st.ok(), st.error().message());
  return out;
}

/// header + payload with a correct length field.
Bytes frame(uint16_t type, const Bytes& payload, uint16_t version = kVersion, uint32_t magic = kMagic) {
  Bytes out;
  Writer w(out);
  w.u32(magic);
  w.u16(version);
  w.u16(type);
  w.u32(static_cast<uint32_t>(payload.size()));
  w.bytes(payload);
  return out;
}

void set_len(Bytes& b, uint32_t len) {
  for (int i = 0; i < 4; ++i) b[8 + i] = static_cast<uint8_t>(len >> (24 - 8 * i));
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

Bytes open_payload(uint8_t op, uint8_t cks, const std::string& path, uint32_t flags = 0) {
  Bytes p;
  Writer w(p);
  w.u8(op);
  w.u8(cks);
  w.u32(flags);
  w.str(path);
  w.u16(0);  // more paths
  w.u16(0);  // filter rules
  w.u32(0);  // preserve
  return p;
}

/// An OPEN (get) payload with these extra paths and rules, counts as given.
Bytes open_lists(uint16_t npaths, const std::vector<std::string>& paths, uint16_t nrules,
                 const std::vector<std::string>& rules) {
  Bytes p;
  Writer w(p);
  w.u8(2);
  w.u8(1);
  w.u32(0);  // flags
  w.str("m/a");
  w.u16(npaths);
  for (auto& x : paths) w.str(x);
  w.u16(nrules);
  for (auto& x : rules) w.str(x);
  w.u32(0);  // preserve
  return p;
}

Bytes chunk_ready_payload(uint64_t offset, uint32_t length, uint8_t dlen = 16) {
  Bytes p;
  Writer w(p);
  w.u32(1);
  w.u32(2);
  w.u64(offset);
  w.u32(length);
  w.u64(0x1000);
  w.u32(77);
  w.u8(dlen);
  for (uint8_t i = 0; i < dlen; ++i) w.u8(i);
  return p;
}

void expect_proto_error(const Bytes& b, const char* what_contains = nullptr) {
  auto r = decode(b);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EPROTO);
  if (what_contains) CHECK_MESSAGE(contains(r.error().context, what_contains), r.error().context);
}

Hello good_hello() {
  Hello h;
  h.ctrl_depth = 64;
  h.rd_init = 16;
  h.rd_resp = 15;
  h.max_sge_rd = 30;
  h.checksums = 7;
  h.max_chunk = 4u << 20;
  h.ctrl_msg_size = kMaxMessage;
  h.flags = 0xA5A5A5A5;
  return h;
}

}  // namespace

TEST_CASE("Writer and Reader are explicitly big-endian") {
  Bytes b;
  Writer w(b);
  w.u32(0x01020304);
  CHECK(b == Bytes{0x01, 0x02, 0x03, 0x04});
  w.u16(0xA1B2);
  w.u64(0x0102030405060708ull);
  w.u8(0xFF);
  w.str("hi");
  CHECK(b == Bytes{0x01, 0x02, 0x03, 0x04, 0xA1, 0xB2, 1, 2, 3, 4, 5, 6, 7, 8, 0xFF, 0x00, 0x02, 'h', 'i'});
  Reader r(b);
  CHECK(r.u32() == 0x01020304u);
  CHECK(r.u16() == 0xA1B2);
  CHECK(r.u64() == 0x0102030405060708ull);
  CHECK(r.u8() == 0xFF);
  CHECK(r.str(2) == "hi");
  CHECK(r.at_end());
  CHECK(r.ok());
}

TEST_CASE("Reader latches failure on the first short read") {
  Bytes b{0x01, 0x02, 0x03};
  Reader r(b);
  (void)r.u32();  // its value is unspecified (u32 is two u16 reads); decoders check ok()
  CHECK_FALSE(r.ok());
  CHECK(r.u8() == 0);  // even though a byte is left, the reader stays failed
  CHECK(r.remaining() == 0);
  CHECK_FALSE(r.at_end());
  CHECK(r.u32() == 0u);
  CHECK(r.u64() == 0u);

  Bytes one{0x7F};
  Reader short16(one);
  CHECK(short16.u16() == 0);
  CHECK_FALSE(short16.ok());

  Bytes s{0x00, 0x03, 'a', 'b', 'c'};
  Reader too_long(s);
  CHECK(too_long.str(2).empty());
  CHECK_FALSE(too_long.ok());
  Reader exact(s);
  CHECK(exact.str(3) == "abc");
  CHECK(exact.at_end());
}

TEST_CASE("every message type round-trips with non-trivial values") {
  const auto all = samples();
  // Every alternative of the variant is covered.
  std::vector<bool> seen(std::variant_size_v<Message>, false);
  for (const auto& m : all) seen[m.index()] = true;
  for (size_t i = 0; i < seen.size(); ++i) CHECK_MESSAGE(seen[i], "variant alternative " << i << " not covered");

  for (size_t i = 0; i < all.size(); ++i) {
    CAPTURE(i);
    const Bytes b = enc(all[i]);
    REQUIRE(b.size() >= kHeaderSize);
    CHECK(b.size() <= max_message(type_of(all[i])));
    // Header: magic, version, type, payload length.
    CHECK(b[0] == 0x52);
    CHECK(b[1] == 0x43);
    CHECK(b[2] == 0x50);
    CHECK(b[3] == 0x30);
    CHECK(((b[4] << 8) | b[5]) == kVersion);
    CHECK(((b[6] << 8) | b[7]) == static_cast<int>(type_of(all[i])));
    auto len = peek_length(b);
    REQUIRE(len.ok());
    CHECK(*len == b.size() - kHeaderSize);

    auto r = decode(b);
    REQUIRE_MESSAGE(r.ok(), r.error().message());
    CHECK(same(*r, all[i]));
    CHECK(type_of(*r) == type_of(all[i]));
  }
}

TEST_CASE("a decoded message differs when a field differs (the comparison can fail)") {
  Bytes b = enc(Done{1, 2});
  b.back() = 3;
  auto r = decode(b);
  REQUIRE(r.ok());
  CHECK_FALSE(same(*r, Done{1, 2}));
  CHECK(same(*r, Done{1, 2, 3}));
}

TEST_CASE("exact encoding of DONE and OPEN") {
  CHECK(enc(Done{1, 2, 3}) == Bytes{0x52, 0x43, 0x50, 0x30, kVerHi, kVerLo, 0x00, 0x09, 0x00, 0x00, 0x00, 0x0c,
                                    0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3});
  const Bytes open = enc(Open{Op::get, Checksum::sha256, kOpenMulti, "m/a", {"b"}, {"- c"}, 0x0102});
  CHECK(open == Bytes{0x52, 0x43, 0x50, 0x30, kVerHi, kVerLo, 0x00, 0x01, 0x00, 0x00, 0x00, 0x1b,
                      0x02, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x03, 'm', '/', 'a',
                      0x00, 0x01, 0x00, 0x01, 'b', 0x00, 0x01, 0x00, 0x03, '-', ' ', 'c', 0, 0, 0x01, 0x02});
  CHECK(open_size(Open{Op::get, Checksum::sha256, kOpenMulti, "m/a", {"b"}, {"- c"}, 0x0102}) == open.size());
  // Magic first, big-endian "RCP0".
  CHECK(((uint32_t{open[0]} << 24) | (uint32_t{open[1]} << 16) | (uint32_t{open[2]} << 8) | open[3]) == kMagic);
  CHECK(enc(Finish{}) == Bytes{0x52, 0x43, 0x50, 0x30, kVerHi, kVerLo, 0x00, 0x08, 0, 0, 0, 0});
}

TEST_CASE("exact encoding of FILE_BEGIN: mtime_ns right after mode, metadata after the name") {
  const Bytes b = enc(FileBegin{1, 2, S_IFLNK | 0777, -2, "n", 3, 4, "u", "g", "t", 0});
  CHECK(b == Bytes{0x52, 0x43, 0x50, 0x30, kVerHi, kVerLo, 0x00, 0x03, 0x00, 0x00, 0x00, 0x38,
                   0, 0, 0, 1,                                      // file_id
                   0, 0, 0, 0, 0, 0, 0, 2,                          // size
                   0, 0, 0xa1, 0xff,                                // mode
                   0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,  // mtime_ns
                   0, 1, 'n',                                       // name
                   0, 0, 0, 3, 0, 0, 0, 4,                          // uid, gid
                   0, 1, 'u', 0, 1, 'g', 0, 1, 't',                 // user, group, link target
                   0, 0, 0, 0, 0, 0, 0, 0,                          // rdev
                   0, 0, 0, 0});                                    // link_to
}

namespace {
/// A FILE_BEGIN payload, field by field, so a test can put in what encode() would not.
Bytes file_begin_payload(uint64_t size, uint32_t mode, const std::string& name, const std::string& user,
                         const std::string& target, uint64_t rdev, uint32_t id = 1, uint32_t link_to = 0) {
  Bytes p;
  Writer w(p);
  w.u32(id);
  w.u64(size);
  w.u32(mode);
  w.u64(0);
  w.str(name);
  w.u32(0);
  w.u32(0);
  w.str(user);
  w.str("");
  w.str(target);
  w.u64(rdev);
  w.u32(link_to);
  return p;
}
}  // namespace

TEST_CASE("FILE_BEGIN metadata is validated: type, bits, size, target, device, names") {
  const auto fb = static_cast<uint16_t>(MsgType::file_begin);
  CHECK(decode(frame(fb, file_begin_payload(5, 0644, "f", "", "", 0))).ok());             // legacy: type 0 = file
  CHECK(decode(frame(fb, file_begin_payload(5, S_IFREG | 04755, "f", "", "", 0))).ok());
  CHECK(decode(frame(fb, file_begin_payload(0, S_IFLNK | 0777, "l", "", "x", 0))).ok());
  CHECK(decode(frame(fb, file_begin_payload(0, S_IFBLK | 0600, "b", "", "", 0x0801))).ok());
  CHECK(decode(frame(fb, file_begin_payload(0, S_IFSOCK | 0600, "s", "", "", 0))).ok());
  expect_proto_error(frame(fb, file_begin_payload(0, 0170000 | 0644, "x", "", "", 0)), "unknown file type");
  expect_proto_error(frame(fb, file_begin_payload(0, 0030000, "x", "", "", 0)), "unknown file type");
  expect_proto_error(frame(fb, file_begin_payload(0, 01000000 | 0644, "x", "", "", 0)), "unknown bits");
  expect_proto_error(frame(fb, file_begin_payload(1, S_IFDIR | 0755, "d", "", "", 0)), "only a regular file");
  expect_proto_error(frame(fb, file_begin_payload(3, S_IFLNK | 0777, "l", "", "abc", 0)), "only a regular file");
  expect_proto_error(frame(fb, file_begin_payload(0, S_IFLNK | 0777, "l", "", "", 0)), "without a target");
  expect_proto_error(frame(fb, file_begin_payload(0, S_IFREG | 0644, "f", "", "t", 0)), "non-symlink");
  expect_proto_error(frame(fb, file_begin_payload(0, S_IFIFO | 0644, "p", "", "", 7)), "non-device");
  expect_proto_error(frame(fb, file_begin_payload(0, S_IFLNK | 0777, "l", "", std::string("a\0b", 3), 0)), "NUL");
  expect_proto_error(frame(fb, file_begin_payload(0, S_IFREG, "f", std::string("r\0t", 3), "", 0)), "NUL");
  expect_proto_error(frame(fb, file_begin_payload(0, S_IFREG, "f", std::string(kMaxIdName + 1, 'u'), "", 0)));
  CHECK(decode(frame(fb, file_begin_payload(0, S_IFREG, "f", std::string(kMaxIdName, 'u'), "", 0))).ok());
  expect_proto_error(frame(fb, file_begin_payload(0, S_IFLNK | 0777, "l", "", std::string(kMaxPath + 1, 't'), 0)));
  // Hard links (-H): a group's first names itself, the others an earlier file and carry no data.
  CHECK(decode(frame(fb, file_begin_payload(9, S_IFREG | 0644, "h", "", "", 0, 5, 5))).ok());
  CHECK(decode(frame(fb, file_begin_payload(0, S_IFREG | 0644, "h", "", "", 0, 6, 5))).ok());
  expect_proto_error(frame(fb, file_begin_payload(0, S_IFREG | 0644, "h", "", "", 0, 5, 6)), "later file");
  expect_proto_error(frame(fb, file_begin_payload(3, S_IFREG | 0644, "h", "", "", 0, 6, 5)), "with data");
  expect_proto_error(frame(fb, file_begin_payload(0, S_IFDIR | 0755, "h", "", "", 0, 6, 5)), "non-file");
}

TEST_CASE("OPEN refuses unknown preserve bits") {
  Bytes p = open_payload(1, 1, "m");
  CHECK(decode(frame(1, p)).ok());
  for (uint32_t bad : {kPreserveKnown + 1, 1u << 31}) {
    CAPTURE(bad);
    Bytes q = p;
    for (int i = 0; i < 4; ++i) q[q.size() - 4 + i] = static_cast<uint8_t>(bad >> (24 - 8 * i));
    expect_proto_error(frame(1, q), "unknown metadata");
  }
}

TEST_CASE("encode appends after existing bytes and leaves them intact on failure") {
  Bytes out{0xAA, 0xBB};
  REQUIRE(encode(Done{5, 6}, out).ok());
  CHECK(out.size() == 2 + kHeaderSize + 12);
  CHECK(out[0] == 0xAA);
  CHECK(out[1] == 0xBB);
  auto r = decode(std::span<const uint8_t>(out).subspan(2));
  REQUIRE(r.ok());
  CHECK(same(*r, Done{5, 6}));

  const Bytes before = out;
  auto st = encode(Open{Op::put, Checksum::xxh128, 0, std::string(kMaxPath + 1, 'x')}, out);
  CHECK_FALSE(st.ok());
  CHECK(out == before);
}

TEST_CASE("encode refuses fields beyond their limits") {
  Bytes out;
  SUBCASE("path longer than kMaxPath") {
    auto st = encode(Open{Op::put, Checksum::xxh128, 0, std::string(kMaxPath + 1, 'x')}, out);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == EPROTO);
  }
  SUBCASE("file name longer than kMaxPath") {
    auto st = encode(FileBegin{1, 1, 0644, 0, std::string(kMaxPath + 1, 'x')}, out);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == EPROTO);
  }
  SUBCASE("CHUNK_DONE with more than kMaxDoneBatch slots") {
    ChunkDone c;
    c.slots.assign(kMaxDoneBatch + 1, 1);
    auto st = encode(c, out);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == EPROTO);
  }
  CHECK(out.empty());
}

TEST_CASE("over-long error text is cut to kMaxText rather than failing the encode") {
  const std::string text(5000, 'z');
  auto r = decode(enc(ErrorMsg{EIO, text}));
  REQUIRE(r.ok());
  CHECK(std::get<ErrorMsg>(*r).message == text.substr(0, kMaxText));
  auto r2 = decode(enc(FileResult{1, EIO, 0, 0, 0, text}));
  REQUIRE(r2.ok());
  CHECK(std::get<FileResult>(*r2).message.size() == kMaxText);
}

TEST_CASE("every truncation of every message is refused") {
  for (const auto& m : samples()) {
    const Bytes b = enc(m);
    CAPTURE(type_name(type_of(m)));
    for (size_t n = 0; n < b.size(); ++n) {
      CAPTURE(n);
      auto r = decode(std::span<const uint8_t>(b.data(), n));
      CHECK_FALSE(r.ok());
    }
  }
}

TEST_CASE("every payload truncation is refused even when the header length agrees") {
  for (const auto& m : samples()) {
    const Bytes full = enc(m);
    CAPTURE(type_name(type_of(m)));
    for (size_t n = kHeaderSize; n < full.size(); ++n) {
      CAPTURE(n);
      Bytes b(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
      set_len(b, static_cast<uint32_t>(n - kHeaderSize));
      auto r = decode(b);
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().code == EPROTO);
    }
  }
}

TEST_CASE("a trailing byte is refused") {
  for (const auto& m : samples()) {
    CAPTURE(type_name(type_of(m)));
    Bytes b = enc(m);
    b.push_back(0);
    CHECK_FALSE(decode(b).ok());  // header length disagrees with the buffer
    set_len(b, static_cast<uint32_t>(b.size() - kHeaderSize));
    auto r = decode(b);  // header agrees: the payload has one byte left over
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().context, "trailing"));
  }
}

TEST_CASE("bad magic, other version and unknown type are refused") {
  const Bytes good = enc(Done{1, 1});
  REQUIRE(decode(good).ok());

  SUBCASE("magic") {
    for (size_t i = 0; i < 4; ++i) {
      Bytes b = good;
      b[i] ^= 0x01;
      expect_proto_error(b, "magic");
      CHECK_FALSE(peek_length(b).ok());
    }
  }
  SUBCASE("version") {
    Bytes b = frame(static_cast<uint16_t>(MsgType::done), Bytes(8, 0), 4660);
    auto r = decode(b);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EPROTO);
    CHECK_MESSAGE(contains(r.error().context, "4660"), r.error().context);
    CHECK_MESSAGE(contains(r.error().context, std::to_string(kVersion)), r.error().context);
    auto p = peek_length(b);
    REQUIRE_FALSE(p.ok());
    CHECK(contains(p.error().context, "4660"));
    expect_proto_error(frame(static_cast<uint16_t>(MsgType::done), Bytes(8, 0), 0));
    expect_proto_error(frame(static_cast<uint16_t>(MsgType::done), Bytes(8, 0), kVersion + 1));
  }
  SUBCASE("type") {
    for (uint16_t t : {uint16_t{0}, static_cast<uint16_t>(kMessageTypes + 1), uint16_t{0x100}, uint16_t{0xFFFF}}) {
      CAPTURE(t);
      expect_proto_error(frame(t, {}), "unknown message type");
      expect_proto_error(frame(t, Bytes(8, 0)), "unknown message type");
    }
  }
}

TEST_CASE("header length must agree with the buffer and stay within kMaxMessage") {
  Bytes b = enc(Done{1, 2});
  for (uint32_t len : {0u, 7u, 9u, 100u, 0xFFFFFFFFu}) {
    CAPTURE(len);
    Bytes c = b;
    set_len(c, len);
    CHECK_FALSE(decode(c).ok());
  }
  // A payload that would make the message longer than kMaxMessage, even if present.
  Bytes big = frame(static_cast<uint16_t>(MsgType::error), Bytes(kMaxMessage - kHeaderSize + 1, 0));
  expect_proto_error(big, "exceeds");
  Bytes huge = frame(static_cast<uint16_t>(MsgType::finish), {});
  set_len(huge, 0x7FFFFFFF);
  CHECK_FALSE(decode(huge).ok());
}

TEST_CASE("peek_length") {
  const Bytes b = enc(Open{Op::put, Checksum::xxh128, 0, "mod/some/path"});
  SUBCASE("reads the length from the header alone") {
    auto r = peek_length(std::span<const uint8_t>(b.data(), kHeaderSize));
    REQUIRE(r.ok());
    CHECK(*r == b.size() - kHeaderSize);
  }
  SUBCASE("short header") {
    for (size_t n = 0; n < kHeaderSize; ++n) CHECK_FALSE(peek_length(std::span<const uint8_t>(b.data(), n)).ok());
  }
  SUBCASE("limits") {
    Bytes h(b.begin(), b.begin() + kHeaderSize);
    set_len(h, kMaxMessage - kHeaderSize);
    auto ok = peek_length(h);
    REQUIRE(ok.ok());
    CHECK(*ok == kMaxMessage - kHeaderSize);
    set_len(h, kMaxMessage - kHeaderSize + 1);
    CHECK_FALSE(peek_length(h).ok());
    set_len(h, 0xFFFFFFFF);
    CHECK_FALSE(peek_length(h).ok());
    set_len(h, 0);
    auto zero = peek_length(h);
    REQUIRE(zero.ok());
    CHECK(*zero == 0u);
  }
}

TEST_CASE("string and path fields are bounded") {
  SUBCASE("string length larger than what is left") {
    Bytes p = open_payload(1, 1, "abcde");
    p[7] = 10;  // announce 10 bytes, 5 follow (op, checksum, flags u32, then the length)
    expect_proto_error(frame(1, p), "truncated");
  }
  SUBCASE("path of exactly kMaxPath bytes is accepted, one more is refused") {
    CHECK(decode(frame(1, open_payload(1, 1, std::string(kMaxPath, 'a')))).ok());
    expect_proto_error(frame(1, open_payload(1, 1, std::string(kMaxPath + 1, 'a'))));
  }
  SUBCASE("file name longer than kMaxPath") {
    Bytes p;
    Writer w(p);
    w.u32(1);
    w.u64(10);
    w.u32(0644);
    w.u64(0);
    w.str(std::string(kMaxPath + 1, 'n'));
    expect_proto_error(frame(static_cast<uint16_t>(MsgType::file_begin), p));
  }
  SUBCASE("text longer than kMaxText") {
    for (auto t : {MsgType::error, MsgType::file_result}) {
      Bytes p;
      Writer w(p);
      if (t == MsgType::file_result) w.u32(1);
      w.u32(5);
      if (t == MsgType::file_result) { w.u8(0); w.u64(0); w.u64(0); }
      w.str(std::string(kMaxText + 1, 'e'));
      expect_proto_error(frame(static_cast<uint16_t>(t), p));
      Bytes q;
      Writer wq(q);
      if (t == MsgType::file_result) wq.u32(1);
      wq.u32(5);
      if (t == MsgType::file_result) { wq.u8(0); wq.u64(0); wq.u64(0); }
      wq.str(std::string(kMaxText, 'e'));
      if (t == MsgType::file_result) wq.u16(0);  // changes
      CHECK(decode(frame(static_cast<uint16_t>(t), q)).ok());
    }
  }
}

TEST_CASE("OPEN with unknown operation or checksum is refused") {
  CHECK(decode(frame(1, open_payload(1, 0, "m"))).ok());
  CHECK(decode(frame(1, open_payload(2, 2, "m"))).ok());
  CHECK(decode(frame(1, open_payload(3, 1, ""))).ok());  // list
  for (uint8_t op : {uint8_t{0}, uint8_t{4}, uint8_t{255}}) {
    CAPTURE(op);
    expect_proto_error(frame(1, open_payload(op, 1, "m")), "operation");
  }
  for (uint8_t c : {uint8_t{3}, uint8_t{4}, uint8_t{255}}) {
    CAPTURE(c);
    expect_proto_error(frame(1, open_payload(1, c, "m")), "checksum");
  }
}

TEST_CASE("OPEN with a flag this version does not know is refused") {
  CHECK(decode(frame(1, open_payload(1, 1, "m", kOpenKnownFlags))).ok());
  for (uint32_t f : {kOpenKnownFlags + 1, 0x10000u, 0x80000000u, 0xFFFFFFFFu}) {
    CAPTURE(f);
    expect_proto_error(frame(1, open_payload(1, 1, "m", f)), "unknown flags");
  }
}

TEST_CASE("FILE_RESULT: skipped is 0 or 1, and never with an error") {
  const auto payload = [](int32_t err, uint8_t skipped, uint16_t changes = 0) {
    Bytes p;
    Writer w(p);
    w.u32(1);
    w.u32(static_cast<uint32_t>(err));
    w.u8(skipped);
    w.u64(0);
    w.u64(0);
    w.str("");
    w.u16(changes);
    return p;
  };
  const uint16_t t = static_cast<uint16_t>(MsgType::file_result);
  CHECK(decode(frame(t, payload(0, 1))).ok());
  CHECK(decode(frame(t, payload(EIO, 0))).ok());
  expect_proto_error(frame(t, payload(0, 2)), "skipped not 0 or 1");
  expect_proto_error(frame(t, payload(EIO, 1)), "both skipped and failed");
  CHECK(decode(frame(t, payload(0, 0, kResultChangesKnown))).ok());
  for (uint16_t c : {uint16_t(kResultChangesKnown + 1), uint16_t{0x8000}, uint16_t{0xFFFF}}) {
    CAPTURE(c);
    expect_proto_error(frame(t, payload(0, 0, c)), "unknown change bits");
  }
}

TEST_CASE("ENTRY_DELETED: a name of 1 to kMaxPath bytes without NUL, is_dir 0 or 1") {
  const auto payload = [](const std::string& name, uint8_t is_dir) {
    Bytes p;
    Writer w(p);
    w.str(name);
    w.u8(is_dir);
    return p;
  };
  const uint16_t t = static_cast<uint16_t>(MsgType::entry_deleted);
  CHECK(decode(frame(t, payload("a/b", 1))).ok());
  expect_proto_error(frame(t, payload("", 0)), "empty name");
  expect_proto_error(frame(t, payload(std::string("a\0b", 3), 0)), "NUL");
  expect_proto_error(frame(t, payload("a", 2)), "is_dir not 0 or 1");
  CHECK_FALSE(decode(frame(t, payload(std::string(kMaxPath + 1, 'x'), 0))).ok());
  Bytes out;
  CHECK_FALSE(encode(EntryDeleted{"", 0}, out).ok());
  CHECK_FALSE(encode(FileResult{1, 0, 0, 0, 0, "", 0x8000}, out).ok());
}

TEST_CASE("FILE_SKIPPED: vanished is 0 or 1, and only with an error") {
  const auto payload = [](int32_t err, uint8_t vanished) {
    Bytes p;
    Writer w(p);
    w.u32(static_cast<uint32_t>(err));
    w.str("x");
    w.u8(vanished);
    return p;
  };
  const uint16_t t = static_cast<uint16_t>(MsgType::file_skipped);
  CHECK(decode(frame(t, payload(ENOENT, 1))).ok());
  CHECK(decode(frame(t, payload(EACCES, 0))).ok());
  CHECK(decode(frame(t, payload(0, 0))).ok());
  expect_proto_error(frame(t, payload(ENOENT, 2)), "vanished=2");
  expect_proto_error(frame(t, payload(0, 1)), "vanished=1 with err=0");
}

TEST_CASE("WALK_TOTALS: final is 0 or 1, files fit a file id, any byte count") {
  const auto payload = [](uint64_t files, uint64_t bytes, uint8_t final) {
    Bytes p;
    Writer w(p);
    w.u64(files);
    w.u64(bytes);
    w.u8(final);
    return p;
  };
  const uint16_t t = static_cast<uint16_t>(MsgType::walk_totals);
  auto ok = decode(frame(t, payload(kMaxWalkFiles, UINT64_MAX, 1)));
  REQUIRE(ok.ok());
  CHECK(std::get<WalkTotals>(ok.value()).bytes == UINT64_MAX);
  CHECK(decode(frame(t, payload(0, 0, 0))).ok());
  expect_proto_error(frame(t, payload(1, 1, 2)), "final not 0 or 1");
  expect_proto_error(frame(t, payload(kMaxWalkFiles + 1, 0, 1)), "announces 4294967296 files");
  expect_proto_error(frame(t, payload(UINT64_MAX, 0, 0)), "announces");
  Bytes out;
  CHECK_FALSE(encode(WalkTotals{kMaxWalkFiles + 1, 0, 1}, out).ok());
  CHECK_FALSE(encode(WalkTotals{1, 0, 2}, out).ok());
  CHECK(out.empty());
}

TEST_CASE("HOLE: never empty, never past 2^64 (whether it fits the file is the sink's check)") {
  const auto payload = [](uint32_t id, uint64_t offset, uint64_t length) {
    Bytes p;
    Writer w(p);
    w.u32(id);
    w.u64(offset);
    w.u64(length);
    return p;
  };
  const uint16_t t = static_cast<uint16_t>(MsgType::hole);
  auto ok = decode(frame(t, payload(3, UINT64_MAX - 10, 10)));
  REQUIRE(ok.ok());
  CHECK(std::get<Hole>(ok.value()).offset == UINT64_MAX - 10);
  expect_proto_error(frame(t, payload(3, 0, 0)), "HOLE of 0 bytes");
  expect_proto_error(frame(t, payload(3, UINT64_MAX - 10, 11)), "wraps past 2^64");
  expect_proto_error(frame(t, payload(3, 1, UINT64_MAX)), "wraps past 2^64");
  Bytes out;
  CHECK_FALSE(encode(Hole{1, 5, 0}, out).ok());
  CHECK_FALSE(encode(Hole{1, 5, UINT64_MAX}, out).ok());
  CHECK(out.empty());
}

TEST_CASE("XATTR: a name of 1 to 255 bytes without NUL, a value of at most 64 KiB, the piece inside it") {
  const auto payload = [](const std::string& name, uint32_t total, uint32_t offset, const std::string& data) {
    Bytes p;
    Writer w(p);
    w.u32(4);
    w.str(name);
    w.u32(total);
    w.u32(offset);
    w.str(data);
    return p;
  };
  const uint16_t t = static_cast<uint16_t>(MsgType::xattr);
  CHECK(decode(frame(t, payload("user.x", 0, 0, ""))).ok());
  CHECK(decode(frame(t, payload(std::string(255, 'n'), 65536, 65536 - 3072, std::string(3072, 'v')))).ok());
  CHECK(decode(frame(t, payload("user.x", 10, 4, "abcdef"))).ok());  // the last piece of a value
  expect_proto_error(frame(t, payload("", 0, 0, "")), "empty name");
  expect_proto_error(frame(t, payload(std::string("user.\0x", 7), 1, 0, "v")), "NUL");
  expect_proto_error(frame(t, payload(std::string(256, 'n'), 1, 0, "v")), "truncated");  // XATTR_NAME_MAX
  expect_proto_error(frame(t, payload("user.x", 65537, 0, "v")), "at most 65536");      // XATTR_SIZE_MAX
  expect_proto_error(frame(t, payload("user.x", 65536, 0, std::string(3073, 'v'))), "truncated");  // piece size
  expect_proto_error(frame(t, payload("user.x", 10, 5, "abcdef")), "outside its 10 bytes");
  expect_proto_error(frame(t, payload("user.x", 10, 0xFFFFFFFF, "ab")), "outside");  // no u32 wrap
  expect_proto_error(frame(t, payload("user.x", 3, 0, "")), "empty piece");
  Bytes out;
  CHECK_FALSE(encode(XattrPiece{1, "", 0, 0, ""}, out).ok());
  CHECK_FALSE(encode(XattrPiece{1, std::string(256, 'n'), 0, 0, ""}, out).ok());
  CHECK_FALSE(encode(XattrPiece{1, "user.x", 65537, 0, "a"}, out).ok());
  CHECK_FALSE(encode(XattrPiece{1, "user.x", 4000, 0, std::string(3073, 'v')}, out).ok());
  CHECK_FALSE(encode(XattrPiece{1, "user.x", 2, 1, "ab"}, out).ok());
  CHECK_FALSE(encode(XattrPiece{1, "user.x", 2, 0, ""}, out).ok());
  CHECK(out.empty());
}

TEST_CASE("SMALL_FILE: a plain regular file of 1 to kMaxFileData bytes, its size that of its data") {
  const auto sf = [](uint32_t mode, uint64_t size, std::string data, uint32_t link_to = 0) {
    return enc(SmallFile{FileBegin{7, size, mode, 0, "f", 0, 0, "", "", "", 0, link_to}, make_digest(16, 3), std::move(data)});
  };
  CHECK(decode(sf(0100600, 3, "abc")).ok());
  CHECK(decode(sf(0600, 3, "abc")).ok());  // (type 0 reads as a regular file, as in FILE_BEGIN)
  CHECK(decode(sf(0600, kMaxFileData, std::string(kMaxFileData, 'd'))).ok());
  expect_proto_error(sf(S_IFIFO | 0600, 0, ""), "not a regular file");
  expect_proto_error(sf(S_IFDIR | 0700, 0, ""), "not a regular file");
  expect_proto_error(sf(0600, 3, "abc", 7), "a hard link");  // (a group's first names itself)
  expect_proto_error(sf(0600, 0, ""), "no data");
  expect_proto_error(sf(0600, 5, "abc"), "size 5 with 3 bytes");
  expect_proto_error(sf(0600, 3, "abcd"), "size 3 with 4 bytes");
  expect_proto_error(sf(0600, 1u << 20, "abc"), "size 1048576 with 3 bytes");
  // FILE_BEGIN's own checks hold inside it.
  expect_proto_error(sf(0600 | 010000000, 3, "abc"), "unknown bits");
  // Data past kMaxFileData: the length field itself is refused.
  SmallFile over{FileBegin{7, kMaxFileData + 1, 0600, 0, "f"}, make_digest(16, 3), std::string(kMaxFileData + 1, 'd')};
  Bytes out;
  CHECK_FALSE(encode(over, out).ok());
  CHECK(out.empty());
  // Written by hand: the data's length says kMaxFileData + 1 and the bytes follow.
  Bytes p = sf(0600, 3, "abc");
  p.resize(p.size() - 5);  // drop the data's length and bytes
  const uint16_t n = kMaxFileData + 1;
  p.push_back(static_cast<uint8_t>(n >> 8));
  p.push_back(static_cast<uint8_t>(n & 0xff));
  p.insert(p.end(), n, 'd');
  set_len(p, static_cast<uint32_t>(p.size() - kHeaderSize));
  expect_proto_error(p, "truncated");
}

TEST_CASE("only SMALL_FILE may be larger than kMaxMessage, and not past kMaxLargeMessage") {
  Bytes h = frame(static_cast<uint16_t>(MsgType::small_file), {});
  set_len(h, kMaxLargeMessage - kHeaderSize);
  CHECK(peek_length(h).ok());
  set_len(h, kMaxLargeMessage - kHeaderSize + 1);
  CHECK_FALSE(peek_length(h).ok());
  for (uint16_t t = 1; t <= kMessageTypes; ++t) {
    if (t == static_cast<uint16_t>(MsgType::small_file)) continue;
    CAPTURE(t);
    Bytes o = frame(t, {});
    set_len(o, kMaxMessage - kHeaderSize + 1);
    CHECK_FALSE(peek_length(o).ok());
  }
  CHECK(max_message(MsgType::small_file) == kMaxLargeMessage);
  CHECK(max_message(MsgType::file_begin) == kMaxMessage);
  // What the encoder says a SMALL_FILE takes is what it writes.
  for (const Message& m : samples())
    if (const auto* x = std::get_if<SmallFile>(&m)) CHECK(small_file_size(*x) == enc(m).size());
}

TEST_CASE("OPEN's paths and filter rules are bounded and validated") {
  auto ok = decode(frame(1, open_lists(2, {"b", "c/d"}, 2, {"- *.o", "+ x/"})));
  REQUIRE(ok.ok());
  CHECK(std::get<Open>(*ok).more == std::vector<std::string>{"b", "c/d"});
  CHECK(std::get<Open>(*ok).filters == std::vector<std::string>{"- *.o", "+ x/"});
  expect_proto_error(frame(1, open_lists(kMaxOpenPaths + 1, {}, 0, {})), "paths");
  expect_proto_error(frame(1, open_lists(0, {}, kMaxOpenRules + 1, {})), "filter rules");
  {
    // Three paths announced, two present: the message ends where the third
    // should start (the rule count and preserve bits cut off too).
    Bytes cut = open_lists(3, {"b", "c"}, 0, {});
    cut.resize(cut.size() - 6);
    expect_proto_error(frame(1, cut), "truncated");
  }
  expect_proto_error(frame(1, open_lists(1, {""}, 0, {})), "empty path");
  expect_proto_error(frame(1, open_lists(1, {std::string("a\0b", 3)}, 0, {})), "NUL");
  for (std::string bad : {"*.o", "x *.o", "- ", "-  ", "+x"}) {
    CAPTURE(bad);
    if (bad == "-  ") continue;  // "- " then a space: a pattern " " is a pattern
    expect_proto_error(frame(1, open_lists(0, {}, 1, {bad})), "filter rule");
  }
  expect_proto_error(frame(1, open_lists(0, {}, 1, {std::string("- a\0", 4)})), "filter rule");
  expect_proto_error(frame(1, open_lists(0, {}, 1, {"- " + std::string(kMaxOpenRuleLen, 'a')})));
  // The encoder refuses what the decoder would.
  Bytes out;
  Open many{Op::get, Checksum::xxh128, 0, "m/a", std::vector<std::string>(kMaxOpenPaths + 1, "p"), {}};
  CHECK_FALSE(encode(many, out).ok());
  Open big{Op::get, Checksum::xxh128, 0, "m/a", std::vector<std::string>(200, std::string(30, 'p')), {}};
  CHECK(open_size(big) > kMaxMessage);
  CHECK_FALSE(encode(big, out).ok());
  CHECK(out.empty());
}

TEST_CASE("MODULE_LIST is bounded: count, name length, whole size") {
  ModuleList l;
  for (size_t i = 0; i <= kMaxModules; ++i) l.modules.push_back({"m" + std::to_string(i), ""});
  Bytes out;
  CHECK_FALSE(encode(l, out).ok());  // one too many
  l.modules.pop_back();
  CHECK(encode(l, out).ok());
  ModuleList big{{{std::string(kMaxModuleText + 1, 'n'), ""}}, 0};
  Bytes o2;
  CHECK_FALSE(encode(big, o2).ok());
  // a count above the limit on the wire is refused before anything is read
  Bytes payload{0, 0xFF, 0xFF};
  expect_proto_error(frame(static_cast<uint16_t>(MsgType::module_list), payload), "MODULE_LIST");
  // ... even when the entries are all there (well inside kMaxMessage)
  auto listing = [](size_t n) {
    Bytes p;
    Writer w(p);
    w.u8(0);
    w.u16(static_cast<uint16_t>(n));
    for (size_t i = 0; i < n; ++i) {
      w.str("m");
      w.str("");
    }
    return frame(static_cast<uint16_t>(MsgType::module_list), p);
  };
  auto fits = decode(listing(kMaxModules));
  REQUIRE(fits.ok());
  CHECK(std::get<ModuleList>(*fits).modules.size() == kMaxModules);
  expect_proto_error(listing(kMaxModules + 1), "(limit 64)");
}

TEST_CASE("CHUNK_DONE slot count is bounded") {
  auto build = [](uint16_t count, size_t actual) {
    Bytes p;
    Writer w(p);
    w.u16(count);
    for (size_t i = 0; i < actual; ++i) w.u32(static_cast<uint32_t>(i));
    return frame(static_cast<uint16_t>(MsgType::chunk_done), p);
  };
  auto ok = decode(build(kMaxDoneBatch, kMaxDoneBatch));
  REQUIRE(ok.ok());
  CHECK(std::get<ChunkDone>(*ok).slots.size() == kMaxDoneBatch);
  expect_proto_error(build(kMaxDoneBatch + 1, kMaxDoneBatch + 1), "limit");
  expect_proto_error(build(0xFFFF, 0));
  expect_proto_error(build(3, 2));
  expect_proto_error(build(2, 3));
}

TEST_CASE("digests are bounded to 32 bytes") {
  CHECK(decode(frame(static_cast<uint16_t>(MsgType::chunk_ready), chunk_ready_payload(0, 1, 32))).ok());
  expect_proto_error(frame(static_cast<uint16_t>(MsgType::chunk_ready), chunk_ready_payload(0, 1, 33)));
  expect_proto_error(frame(static_cast<uint16_t>(MsgType::chunk_ready), chunk_ready_payload(0, 1, 255)));

  auto file_end = [](uint8_t dlen) {
    Bytes p;
    Writer w(p);
    w.u32(1);
    w.u64(100);
    w.u8(dlen);
    for (uint8_t i = 0; i < dlen; ++i) w.u8(i);
    return frame(static_cast<uint16_t>(MsgType::file_end), p);
  };
  auto ok = decode(file_end(32));
  REQUIRE(ok.ok());
  CHECK(std::get<FileEnd>(*ok).digest.len == 32);
  CHECK(std::get<FileEnd>(*ok).digest.bytes[31] == 31);
  expect_proto_error(file_end(33));
  expect_proto_error(file_end(200));
}

TEST_CASE("CHUNK_READY length and offset are checked") {
  const auto t = static_cast<uint16_t>(MsgType::chunk_ready);
  expect_proto_error(frame(t, chunk_ready_payload(0, 0)), "out of range");
  expect_proto_error(frame(t, chunk_ready_payload(0, kMaxChunk + 1)), "out of range");
  expect_proto_error(frame(t, chunk_ready_payload(0, 0xFFFFFFFF)), "out of range");
  CHECK(decode(frame(t, chunk_ready_payload(0, kMaxChunk))).ok());
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  expect_proto_error(frame(t, chunk_ready_payload(max, 1)), "overflow");
  expect_proto_error(frame(t, chunk_ready_payload(max - 100, 4096)), "overflow");
  auto edge = decode(frame(t, chunk_ready_payload(max - 4096, 4096)));  // ends exactly at 2^64 - 1
  REQUIRE(edge.ok());
  CHECK(std::get<ChunkReady>(*edge).offset == max - 4096);
}

TEST_CASE("hello round-trips in 32 bytes") {
  static_assert(kHelloSize == 32);
  static_assert(kHelloSize <= 56, "rdma_connect private data holds 56 bytes");
  const Hello h = good_hello();
  const Bytes b = encode_hello(h);
  REQUIRE(b.size() == kHelloSize);
  CHECK(b[0] == 0x52);
  CHECK(b[1] == 0x43);
  CHECK(b[2] == 0x50);
  CHECK(b[3] == 0x30);
  CHECK(b[5] == kVersion);
  CHECK(b[7] == kHelloSize);
  CHECK(b[8] == 0);
  CHECK(b[9] == 64);  // ctrl_depth, big-endian
  auto r = decode_hello(b);
  REQUIRE_MESSAGE(r.ok(), r.error().message());
  CHECK(r->version == kVersion);
  CHECK(r->ctrl_depth == h.ctrl_depth);
  CHECK(r->rd_init == h.rd_init);
  CHECK(r->rd_resp == h.rd_resp);
  CHECK(r->max_sge_rd == h.max_sge_rd);
  CHECK(r->checksums == h.checksums);
  CHECK(r->max_chunk == h.max_chunk);
  CHECK(r->ctrl_msg_size == h.ctrl_msg_size);
  CHECK(r->flags == h.flags);
}

TEST_CASE("hello carries the announced queue pairs and a session token behind it") {
  static_assert(kHelloTokenSize <= 56, "a join's hello and token fit rdma_connect's private data");
  Hello h = good_hello();
  h.flags = 0;
  h.qps = 3;
  const Bytes b = encode_hello_token(h, kHelloJoin, 0x0102030405060708ull);
  REQUIRE(b.size() == kHelloTokenSize);
  CHECK(b[18] == 0);
  CHECK(b[19] == 3);  // qps, big-endian, in the slot that used to be reserved
  CHECK(b[32] == 0x01);
  CHECK(b[39] == 0x08);  // token, big-endian
  auto r = decode_hello(b);
  REQUIRE_MESSAGE(r.ok(), r.error().message());
  CHECK(r->qps == 3);
  CHECK(r->flags == kHelloJoin);
  auto t = decode_hello_token(b);
  REQUIRE_MESSAGE(t.ok(), t.error().message());
  CHECK(*t == 0x0102030405060708ull);
  SUBCASE("padded private data still yields the token") {
    Bytes p = b;
    p.resize(196, 0);
    auto t2 = decode_hello_token(p);
    REQUIRE(t2.ok());
    CHECK(*t2 == 0x0102030405060708ull);
  }
  SUBCASE("a hello without room for the token is refused") {
    for (size_t n = 0; n < kHelloTokenSize; ++n) {
      CAPTURE(n);
      auto t2 = decode_hello_token(std::span<const uint8_t>(b.data(), n));
      REQUIRE_FALSE(t2.ok());
      CHECK(t2.error().code == EPROTO);
    }
  }
  SUBCASE("token 0 is refused") {
    auto t2 = decode_hello_token(encode_hello_token(h, kHelloJoin, 0));
    REQUIRE_FALSE(t2.ok());
    CHECK(t2.error().code == EPROTO);
  }
  SUBCASE("fresh tokens are non-zero and differ") {
    auto a = new_session_token();
    auto c = new_session_token();
    REQUIRE(a.ok());
    REQUIRE(c.ok());
    CHECK(*a != 0);
    CHECK(*a != *c);
  }
}

TEST_CASE("decode_hello accepts padding and refuses short or foreign hellos") {
  const Bytes b = encode_hello(good_hello());
  SUBCASE("padded to the 56 bytes of private data") {
    Bytes p = b;
    p.resize(56, 0xEE);
    auto r = decode_hello(p);
    REQUIRE(r.ok());
    CHECK(r->flags == 0xA5A5A5A5);
  }
  SUBCASE("short") {
    for (size_t n = 0; n < kHelloSize; ++n) {
      CAPTURE(n);
      auto r = decode_hello(std::span<const uint8_t>(b.data(), n));
      REQUIRE_FALSE(r.ok());
      CHECK_MESSAGE(contains(r.error().context, "hello too short"), r.error().context);
    }
  }
  SUBCASE("size field below 32") {
    Bytes p = b;
    p[7] = 16;
    CHECK_FALSE(decode_hello(p).ok());
  }
  SUBCASE("magic") {
    Bytes p = b;
    p[3] = 0x31;
    auto r = decode_hello(p);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EPROTO);
  }
  SUBCASE("version names both versions") {
    Hello h = good_hello();
    h.version = 4660;
    auto r = decode_hello(encode_hello(h));
    REQUIRE_FALSE(r.ok());
    CHECK_MESSAGE(contains(r.error().context, "4660"), r.error().context);
    CHECK_MESSAGE(contains(r.error().context, std::to_string(kVersion)), r.error().context);
  }
}

TEST_CASE("decode_hello validates the announced limits") {
  auto check = [](auto mutate, bool accepted) {
    Hello h = good_hello();
    mutate(h);
    auto r = decode_hello(encode_hello(h));
    CHECK(r.ok() == accepted);
    if (!r.ok()) CHECK(r.error().code == EPROTO);
  };
  check([](Hello&) {}, true);
  check([](Hello& h) { h.ctrl_depth = 0; }, false);
  check([](Hello& h) { h.ctrl_depth = 0xFFFF; }, true);
  check([](Hello& h) { h.ctrl_msg_size = 0; }, false);
  check([](Hello& h) { h.ctrl_msg_size = 255; }, false);
  check([](Hello& h) { h.ctrl_msg_size = 256; }, true);
  check([](Hello& h) { h.ctrl_msg_size = kMaxMessage + 1; }, false);
  check([](Hello& h) { h.ctrl_msg_size = 0xFFFFFFFF; }, false);
  check([](Hello& h) { h.max_chunk = 0; }, false);
  check([](Hello& h) { h.max_chunk = 1; }, true);
  check([](Hello& h) { h.max_chunk = kMaxChunk; }, true);
  check([](Hello& h) { h.max_chunk = kMaxChunk + 1; }, false);
  check([](Hello& h) { h.max_sge_rd = 0; }, false);
  check([](Hello& h) { h.max_sge_rd = 1; }, true);
}

TEST_CASE("encode refuses a digest longer than 32 bytes instead of reading past it") {
  ChunkReady c;
  c.length = 10;
  c.digest.len = 33;
  Bytes out;
  CHECK_FALSE(encode(c, out).ok());
  CHECK(out.empty());
  FileEnd f;
  f.digest.len = 255;
  CHECK_FALSE(encode(f, out).ok());
  Digest a, b;
  a.len = b.len = 200;  // equal lengths beyond the array must not compare (or read) past it
  CHECK_FALSE(a == b);
}

TEST_CASE("decode_hello refuses a control depth of 1 (no credit left for data)") {
  Hello h;
  h.ctrl_depth = 1;
  h.rd_init = h.rd_resp = 4;
  h.max_sge_rd = 4;
  h.checksums = 7;
  h.max_chunk = 1 << 20;
  auto r = decode_hello(encode_hello(h));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().context.find("control receive buffers") != std::string::npos);
  h.ctrl_depth = 2;
  CHECK(decode_hello(encode_hello(h)).ok());
}
