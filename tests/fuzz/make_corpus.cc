// Writes the seed corpus of every harness: valid encodings of each control message, hello and
// authentication message, and small valid configuration, CIDR and secrets texts. Usage:
//   fuzz_make_corpus DIR      (run.sh's corpus is tests/fuzz/corpus, committed)
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "wire/auth_messages.h"
#include "wire/messages.h"
#include "wire/rails.h"

using namespace rcp::wire;

namespace {

std::string root;

void put(const std::string& harness, const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string dir = root + "/" + harness;
  mkdir(root.c_str(), 0755);
  mkdir(dir.c_str(), 0755);
  FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    std::perror(name.c_str());
    std::exit(1);
  }
  std::fclose(f);
}

std::vector<uint8_t> encoded(const Message& m) {
  std::vector<uint8_t> b;
  if (!encode(m, b).ok()) std::exit(1);
  return b;
}

void be(std::vector<uint8_t>& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

std::vector<uint8_t> frame(uint8_t kind, uint64_t cookie, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> f{kind, 0, 0, 0};
  be(f, payload.size(), 4);
  be(f, cookie, 8);
  f.insert(f.end(), payload.begin(), payload.end());
  return f;
}

std::vector<uint8_t> read_req(uint64_t cookie, uint64_t addr, uint32_t key, uint32_t len) {
  std::vector<uint8_t> p;
  be(p, addr, 8);
  be(p, key, 4);
  be(p, len, 4);
  return frame(2, cookie, p);
}

void frames(const std::string& name, uint8_t stream, uint8_t piece, const std::vector<std::vector<uint8_t>>& fs) {
  std::vector<uint8_t> b{stream, piece};
  for (const auto& f : fs) b.insert(b.end(), f.begin(), f.end());
  put("frames", name, b);
}

void put_text(const std::string& harness, const std::string& name, const std::string& text) {
  put(harness, name, std::vector<uint8_t>(text.begin(), text.end()));
}

void msg(const std::string& name, const Message& m) {
  std::vector<uint8_t> b;
  if (!encode(m, b).ok()) std::exit(1);
  put("wire", name, b);
}

void auth(const std::string& name, const AuthMessage& m) {
  std::vector<uint8_t> b;
  if (!encode_auth(m, b).ok()) std::exit(1);
  put("auth_messages", name, b);
}

Digest digest(uint8_t len) {
  Digest d;
  d.len = len;
  for (uint8_t i = 0; i < len; ++i) d.bytes[i] = static_cast<uint8_t>(0xa0 + i);
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  root = argv[1];

  msg("open_put", Open{Op::put, Checksum::xxh128, kOpenMulti | kOpenFsync, "data/dir/file.bin"});
  msg("open_get", Open{Op::get, Checksum::sha256, kOpenRecursive, "data/tree"});
  msg("open_get_many", Open{Op::get, Checksum::xxh128, kOpenRecursive | kOpenDelete, "data/a", {"b", "c/d"}, {"- *.o", "+ keep/", "- /top/***"}});
  msg("open_get_files_from", Open{Op::get, Checksum::xxh128, kOpenRelative | kOpenDelete | kOpenDeleteAfter | kOpenDeleteRoot | kOpenPartial, "data/base", {"d/f0", "d/f1"}, {"- *.tmp"}});
  msg("open_ok", OpenOk{1});
  msg("file_begin", FileBegin{7, 1u << 30, 0644, 0, "r\xC3\xA9sum\xC3\xA9.txt"});
  // Faithful copies (wire v6): metadata, a symlink, a hard link, a FIFO, a device; OPEN with -aH.
  msg("open_put_archive", Open{Op::put, Checksum::xxh128, kOpenMulti | kOpenMakeDir, "data/dir", {}, {}, kPreserveKnown});
  msg("open_get_contents", Open{Op::get, Checksum::xxh128, kOpenRecursive | kOpenContents, "data/tree", {}, {"- *.o"}, 0x1df});
  msg("file_begin_meta", FileBegin{8, 4096, 0100644, 1700000000123456789, "d/f", 1000, 100, "alice", "staff"});
  msg("file_begin_dir", FileBegin{9, 0, 040755, -1, "d", 0, 0, "root", "root"});
  msg("file_begin_symlink", FileBegin{10, 0, 0120777, 0, "d/l", 0, 0, "", "", "../target with space", 0});
  msg("file_begin_device", FileBegin{11, 0, 020600, 0, "d/null", 0, 0, "", "", "", 0x0103});
  msg("file_begin_fifo", FileBegin{12, 0, 010644, 0, "d/fifo"});
  msg("file_begin_leader", FileBegin{13, 10, 0100600, 0, "h1", 0, 0, "", "", "", 0, 13});
  msg("file_begin_hardlink", FileBegin{14, 0, 0100600, 0, "h2", 0, 0, "", "", "", 0, 13});
  msg("chunk_ready_xxh", ChunkReady{7, 3, 4u << 20, 1u << 20, 0x7f0000001000, 0x1234, digest(16)});
  msg("chunk_ready_sha", ChunkReady{7, 4, 5u << 20, 1u << 20, 0x7f0000101000, 0x1234, digest(32)});
  msg("chunk_done", ChunkDone{{0, 1, 2, 3, 15}});
  msg("file_end", FileEnd{7, 1u << 30, digest(32)});
  msg("file_result_ok", FileResult{7, 0, 0, 0, 0, ""});
  msg("file_begin_mtime", FileBegin{7, 1u << 20, 0644, 1700000000123456789ll, "a/b"});
  msg("file_result_skipped", FileResult{7, 0, 1, 0, 0, ""});
  msg("file_result_delta", FileResult{7, 0, 0, 1u << 20, 63u << 20, ""});
  msg("stop_file", StopFile{7});
  msg("file_result_changes", FileResult{7, 0, 0, 4096, 0, "", 0x001a});
  msg("entry_deleted", EntryDeleted{"dir/old.txt", 0});
  msg("entry_deleted_dir", EntryDeleted{"dir/gone", 1});
  msg("open_dry_run", Open{Op::put, Checksum::xxh128, kOpenDryRun | kOpenDelete | kOpenMulti, "data/x"});
  msg("walk_totals_growing", WalkTotals{120, 5u << 30, 0});
  msg("walk_totals_final", WalkTotals{4096, 0x0000123456789abcull, 1});
  msg("hole", Hole{7, 1u << 20, 1021ull << 20});  // 1021 MiB of a 1 GiB sparse file
  msg("xattr_small", XattrPiece{3, "user.mime_type", 10, 0, "text/plain"});
  {
    SmallFile sf{FileBegin{15, 11, 0100644, 1700000000123456789ll, "d/small.txt"}, {}, "hello world"};
    sf.digest.len = 16;  // (decoders do not check a digest against data)
    msg("small_file", sf);
    SmallFile page{FileBegin{16, 4096, 0100600, 0, "p"}, {}, std::string(4096, 'p')};
    page.digest.len = 16;
    msg("small_file_page", page);  // larger than kMaxMessage: only SMALL_FILE may be
  }
  msg("xattr_piece", XattrPiece{3, "user.blob", 65536, 3072, std::string(3072, 'b')});  // the 2nd of 22 pieces
  msg("xattr_acl", XattrPiece{4, "system.posix_acl_default", 28, 0, std::string("\2\0\0\0\1\0\7\0\xff\xff\xff\xff\4\0\5\0\xff\xff\xff\xff\x20\0\5\0\xff\xff\xff\xff", 28)});
  msg("file_skipped_vanished", FileSkipped{ENOENT, "file has vanished: 'data/t/x': No such file or directory", 1});
  msg("open_rules", Open{Op::put, Checksum::xxh128, kOpenChecksum | kOpenUpdate | kOpenWholeFile, "data/x"});
  msg("file_result_err", FileResult{8, 13, 0, 0, 0, "permission denied: data/x"});
  msg("finish", Finish{});
  msg("done", Done{10, 1});
  msg("error", ErrorMsg{5, "I/O error reading data/big.iso"});

  Hello h;
  h.ctrl_depth = 64;
  h.rd_init = 16;
  h.rd_resp = 16;
  h.max_sge_rd = 30;
  h.checksums = 7;
  h.qps = 2;
  h.max_chunk = 1u << 20;
  put("hello", "hello", encode_hello(h));
  put("hello", "hello_token", encode_hello_token(h, kHelloToken, 0x0123456789abcdefULL));
  put("hello", "hello_join", encode_hello_token(h, kHelloJoin, 0xfedcba9876543210ULL));
  // multi-rail sessions (rcp --rails)
  {
    RailAddr v4;
    v4.family = 4;
    v4.bytes[0] = 10, v4.bytes[1] = 78, v4.bytes[3] = 2;
    RailAddr v6;
    v6.family = 6;
    v6.bytes[0] = 0x20, v6.bytes[1] = 0x01, v6.bytes[2] = 0x0d, v6.bytes[3] = 0xb8, v6.bytes[15] = 7;
    const RailAddr both[] = {v4, v6};
    put("hello", "hello_rails", encode_hello_rails(h, 0x0123456789abcdefULL, both));
    put("hello", "rail_join", encode_rail_join(h, 0xfedcba9876543210ULL, 1));
    put("hello", "rail_keys", encode_rail_keys(RailKeys{0x1234, {{1, 0x5678}, {2, 0x9abc}}}));
    put("hello", "rail_stats", encode_rail_stats(std::vector<RailCount>{{0, 25u << 20, 25}, {1, 23u << 20, 23}}));
    put("hello", "control_moved", encode_control_moved(1234));
  }

  AuthRequest req;
  req.user = "alice";
  req.module = "data";
  for (size_t i = 0; i < kNonceSize; ++i) req.client_nonce[i] = static_cast<uint8_t>(i + 1);
  auth("request", req);
  AuthChallenge ch;
  for (size_t i = 0; i < kNonceSize; ++i) ch.server_nonce[i] = static_cast<uint8_t>(0xff - i);
  auth("challenge", ch);
  AuthResponse resp;
  resp.client_proof.fill(0x5a);
  auth("response", resp);
  AuthProof proof;
  proof.server_proof.fill(0xa5);
  auth("proof", proof);

  put_text("config", "minimal.conf", "[modules.data]\npath = \"/srv/data\"\n");
  put_text("config", "full.conf", R"([daemon]
listen = ["0.0.0.0", "::"]
port = 7471
tcp_port = 7472
transport = "auto"
user = "rcpd"
group = "rcpd"
max_connections = 64
max_per_host = 8
max_files_per_session = 64
hello_timeout = 10
idle_timeout = 600
hash_threads = 1
pid_file = "/run/rcpd.pid"

[modules.data]
path = "/srv/data"
comment = "nightly replicas"
read_only = false
write_only = true
list = false
hosts_allow = ["10.0.0.0/8", "127.0.0.1", "::1"]
hosts_deny = ["10.9.0.0/16", "2001:db8::/32"]
auth_users = ["alice", "bob"]
secrets_file = "/etc/rcpd.secrets"
max_connections = 4

[modules.pub]
path = "/srv/pub"
)");
  put_text("config", "encrypt.conf",
           "[daemon]\nencrypt = \"required\"\n[modules.a]\npath = \"/a\"\nencrypt = true\n");
  put_text("config", "dotted.conf", "daemon.port = 1\nmodules.a.path = \"/a\"\nmodules.b = { path = \"/b\", list = true }\n");

  put_text("access", "v4", "10.0.0.0/8");
  put_text("access", "v4_host", "192.0.2.7");
  put_text("access", "v6", "2001:db8::/32");
  put_text("access", "v6_host", "::1");
  put_text("access", "mapped", "::ffff:10.0.0.0/104");
  put_text("access", "secrets", "# users\nalice:correct horse battery\n\nbob:another-secret\r\n");

  // fuzz_frames: byte 0 the stream, byte 1 the piece size, then frames (framing.h: kind u8,
  // pad u8, pad u16, length u32, cookie u64, big-endian). The harness's pool is registered at
  // 0x300000000000 (64 KiB, key 1); its reads outstanding: cookie 1 (100 bytes) and 3 (1) on
  // stream 0, cookie 2 (4,096) on stream 1.
  constexpr uint64_t pool = 0x300000000000;
  frames("message", 0, 3, {frame(1, 0, encoded(OpenOk{1}))});
  frames("read_served", 0, 255, {read_req(9, pool + 100, 1, 1000), read_req(10, pool, 1, 64 * 1024)});
  frames("read_refused", 0, 255, {read_req(11, pool - 1, 1, 10), read_req(12, pool, 2, 10), read_req(13, pool + 65535, 1, 2)});
  frames("replies_0", 0, 7, {frame(3, 1, std::vector<uint8_t>(100, 5)), frame(4, 3, {})});
  frames("reply_1", 1, 60, {frame(3, 2, std::vector<uint8_t>(4096, 6))});
  frames("mixed_0", 0, 1, {frame(1, 0, encoded(ChunkDone{{0, 1}})), frame(3, 3, {9}), read_req(14, pool + 8, 1, 8),
                            frame(4, 1, {}), frame(1, 0, encoded(FileResult{7, 0, 0, 0, 0, ""}))});
  // Pieces of 103 bytes alternating from stream 1: a reply to cookie 2 begins there, a refusal
  // of cookie 2 comes on stream 0 (plus a 71-byte message to fill the piece), the reply goes on.
  {
    std::vector<uint8_t> b{3, 6};
    auto reply = frame(3, 2, std::vector<uint8_t>(4096, 7));
    b.insert(b.end(), reply.begin(), reply.begin() + 103);
    auto refusal = frame(4, 2, {}), fill = frame(1, 0, std::vector<uint8_t>(71, 1));
    b.insert(b.end(), refusal.begin(), refusal.end());
    b.insert(b.end(), fill.begin(), fill.end());
    b.insert(b.end(), reply.begin() + 103, reply.begin() + 206);
    put("frames", "refusal_across_streams", b);
  }
  return 0;
}
