#include "cli/report.h"

#include <algorithm>

#include <fmt/core.h>

namespace rcp::cli {
namespace {

/// Length of the valid UTF-8 sequence at s[i] (1..4), or 0 if it is not one
/// (overlong forms, surrogates and code points past U+10FFFF are not valid).
size_t utf8_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) { n = 2; cp = c & 0x1f; }
  else if (c >= 0xe0 && c <= 0xef) { n = 3; cp = c & 0x0f; }
  else if (c >= 0xf0 && c <= 0xf4) { n = 4; cp = c & 0x07; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3f);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

void key(std::string& out, const char* k) {
  if (out.size() > 1) out += ',';
  append_json_string(out, k);
  out += ':';
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; ++i; continue;
      case '\\': out += "\\\\"; ++i; continue;
      case '\n': out += "\\n"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      case '\b': out += "\\b"; ++i; continue;
      case '\f': out += "\\f"; ++i; continue;
      default: break;
    }
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\u{:04x}", c);
      ++i;
      continue;
    }
    const size_t n = utf8_length(s, i);
    if (n == 0) {  // not UTF-8: keep the byte, as a lone low surrogate
      out += fmt::format("\\u{:04x}", 0xdc00 + c);
      ++i;
      continue;
    }
    out.append(s.substr(i, n));
    i += n;
  }
  out += '"';
}

std::string to_json(const Report& r) {
  std::string out = "{";
  const auto num = [&](const char* k, uint64_t v) {
    key(out, k);
    out += std::to_string(v);
  };
  num("files_total", r.files_total);
  num("files_transferred", r.files_transferred);
  num("files_skipped", r.files_skipped);
  num("files_deleted", r.files_deleted);
  num("files_failed", r.files_failed);
  num("bytes_total", r.bytes_total);
  num("bytes_transferred", r.bytes_transferred);
  num("bytes_matched", r.bytes_matched);
  key(out, "elapsed_s");
  out += fmt::format("{:.3f}", r.elapsed_s >= 0 ? r.elapsed_s : 0.0);
  key(out, "transport");
  if (r.transport.empty()) out += "null"; else append_json_string(out, r.transport);
  key(out, "device");
  if (r.device.empty()) out += "null"; else append_json_string(out, r.device);
  key(out, "errors");
  out += '[';
  for (size_t i = 0; i < r.errors.size(); ++i) {
    if (i) out += ',';
    append_json_string(out, r.errors[i]);
  }
  out += ']';
  num("errors_dropped", r.errors_dropped);
  num("exit_code", static_cast<uint64_t>(r.exit_code < 0 ? 0 : r.exit_code));
  key(out, "shard");
  if (r.shard.empty()) out += "null"; else append_json_string(out, r.shard);
  key(out, "rails");
  out += '[';
  for (size_t i = 0; i < r.rails.size(); ++i) {
    const RailReport& x = r.rails[i];
    out += i ? ",{" : "{";
    out += "\"device\":";
    append_json_string(out, x.device);
    out += ",\"peer\":";
    append_json_string(out, x.peer);
    auto str_or_null = [&](const char* k, const std::string& v) {
      out += fmt::format(",\"{}\":", k);
      if (v.empty()) out += "null"; else append_json_string(out, v);
    };
    str_or_null("local", x.local);
    out += x.port ? fmt::format(",\"port\":{}", x.port) : ",\"port\":null";
    out += x.gid_index >= 0 ? fmt::format(",\"gid_index\":{}", x.gid_index) : ",\"gid_index\":null";
    str_or_null("gid", x.gid);
    str_or_null("gid_type", x.gid_type);
    out += fmt::format(",\"bytes\":{},\"chunks\":{},\"failed\":", x.bytes, x.chunks);
    if (x.failed.empty()) out += "null"; else append_json_string(out, x.failed);
    out += '}';
  }
  out += ']';
  out += "}\n";
  return out;
}

void add_rails(Report& r, const std::vector<RailReport>& session) {
  for (const RailReport& s : session) {
    auto it = std::find_if(r.rails.begin(), r.rails.end(),
                           [&](const RailReport& x) { return x.device == s.device && x.peer == s.peer; });
    if (it == r.rails.end()) {
      r.rails.push_back(s);
      continue;
    }
    it->bytes += s.bytes;
    it->chunks += s.chunks;
    if (!s.failed.empty()) it->failed = s.failed;
  }
}

std::string to_stats_text(const Report& r) {
  std::string out;
  out += fmt::format("Number of files: {}\n", r.files_total);
  out += fmt::format("Number of regular files transferred: {}\n", r.files_transferred);
  out += fmt::format("Number of files skipped (unchanged): {}\n", r.files_skipped);
  out += fmt::format("Number of deleted files: {}\n", r.files_deleted);
  out += fmt::format("Number of failed files: {}\n", r.files_failed);
  out += fmt::format("Total file size: {} bytes\n", r.bytes_total);
  out += fmt::format("Total transferred file size: {} bytes\n", r.bytes_transferred);
  out += fmt::format("Matched data: {} bytes\n", r.bytes_matched);
  out += fmt::format("Elapsed: {:.3f} s\n", r.elapsed_s);
  out += fmt::format("Transport: {}{}{}\n", r.transport.empty() ? "none" : r.transport, r.device.empty() ? "" : " ",
                     r.device);
  return out;
}

void set_transport(Report& r, std::string_view carried_by) {
  const size_t sp = carried_by.find(' ');
  r.transport = std::string(carried_by.substr(0, sp));
  r.device = sp == std::string_view::npos ? "" : std::string(carried_by.substr(sp + 1));
}

}  // namespace rcp::cli
