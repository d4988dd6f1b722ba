// Proves what multi-rail RDMA sessions (rcp --rails) accept from a peer: the
// daemon's rail address list, a rail join's index and RAIL_KEYS are bounded
// and a lying value is refused; the rail picker goes by load; --rails parses.
#include <doctest/doctest.h>

#include <arpa/inet.h>

#include <cerrno>
#include <string>
#include <vector>

#include "cli/report.h"
#include "transport/rails_option.h"
#include "transport/rdma/rail_addrs.h"
#include "transport/rdma/rail_pick.h"
#include "wire/codec.h"
#include "wire/rails.h"

using namespace rcp;
using namespace rcp::wire;

namespace {

using Bytes = std::vector<uint8_t>;

Hello daemon_hello() {
  Hello h;
  h.ctrl_depth = 64;
  h.max_sge_rd = 16;
  h.max_chunk = 1u << 20;
  return h;
}

RailAddr v4(const char* s) {
  in_addr a{};
  REQUIRE(inet_pton(AF_INET, s, &a) == 1);
  return rail_addr_v4(a);
}

RailAddr v6(const char* s) {
  in6_addr a{};
  REQUIRE(inet_pton(AF_INET6, s, &a) == 1);
  return rail_addr_v6(a);
}

// The list's raw bytes after hello and token: count, then family + 16 bytes each.
Bytes with_list(const Bytes& list) {
  Bytes b = encode_hello_token(daemon_hello(), kHelloToken | kHelloRails, 0x1234);
  b.insert(b.end(), list.begin(), list.end());
  return b;
}

Bytes entry(uint8_t family, std::initializer_list<uint8_t> first) {
  Bytes e{family};
  Bytes addr(16, 0);
  size_t i = 0;
  for (uint8_t x : first) addr[i++] = x;
  e.insert(e.end(), addr.begin(), addr.end());
  return e;
}

void refused(const Result<std::vector<RailAddr>>& r, const char* part) {
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EPROTO);
  CHECK_MESSAGE(r.error().context.find(part) != std::string::npos, r.error().context);
}

}  // namespace

TEST_CASE("rail address list: round trip, padding after it accepted") {
  std::vector<RailAddr> in{v4("10.78.0.2"), v6("2001:db8::7")};
  Bytes b = encode_hello_rails(daemon_hello(), 0x1234, in);
  CHECK(b.size() == kHelloTokenSize + 1 + 2 * kRailAddrSize);
  auto h = decode_hello(b);
  REQUIRE(h.ok());
  CHECK((h->flags & kHelloRails) != 0);
  CHECK(decode_hello_token(b).value() == 0x1234);
  auto out = decode_hello_rails(b);
  REQUIRE(out.ok());
  CHECK(out.value() == in);
  CHECK(rail_addr_string(out.value()[0]) == "10.78.0.2");
  // rdma_cm pads a REP's private data with zeros (to 196 bytes)
  b.resize(196, 0);
  CHECK(decode_hello_rails(b).ok());
}

TEST_CASE("rail address list: a lying daemon is refused") {
  auto good = entry(4, {10, 78, 0, 2});
  refused(decode_hello_rails(with_list({0})), "announces 0 more rails");
  Bytes four{4};
  for (uint8_t i = 1; i <= 4; ++i) {
    auto e = entry(4, {10, 78, 0, i});
    four.insert(four.end(), e.begin(), e.end());
  }
  refused(decode_hello_rails(with_list(four)), "announces 4 more rails");
  Bytes fam{1};
  auto e5 = entry(5, {10, 78, 0, 2});
  fam.insert(fam.end(), e5.begin(), e5.end());
  refused(decode_hello_rails(with_list(fam)), "unknown family");
  Bytes pad{1};
  auto ep = entry(4, {10, 78, 0, 2, 1});
  pad.insert(pad.end(), ep.begin(), ep.end());
  refused(decode_hello_rails(with_list(pad)), "non-zero padding");
  auto one = [](Bytes e) {
    Bytes b{1};
    b.insert(b.end(), e.begin(), e.end());
    return b;
  };
  refused(decode_hello_rails(with_list(one(entry(4, {0, 0, 0, 0})))), "unspecified");
  refused(decode_hello_rails(with_list(one(entry(4, {127, 0, 0, 1})))), "loopback");
  refused(decode_hello_rails(with_list(one(entry(4, {239, 1, 1, 1})))), "multicast");
  refused(decode_hello_rails(with_list(one(entry(4, {255, 255, 255, 255})))), "broadcast");
  refused(decode_hello_rails(with_list(one(entry(6, {})))), "unspecified");
  refused(decode_hello_rails(with_list(one(entry(6, {0xff, 0x02})))), "multicast");
  Bytes lo6 = entry(6, {});
  lo6[16] = 1;
  refused(decode_hello_rails(with_list(one(lo6))), "loopback");
  Bytes dup{2};
  dup.insert(dup.end(), good.begin(), good.end());
  dup.insert(dup.end(), good.begin(), good.end());
  refused(decode_hello_rails(with_list(dup)), "twice");
  Bytes trunc = one(good);
  trunc.resize(trunc.size() - 3);
  refused(decode_hello_rails(with_list(trunc)), "truncated");
  Bytes two_said{2};
  two_said.insert(two_said.end(), good.begin(), good.end());
  refused(decode_hello_rails(with_list(two_said)), "truncated");
  Bytes trailing = one(good);
  trailing.push_back(7);
  refused(decode_hello_rails(with_list(trailing)), "followed by more data");
  refused(decode_hello_rails(encode_hello_token(daemon_hello(), kHelloToken | kHelloRails, 9)), "no rail list");
}

TEST_CASE("rail join: the index must be one the session announced") {
  Bytes b = encode_rail_join(daemon_hello(), 0x77, 2);
  auto h = decode_hello(b);
  REQUIRE(h.ok());
  CHECK((h->flags & kHelloJoin) != 0);
  CHECK((h->flags & kHelloRail) != 0);
  CHECK(decode_hello_token(b).value() == 0x77);
  CHECK(decode_rail_join(b, 2).value() == 2);
  CHECK(decode_rail_join(b, 3).value() == 2);
  auto over = decode_rail_join(b, 1);
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().context.find("rail 2 of the 1 announced") != std::string::npos);
  CHECK_FALSE(decode_rail_join(b, 0).ok());
  CHECK_FALSE(decode_rail_join(encode_rail_join(daemon_hello(), 0x77, 0), 3).ok());
  Bytes none = encode_hello_token(daemon_hello(), kHelloJoin | kHelloRail, 0x77);
  auto missing = decode_rail_join(none, 3);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().context.find("without a rail index") != std::string::npos);
}

TEST_CASE("RAIL_KEYS: round trip and every lie refused") {
  RailKeys k{0xabcdef01, {{1, 0x11}, {3, 0x33}}};
  Bytes b = encode_rail_keys(k);
  CHECK(is_rail_keys(b));
  auto out = decode_rail_keys(b);
  REQUIRE(out.ok());
  CHECK(out.value() == k);
  // the engine refuses it: its type is outside the engine's range
  auto m = decode(b);
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().context.find("unknown message type") != std::string::npos);

  auto bad = [](const RailKeys& x, const char* part) {
    auto r = decode_rail_keys(encode_rail_keys(x));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EPROTO);
    CHECK_MESSAGE(r.error().context.find(part) != std::string::npos, r.error().context);
  };
  bad(RailKeys{1, {}}, "for 0 more rails");
  bad(RailKeys{1, {{1, 1}, {2, 2}, {3, 3}, {1, 4}}}, "for 4 more rails");
  bad(RailKeys{1, {{0, 1}}}, "names rail 0");
  bad(RailKeys{1, {{4, 1}}}, "names rail 4");
  bad(RailKeys{1, {{2, 1}, {2, 5}}}, "twice");
  // the length field no longer matches the bytes received (a message cut or padded in transit)
  auto mismatch = [](const Result<RailKeys>& r) {
    REQUIRE_FALSE(r.ok());
    CHECK_MESSAGE(r.error().context.find("does not match") != std::string::npos, r.error().context);
  };
  Bytes longer = b;
  longer.push_back(0);
  mismatch(decode_rail_keys(longer));
  Bytes shorter = b;
  shorter.pop_back();
  mismatch(decode_rail_keys(shorter));
  // another message handed to this decoder
  auto other = decode_rail_keys(encode_rail_stats(std::vector<RailCount>{{0, 1, 1}}));
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().context.find("not a RAIL_KEYS message") != std::string::npos);
  // a length that claims one more key than is there
  Bytes lying = b;
  lying[kHeaderSize + 4] = 3;
  auto l = decode_rail_keys(lying);
  REQUIRE_FALSE(l.ok());
  CHECK(l.error().context.find("truncated") != std::string::npos);
  // the length field agrees with the bytes, but extra bytes follow the keys
  Bytes extra = encode_rail_keys(k);
  extra.insert(extra.end(), {0, 0, 0, 0, 0});
  extra[kHeaderSize - 1] = static_cast<uint8_t>(extra.size() - kHeaderSize);
  auto t = decode_rail_keys(extra);
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().context.find("trailing") != std::string::npos);
  Bytes done;
  REQUIRE(encode(Message{Done{}}, done).ok());
  CHECK_FALSE(is_rail_keys(done));
}

TEST_CASE("RAIL_STATS: round trip and every lie refused") {
  const std::vector<RailCount> c{{0, 1 << 20, 1}, {2, 3 << 20, 3}};
  Bytes b = encode_rail_stats(c);
  CHECK(is_rail_stats(b));
  CHECK_FALSE(is_rail_keys(b));
  auto out = decode_rail_stats(b);
  REQUIRE(out.ok());
  CHECK(out.value() == c);
  // the engine refuses it: its type is outside the engine's range
  auto m = decode(b);
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().context.find("unknown message type") != std::string::npos);
  auto bad = [](const std::vector<RailCount>& x, const char* part) {
    auto r = decode_rail_stats(encode_rail_stats(x));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EPROTO);
    CHECK_MESSAGE(r.error().context.find(part) != std::string::npos, r.error().context);
  };
  bad({}, "for 0 rails");
  bad({{0, 1, 1}, {1, 1, 1}, {2, 1, 1}, {3, 1, 1}, {0, 2, 1}}, "for 5 rails");
  bad({{4, 1, 1}}, "names rail 4");
  bad({{1, 1, 1}, {1, 2, 2}}, "twice");
  bad({{0, 3, 4}}, "4 chunks in 3 bytes");
  CHECK(decode_rail_stats(encode_rail_stats(std::vector<RailCount>{{0, 0, 0}, {1, 1, 1}, {2, 5, 1}, {3, 9, 9}})).ok());
  auto mismatch = [](const Result<std::vector<RailCount>>& r) {
    REQUIRE_FALSE(r.ok());
    CHECK_MESSAGE(r.error().context.find("does not match") != std::string::npos, r.error().context);
  };
  Bytes longer = b;
  longer.push_back(0);
  mismatch(decode_rail_stats(longer));
  Bytes shorter = b;
  shorter.pop_back();
  mismatch(decode_rail_stats(shorter));
  auto other = decode_rail_stats(encode_rail_keys(RailKeys{1, {{1, 1}}}));
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().context.find("not a RAIL_STATS message") != std::string::npos);
  // a count that claims one more rail than is there
  Bytes lying = b;
  lying[kHeaderSize] = 3;
  auto l = decode_rail_stats(lying);
  REQUIRE_FALSE(l.ok());
  CHECK(l.error().context.find("truncated") != std::string::npos);
  Bytes extra = encode_rail_stats(c);
  extra.insert(extra.end(), {0, 0, 0});
  extra[kHeaderSize - 1] = static_cast<uint8_t>(extra.size() - kHeaderSize);
  auto t = decode_rail_stats(extra);
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().context.find("trailing") != std::string::npos);
}

TEST_CASE("pick_rail: the rail with the fewest bytes outstanding, never a failed one") {
  using rdma::RailLoad;
  std::vector<RailLoad> rails(3);
  bool all[3] = {true, true, true};
  rails[0].bytes_out = 3 << 20;
  rails[1].bytes_out = 1 << 20;
  rails[2].bytes_out = 2 << 20;
  CHECK(rdma::pick_rail(rails, all) == 1);
  // by load, not in turn: the same rail again while it stays the least loaded
  rails[1].bytes_out = 1 << 19;
  CHECK(rdma::pick_rail(rails, all) == 1);
  // ties: fewer chunks outstanding, then the lower index
  rails[2].bytes_out = 1 << 19;
  rails[1].reads_out = 2;
  rails[2].reads_out = 1;
  CHECK(rdma::pick_rail(rails, all) == 2);
  rails[1].reads_out = 1;
  CHECK(rdma::pick_rail(rails, all) == 1);
  // then the rail that carried less so far (one chunk in flight at a time alternates)
  rails[1].bytes = 5 << 20;
  rails[2].bytes = 4 << 20;
  CHECK(rdma::pick_rail(rails, all) == 2);
  rails[2].bytes = 5 << 20;
  CHECK(rdma::pick_rail(rails, all) == 1);
  rails[1].failed = true;
  CHECK(rdma::pick_rail(rails, all) == 2);
  bool only1[3] = {false, true, false};
  CHECK(rdma::pick_rail(rails, only1) == -1);
  bool some[3] = {true, false, false};
  CHECK(rdma::pick_rail(rails, some) == 0);
  CHECK(rdma::pick_rail({}, {}) == -1);
}

TEST_CASE("gid_rail_addr: a port's IP GIDs are its rail addresses") {
  auto a = rdma::gid_rail_addr("0000:0000:0000:0000:0000:ffff:0a4e:0002\n");
  REQUIRE(a.has_value());
  CHECK(rail_addr_string(*a) == "10.78.0.2");
  CHECK(a->family == 4);
  CHECK_FALSE(rdma::gid_rail_addr("0000:0000:0000:0000:0000:0000:0000:0000").has_value());
  CHECK_FALSE(rdma::gid_rail_addr("0000:0000:0000:0000:0000:ffff:0000:0000").has_value());
  CHECK_FALSE(rdma::gid_rail_addr("fe80:0000:0000:0000:5054:00ff:fe12:3456").has_value());
  auto g = rdma::gid_rail_addr("2001:0db8:0000:0000:0000:0000:0000:0007");
  REQUIRE(g.has_value());
  CHECK(g->family == 6);
  CHECK_FALSE(rdma::gid_rail_addr("not a gid").has_value());
  CHECK_FALSE(rdma::gid_rail_addr("").has_value());
}

TEST_CASE("--rails: auto or a bounded list of device names") {
  auto a = parse_rails_option("auto");
  REQUIRE(a.ok());
  CHECK(a->enabled);
  CHECK(a->automatic);
  CHECK(a->allows("anything"));
  auto l = parse_rails_option("rxe0,rxe2");
  REQUIRE(l.ok());
  CHECK_FALSE(l->automatic);
  CHECK(l->devices == std::vector<std::string>{"rxe0", "rxe2"});
  CHECK(l->allows("rxe2"));
  CHECK_FALSE(l->allows("rxe3"));
  CHECK(parse_rails_option("mlx5_0").ok());
  CHECK_FALSE(parse_rails_option("").ok());
  CHECK_FALSE(parse_rails_option("rxe0,").ok());
  CHECK_FALSE(parse_rails_option(",rxe0").ok());
  CHECK_FALSE(parse_rails_option("rxe0,rxe0").ok());
  CHECK_FALSE(parse_rails_option("a,b,c,d,e").ok());
  CHECK(parse_rails_option("a,b,c,d").ok());
  CHECK_FALSE(parse_rails_option("rxe0/../x").ok());
  CHECK_FALSE(parse_rails_option(std::string(64, 'x')).ok());
  CHECK(parse_rails_option(std::string(63, 'x')).ok());
}

TEST_CASE("report: rails in --json, summed over sessions") {
  cli::Report r;
  CHECK(cli::to_json(r).find("\"rails\":[]") != std::string::npos);
  auto rr = [](const char* dev, const char* peer, uint64_t bytes, uint64_t chunks, const char* failed) {
    cli::RailReport x;
    x.device = dev;
    x.peer = peer;
    x.bytes = bytes;
    x.chunks = chunks;
    x.failed = failed;
    return x;
  };
  cli::add_rails(r, {rr("rxe0", "10.77.0.2:7471", 100, 1, ""), rr("rxe2", "10.78.0.2:7471", 200, 2, "")});
  cli::add_rails(r, {rr("rxe0", "10.77.0.2:7471", 5, 1, ""), rr("rxe2", "10.78.0.2:7471", 0, 0, "RDMA READ failed")});
  REQUIRE(r.rails.size() == 2);
  CHECK(r.rails[0].bytes == 105);
  CHECK(r.rails[0].chunks == 2);
  CHECK(r.rails[1].failed == "RDMA READ failed");
  const std::string j = cli::to_json(r);
  const std::string nopath = ",\"local\":null,\"port\":null,\"gid_index\":null,\"gid\":null,\"gid_type\":null";
  CHECK(j.find("\"rails\":[{\"device\":\"rxe0\",\"peer\":\"10.77.0.2:7471\"" + nopath + ",\"bytes\":105,\"chunks\":2,\"failed\":null},"
               "{\"device\":\"rxe2\",\"peer\":\"10.78.0.2:7471\"" + nopath +
               ",\"bytes\":200,\"chunks\":2,\"failed\":\"RDMA READ failed\"}]") != std::string::npos);
}

TEST_CASE("CONTROL_MOVED: round trip; any other length refused; the engine never takes it") {
  Bytes b = encode_control_moved(0x0102030405060708ull);
  CHECK(is_control_moved(b));
  CHECK_FALSE(is_rail_keys(b));
  CHECK_FALSE(is_rail_stats(b));
  auto out = decode_control_moved(b);
  REQUIRE(out.ok());
  CHECK(out.value() == 0x0102030405060708ull);
  auto m = decode(b);
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().context.find("unknown message type") != std::string::npos);
  Bytes longer = b;
  longer.push_back(0);
  longer[kHeaderSize - 1] = 9;
  CHECK_FALSE(decode_control_moved(longer).ok());
  Bytes shorter = b;
  shorter.pop_back();
  CHECK_FALSE(decode_control_moved(shorter).ok());
  Bytes lying_len = b;
  lying_len[kHeaderSize - 1] = 4;  // says 4 bytes, carries 8
  CHECK_FALSE(decode_control_moved(lying_len).ok());
  CHECK_FALSE(decode_control_moved(encode_rail_stats(std::vector<RailCount>{{0, 1, 1}})).ok());
  // another type with the same 8-byte body is not taken for one
  Bytes other = b;
  other[7] = static_cast<uint8_t>(other[7] + 1);
  auto o = decode_control_moved(other);
  REQUIRE_FALSE(o.ok());
  CHECK(o.error().context.find("not a CONTROL_MOVED message") != std::string::npos);
}
