// Sparse files (HOLE): holes neither read nor sent, -S, and the lies a source can tell with them.
#include <doctest/doctest.h>

#include "engine_harness.h"

// ---------------------------------------------------------------- sparse files (HOLE, wire v7)

namespace {

/// A file of `size` bytes with `pieces` (offset, bytes) written and holes elsewhere.
void write_sparse(const std::string& path, uint64_t size, const std::vector<std::pair<uint64_t, std::vector<uint8_t>>>& pieces) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, static_cast<off_t>(size)) == 0);
  for (auto& [off, bytes] : pieces)
    REQUIRE(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(off)) == static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

uint64_t allocated(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

}  // namespace

TEST_CASE("sparse: holes are neither read nor sent; -S leaves them unallocated, else they are allocated") {
  // data in chunk 0, 6 chunks of hole, a chunk with data at its last byte, a hole to the end (not chunk-aligned)
  const uint64_t size = 20 * kChunk + 123;
  const auto a = pattern(kChunk, 70), b = pattern(1, 71);
  for (bool sparse : {true, false}) {
    INFO("sparse: ", sparse);
    TempDir src, dst;
    const std::string p = src.str("f");
    write_sparse(p, size, {{0, a}, {8 * kChunk - 1, b}});
    SessionOptions opt = options();
    opt.preserve.sparse = sparse;
    std::vector<wire::Hole> holes;
    FakeLink link;
    link.set_hook(Side::a, [&](wire::Message& m, std::vector<wire::Message>& out) {
      if (auto* h = std::get_if<wire::Hole>(&m)) holes.push_back(*h);
      out.push_back(m);
    });
    Copy c = copy(link, {p}, dst.str(), opt);
    REQUIRE(c.sink->ok());
    REQUIRE(c.source->ok());
    CHECK(c.sink->value().files_ok == 1);
    CHECK(c.sink->value().bytes_pulled == 2 * kChunk);  // chunks 0 and 7; never the holes
    REQUIRE(holes.size() == 2);
    CHECK(holes[0].offset == kChunk);
    CHECK(holes[0].length == 6 * kChunk);
    CHECK(holes[1].offset == 8 * kChunk);
    CHECK(holes[1].length == size - 8 * kChunk);
    CHECK(read_file(dst.str("f")) == read_file(p));
    if (sparse)
      CHECK(allocated(dst.str("f")) <= 4 * kChunk);
    else
      CHECK(allocated(dst.str("f")) >= size - kChunk);
  }
}

TEST_CASE("sparse: an all-hole file and a file of one hole chunk arrive as zeros, nothing pulled") {
  TempDir src, dst;
  write_sparse(src.str("h"), 3 * kChunk + 5, {});
  write_sparse(src.str("t"), kChunk - 1, {});
  SessionOptions opt = options();
  opt.preserve.sparse = true;
  FakeLink link;
  Copy c = copy(link, {src.str("h"), src.str("t")}, dst.str(), opt);
  REQUIRE(c.sink->ok());
  CHECK(c.sink->value().files_ok == 2);
  CHECK(c.sink->value().bytes_pulled == 0);
  CHECK(read_file(dst.str("h")) == std::vector<uint8_t>(3 * kChunk + 5));
  CHECK(read_file(dst.str("t")) == std::vector<uint8_t>(kChunk - 1));
  CHECK(allocated(dst.str("h")) == 0);
}

TEST_CASE("sparse: with -S, blocks of zeros inside sent data become holes; a zero tail keeps the size") {
  // Written, not sparse: every byte is a data extent for the source, so all of it is sent.
  const uint64_t size = 8 * kChunk + 2 * 4096;
  std::vector<uint8_t> data(size, 0);
  const auto head = pattern(kChunk, 72);
  std::copy(head.begin(), head.end(), data.begin());
  data[5 * kChunk + 100] = 7;  // one block of data among the zeros
  for (bool sparse : {true, false}) {
    INFO("sparse: ", sparse);
    TempDir src, dst;
    const std::string p = src.str("f");
    write_file(p, data);
    SessionOptions opt = options();
    opt.preserve.sparse = sparse;
    FakeLink link;
    Copy c = copy(link, {p}, dst.str(), opt);
    REQUIRE(c.sink->ok());
    CHECK(c.sink->value().files_ok == 1);
    CHECK(c.sink->value().bytes_pulled == size);
    CHECK(read_file(dst.str("f")) == data);
    if (sparse)
      CHECK(allocated(dst.str("f")) <= 2 * kChunk);
    else
      CHECK(allocated(dst.str("f")) >= size - 4096);
  }
}

TEST_CASE("sparse: with -S, zeros over a kept --partial file's old bytes are written, not skipped") {
  TempDir src, dst;
  const std::string p = src.str("f");
  std::vector<uint8_t> data = pattern(4 * kChunk, 73);
  std::fill(data.begin() + kChunk, data.begin() + 2 * kChunk, 0);  // chunk 1: zeros
  write_file(p, data);
  std::vector<uint8_t> kept(data.begin(), data.begin() + 3 * kChunk);
  std::fill(kept.begin() + kChunk, kept.begin() + 2 * kChunk, 0x5a);  // old bytes where zeros belong
  write_file(dst.str(".f.rcp-partial"), kept);
  SessionOptions opt = options();
  opt.rules.partial = true;
  opt.preserve.sparse = true;
  FakeLink link;
  Copy c = copy(link, {p}, dst.str(), opt);
  REQUIRE(c.sink->ok());
  CHECK(c.sink->value().files_ok == 1);
  CHECK(c.sink->value().bytes_pulled == 2 * kChunk);  // chunk 1 (wrong) and chunk 3 (missing)
  CHECK(read_file(dst.str("f")) == data);
  CHECK(temps_in(dst.path).empty());
}

TEST_CASE("sparse: -c keeps an unchanged sparse file (its holes count as equal), nothing pulled") {
  TempDir src, dst;
  const std::string p = src.str("f");
  write_sparse(p, 10 * kChunk + 9, {{2 * kChunk, pattern(kChunk, 74)}});
  SessionOptions opt = options();
  opt.preserve.sparse = true;
  {
    FakeLink link;
    Copy c = copy(link, {p}, dst.str(), opt);
    REQUIRE(c.sink->ok());
    REQUIRE(c.sink->value().files_ok == 1);
  }
  struct stat before;
  REQUIRE(::stat(dst.str("f").c_str(), &before) == 0);
  opt.rules.checksum = true;
  FakeLink link;
  Copy c = copy(link, {p}, dst.str(), opt);
  REQUIRE(c.sink->ok());
  CHECK(c.sink->value().files_skipped == 1);
  CHECK(c.sink->value().bytes_pulled == 0);
  struct stat after;
  REQUIRE(::stat(dst.str("f").c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);  // kept, not rebuilt from itself
  CHECK(read_file(dst.str("f")) == read_file(p));
}

TEST_CASE("lying source: a HOLE outside the file, over a chunk, over a hole, after FILE_END or for no file is refused") {
  struct Case {
    const char* name;
    std::function<void(wire::Message&, std::vector<wire::Message>&, bool&)> lie;
    const char* words;
    bool may_commit = false;  // the file may be complete before the lie arrives
  };
  const uint64_t size = 4 * kChunk;
  const Case cases[] = {
      {"beyond the size",
       [&](wire::Message& m, std::vector<wire::Message>& out, bool& lied) {
         out.push_back(m);
         if (auto* fb = std::get_if<wire::FileBegin>(&m); fb && !lied) {
           out.push_back(wire::Hole{fb->file_id, size - 10, 11});
           lied = true;
         }
       },
       "lies outside"},
      {"over a chunk",
       [&](wire::Message& m, std::vector<wire::Message>& out, bool& lied) {
         out.push_back(m);
         if (auto* c = std::get_if<wire::ChunkReady>(&m); c && !lied) {
           out.push_back(wire::Hole{c->file_id, c->offset + 1, 1});
           lied = true;
         }
       },
       "overlaps another range"},
      {"over another hole",
       [&](wire::Message& m, std::vector<wire::Message>& out, bool& lied) {
         out.push_back(m);
         if (std::holds_alternative<wire::Hole>(m) && !lied) {
           out.push_back(m);
           lied = true;
         }
       },
       "overlaps another range"},
      {"after FILE_END",
       [&](wire::Message& m, std::vector<wire::Message>& out, bool& lied) {
         out.push_back(m);
         if (auto* e = std::get_if<wire::FileEnd>(&m); e && !lied) {
           out.push_back(wire::Hole{e->file_id, 0, 1});
           lied = true;
         }
       },
       // (committed and forgotten by then, or still pulling its chunk)
       "HOLE ", true},
      {"for no file",
       [&](wire::Message& m, std::vector<wire::Message>& out, bool& lied) {
         if (!lied) out.push_back(wire::Hole{999, 0, 1});
         lied = true;
         out.push_back(m);
       },
       "HOLE for unknown file 999"},
  };
  for (const Case& k : cases) {
    INFO("case: ", std::string(k.name));
    TempDir src, dst;
    const std::string p = src.str("f");
    write_sparse(p, size, {{kChunk, pattern(kChunk, 72)}});  // hole, data, hole
    FakeLink link;
    bool lied = false;
    link.set_hook(Side::a, [&](wire::Message& m, std::vector<wire::Message>& out) { k.lie(m, out, lied); });
    Copy c = copy(link, {p}, dst.str());
    REQUIRE(lied);
    require_refused(*c.sink, k.words);
    if (!k.may_commit) require_nothing_left(dst, "f");
  }
}

TEST_CASE("lying source: a chunk turned into a HOLE fails the file digest; nothing is committed") {
  TempDir src, dst;
  const std::string p = src.str("f");
  write_file(p, pattern(3 * kChunk, 73));
  FakeLink link;
  bool lied = false;
  link.set_hook(Side::a, [&](wire::Message& m, std::vector<wire::Message>& out) {
    if (auto* c = std::get_if<wire::ChunkReady>(&m); c && !lied && c->offset == kChunk) {
      out.push_back(wire::Hole{c->file_id, c->offset, c->length});  // "these bytes are zeros"
      lied = true;
      return;
    }
    out.push_back(m);
  });
  SessionOptions opt = options();
  opt.idle_timeout_ms = 2000;  // the source's slot never comes back; the sink's verdict is what counts
  SinkThread sink(link.b(), dst.str(), opt);
  Channel ch(link.a());
  auto s = run_source(ch, openers({p}), opt);
  auto& k = sink.join();
  REQUIRE(lied);
  if (k.ok()) {
    CHECK(k.value().files_failed == 1);
    REQUIRE_FALSE(k.value().errors.empty());
    CHECK(k.value().errors[0].find("file digest mismatch") != std::string::npos);
  }
  require_nothing_left(dst, "f");
}

TEST_CASE("source: refuses a HOLE from a sink") {
  TempDir src;
  const std::string p = src.str("f");
  write_file(p, pattern(3 * kChunk, 74));
  FakeLink link;
  SourceThread source(link.a(), {p}, options());
  link.inject(Side::b, wire::Hole{1, 0, 1});
  auto& r = source.join();
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EPROTO);
  CHECK(r.error().context.find("unexpected HOLE") != std::string::npos);
}
