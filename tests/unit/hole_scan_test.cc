// The extent -> chunk logic of sparse files (session/hole_scan.h): which
// chunks are skipped as holes, at every edge a file's layout can have.
#include <doctest/doctest.h>

#include <vector>

#include "session/hole_scan.h"
#include "session/plan.h"

using namespace rcp;

namespace {

constexpr uint32_t C = 1000;  // chunk size (not a power of two on purpose)

/// A finder over a fixed list of data extents, counting its calls.
struct Extents {
  std::vector<DataExtent> data;
  uint64_t size;
  int calls = 0;
  FindData finder() {
    return [this](uint64_t from) -> Result<DataExtent> {
      ++calls;
      for (const auto& e : data)
        if (e.end > from) return e;
      return DataExtent{size, size};
    };
  }
};

/// Walks every chunk as the source does: a hole run is skipped whole, a
/// data chunk one at a time. Returns one char per chunk: 'h' or 'd'.
std::string walk(Extents& x) {
  HoleScan scan(x.size, C, x.finder());
  std::string out;
  const uint64_t n = chunk_count(x.size, C);
  for (uint64_t i = 0; i < n;) {
    auto r = scan.run_at(i);
    REQUIRE(r.ok());
    REQUIRE(r.value().count > 0);
    REQUIRE(i + r.value().count <= n);
    if (r.value().hole) {
      out.append(r.value().count, 'h');
      i += r.value().count;
    } else {
      out += 'd';
      ++i;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("hole scan: no holes, all hole, empty") {
  Extents full{{{0, 3500}}, 3500};
  CHECK(walk(full) == "dddd");
  CHECK(full.calls == 1);  // one extent, asked once
  Extents none{{}, 3500};
  CHECK(walk(none) == "hhhh");
  CHECK(none.calls == 1);
  Extents empty{{}, 0};
  CHECK(walk(empty) == "");
}

TEST_CASE("hole scan: a chunk with any data byte is data; only whole chunks are holes") {
  // data [0,10), hole, one byte at 3999, hole, data at the very end (size 7500, short last chunk)
  Extents y{{{0, 10}, {3999, 4000}, {7499, 7500}}, 7500};
  CHECK(walk(y) == "dhhdhhhd");
}

TEST_CASE("hole scan: a hole at the end, short last chunk") {
  Extents x{{{0, 1500}}, 5200};
  CHECK(walk(x) == "ddhhhh");
  Extents y{{{5100, 5200}}, 5200};  // data only in the short last chunk
  CHECK(walk(y) == "hhhhhd");
  Extents z{{{4999, 5001}}, 5200};  // data straddling a chunk boundary
  CHECK(walk(z) == "hhhhdd");
}

TEST_CASE("hole scan: a hole smaller than a chunk is sent as data") {
  Extents x{{{0, 1200}, {1800, 3000}}, 3000};
  CHECK(walk(x) == "ddd");
}

TEST_CASE("classify_chunks: runs and nonsense") {
  CHECK(classify_chunks(5000, C, 0, {3000, 4000}).hole);
  CHECK(classify_chunks(5000, C, 0, {3000, 4000}).count == 3);
  CHECK(classify_chunks(5000, C, 0, {2999, 4000}).count == 2);  // chunk 2 holds byte 2999
  CHECK_FALSE(classify_chunks(5000, C, 2, {2999, 4000}).hole);
  CHECK(classify_chunks(5000, C, 2, {2999, 4000}).count == 2);  // chunks 2 and 3
  CHECK(classify_chunks(5000, C, 1, {5000, 5000}).count == 4);  // no data left: the rest
  CHECK(classify_chunks(5000, C, 1, {9000, 9000}).hole);       // (past the size too)
  // A finder that answers an extent ending before the chunk: send the chunk.
  CHECK_FALSE(classify_chunks(5000, C, 3, {0, 10}).hole);
  CHECK(classify_chunks(5000, C, 3, {0, 10}).count == 1);
  // An extent past the size is clipped.
  CHECK(classify_chunks(5000, C, 4, {4500, 99999}).count == 1);
  CHECK(classify_chunks(5000, C, 5, {0, 5000}).count == 0);  // out of range
  CHECK(classify_chunks(5000, 0, 0, {0, 5000}).count == 0);
}

TEST_CASE("hole scan: a finder's error is the scan's") {
  HoleScan scan(5000, C, [](uint64_t) -> Result<DataExtent> { return make_error(EIO, "seek"); });
  auto r = scan.run_at(0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EIO);
}
