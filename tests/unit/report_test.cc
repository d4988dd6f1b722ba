// The --json/--stats report: exact JSON escaping of any bytes (a file name
// is any bytes but '/' and NUL), every documented key present once.
#include <doctest/doctest.h>

#include "cli/report.h"

using namespace rcp::cli;

namespace {
std::string js(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}
}  // namespace

TEST_CASE("JSON strings: quotes, backslashes and control characters are escaped") {
  CHECK(js("plain") == "\"plain\"");
  CHECK(js("a\"b") == "\"a\\\"b\"");
  CHECK(js("a\\b") == "\"a\\\\b\"");
  CHECK(js("new\nline\ttab\r") == "\"new\\nline\\ttab\\r\"");
  CHECK(js(std::string_view("\x01\x1f\x7f", 3)) == "\"\\u0001\\u001f\\u007f\"");
  CHECK(js(std::string_view("nul\0x", 5)) == "\"nul\\u0000x\"");
  CHECK(js("\b\f") == "\"\\b\\f\"");
}

TEST_CASE("JSON strings: valid UTF-8 passes, every other byte is kept as a lone surrogate") {
  CHECK(js("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  CHECK(js("\xff") == "\"\\udcff\"");
  CHECK(js("a\xc3") == "\"a\\udcc3\"");              // truncated sequence
  CHECK(js("\xc0\xaf") == "\"\\udcc0\\udcaf\"");     // overlong '/'
  CHECK(js("\xed\xa0\x80") == "\"\\udced\\udca0\\udc80\"");  // an encoded surrogate
  CHECK(js("\xf4\x90\x80\x80") == "\"\\udcf4\\udc90\\udc80\\udc80\"");  // past U+10FFFF
  CHECK(js("\xe2\x28\xa1") == "\"\\udce2(\\udca1\"");  // bad continuation
}

TEST_CASE("the JSON report has every documented key, in order, on one line") {
  Report r;
  r.files_total = 7;
  r.files_transferred = 3;
  r.files_skipped = 2;
  r.files_failed = 1;
  r.bytes_total = 1000;
  r.bytes_transferred = 600;
  r.bytes_matched = 400;
  r.elapsed_s = 1.23456;
  set_transport(r, "rdma rxe0");
  r.errors = {"x\n\"y\""};
  r.exit_code = 23;
  CHECK(to_json(r) ==
        "{\"files_total\":7,\"files_transferred\":3,\"files_skipped\":2,\"files_deleted\":0,\"files_failed\":1,"
        "\"bytes_total\":1000,\"bytes_transferred\":600,\"bytes_matched\":400,\"elapsed_s\":1.235,"
        "\"transport\":\"rdma\",\"device\":\"rxe0\",\"errors\":[\"x\\n\\\"y\\\"\"],\"errors_dropped\":0,"
        "\"exit_code\":23,\"shard\":null,\"rails\":[]}\n");
  r.shard = "1/4";
  CHECK(to_json(r).find(",\"shard\":\"1/4\",\"rails\":[]}\n") != std::string::npos);
  Report none;
  set_transport(none, "tcp");
  CHECK(none.transport == "tcp");
  CHECK(none.device.empty());
  const std::string j = to_json(Report{});
  CHECK(j.find("\"transport\":null,\"device\":null,\"errors\":[]") != std::string::npos);
}

TEST_CASE("each rail's path in the JSON report: unknown fields are null; sessions add up by device and peer") {
  Report r;
  RailReport a;
  a.device = "rxe0";
  a.peer = "10.77.0.2:7471";
  a.local = "10.77.0.1:40000";
  a.port = 1;
  a.gid_index = 1;
  a.gid = "::ffff:10.77.0.1";
  a.gid_type = "RoCE v2";
  a.bytes = 100;
  a.chunks = 2;
  add_rails(r, {a});
  add_rails(r, {a});
  RailReport b;  // a rail whose path was not learnt (no GRH, not connected)
  b.device = "mlx5_1";
  b.peer = "10.0.0.2:7471";
  b.failed = "port down";
  add_rails(r, {b});
  REQUIRE(r.rails.size() == 2);
  CHECK(r.rails[0].bytes == 200);
  CHECK(r.rails[0].chunks == 4);
  const std::string j = to_json(r);
  CHECK(j.find("\"rails\":[{\"device\":\"rxe0\",\"peer\":\"10.77.0.2:7471\",\"local\":\"10.77.0.1:40000\",\"port\":1,"
               "\"gid_index\":1,\"gid\":\"::ffff:10.77.0.1\",\"gid_type\":\"RoCE v2\",\"bytes\":200,\"chunks\":4,"
               "\"failed\":null},{\"device\":\"mlx5_1\",\"peer\":\"10.0.0.2:7471\",\"local\":null,\"port\":null,"
               "\"gid_index\":null,\"gid\":null,\"gid_type\":null,\"bytes\":0,\"chunks\":0,\"failed\":\"port down\"}]}\n") !=
        std::string::npos);
}

TEST_CASE("--stats lines") {
  Report r;
  r.files_total = 2;
  r.files_skipped = 2;
  r.bytes_total = 10;
  set_transport(r, "tcp");
  const std::string s = to_stats_text(r);
  CHECK(s.find("Number of files: 2\n") != std::string::npos);
  CHECK(s.find("Number of files skipped (unchanged): 2\n") != std::string::npos);
  CHECK(s.find("Total transferred file size: 0 bytes\n") != std::string::npos);
  CHECK(s.find("Transport: tcp\n") != std::string::npos);
}
