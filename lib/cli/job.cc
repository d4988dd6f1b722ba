#include "cli/job.h"

#include <fcntl.h>
#include <unistd.h>

#include <toml++/toml.h>

#include "util/fd.h"

namespace rcp::cli {
namespace {

constexpr std::string_view kKnownKeys =
    "sources, destination, options, transport, password_file, schedule, json";

Error bad(const std::string& file, const toml::source_region& r, const std::string& what) {
  return make_error(EINVAL, file + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column) + ": " + what);
}

bool has_control(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

struct Reader {
  const std::string& file;

  Result<std::string> string(const toml::key& k, const toml::node& v, size_t max = 4096) {
    const auto* s = v.as_string();
    if (!s) return bad(file, v.source(), "'" + std::string(k.str()) + "' must be a string");
    const std::string& x = s->get();
    if (x.empty()) return bad(file, v.source(), "'" + std::string(k.str()) + "' is empty");
    if (x.size() > max) return bad(file, v.source(), "'" + std::string(k.str()) + "' is longer than " + std::to_string(max) + " bytes");
    if (has_control(x)) return bad(file, v.source(), "'" + std::string(k.str()) + "' has a control character");
    return x;
  }

  Result<std::vector<std::string>> strings(const toml::key& k, const toml::node& v, size_t max_count) {
    const auto* a = v.as_array();
    if (!a) return bad(file, v.source(), "'" + std::string(k.str()) + "' must be an array of strings");
    if (a->size() > max_count)
      return bad(file, v.source(), "'" + std::string(k.str()) + "' has more than " + std::to_string(max_count) + " elements");
    std::vector<std::string> out;
    for (const auto& e : *a) {
      auto s = string(k, e);
      if (!s.ok()) return s.error();
      out.push_back(std::move(s.value()));
    }
    return out;
  }
};

}  // namespace

bool valid_job_name(std::string_view n) {
  if (n.empty() || n.size() > 64 || n[0] == '.' || n[0] == '-') return false;
  for (char c : n)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
      return false;
  return true;
}

Result<Job> parse_job(std::string_view text, const std::string& file, const std::string& name) {
  if (!valid_job_name(name))
    return make_error(EINVAL, file + ": job name '" + name + "' must be 1 to 64 of A-Z a-z 0-9 _ . - (not starting with . or -)");
  toml::table t;
  try {
    t = toml::parse(text, std::string_view(file));
  } catch (const toml::parse_error& e) {
    return bad(file, e.source(), std::string(e.description()));
  }
  Job j;
  j.name = name;
  Reader r{file};
  bool have_dest = false;
  for (auto&& [k, v] : t) {
    const std::string_view key = k.str();
    if (key == "sources") {
      RCP_ASSIGN(j.sources, r.strings(k, v, kMaxJobSources));
      if (j.sources.empty()) return bad(file, v.source(), "'sources' is empty");
    } else if (key == "destination") {
      RCP_ASSIGN(j.destination, r.string(k, v));
      have_dest = true;
    } else if (key == "options") {
      RCP_ASSIGN(j.options, r.strings(k, v, kMaxJobOptions));
      // Each element is one option: a bare word would be taken for a source.
      for (size_t i = 0; i < j.options.size(); ++i)
        if (j.options[i].size() < 2 || j.options[i][0] != '-' || j.options[i] == "--")
          return bad(file, v.source(),
                     "'options' element " + std::to_string(i + 1) + " (\"" + j.options[i] +
                         "\") is not an option: write options with a value as one element, e.g. \"--bwlimit=500M\"");
    } else if (key == "transport") {
      RCP_ASSIGN(j.transport, r.string(k, v));
      if (j.transport != "auto" && j.transport != "rdma" && j.transport != "tcp")
        return bad(file, v.source(), "'transport' must be \"auto\", \"rdma\" or \"tcp\", not \"" + j.transport + "\"");
    } else if (key == "password_file") {
      RCP_ASSIGN(j.password_file, r.string(k, v));
      if (j.password_file[0] != '/') return bad(file, v.source(), "'password_file' must be an absolute path");
    } else if (key == "schedule") {
      RCP_ASSIGN(j.schedule, r.string(k, v, 256));
    } else if (key == "json") {
      const auto* b = v.as_boolean();
      if (!b) return bad(file, v.source(), "'json' must be true or false");
      j.json = b->get();
    } else {
      return bad(file, k.source(), "unknown key '" + std::string(key) + "' (known: " + std::string(kKnownKeys) + ")");
    }
  }
  if (j.sources.empty()) return make_error(EINVAL, file + ": 'sources' is missing (the paths to copy)");
  if (!have_dest) return make_error(EINVAL, file + ": 'destination' is missing (where to copy to)");
  return j;
}

Result<Job> load_job(const std::string& name_or_path, const std::string& dir) {
  std::string path, name;
  const bool is_path = name_or_path.find('/') != std::string::npos;
  if (is_path) {
    path = name_or_path;
    name = path.substr(path.rfind('/') + 1);
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".toml") == 0) name.resize(name.size() - 5);
  } else {
    name = name_or_path;
    if (!valid_job_name(name))
      return make_error(EINVAL, "job name '" + name + "' must be 1 to 64 of A-Z a-z 0-9 _ . - (not starting with . or -)");
    path = dir + "/" + name + ".toml";
  }
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) return sys_error("job file " + path);
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) return sys_error("reading job file " + path);
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxJobBytes) return make_error(EFBIG, "job file " + path + " is larger than 1 MiB");
  }
  return parse_job(text, path, name);
}

std::vector<std::string> job_argv(const Job& j) {
  std::vector<std::string> a;
  if (!j.transport.empty()) a.push_back("--transport=" + j.transport);
  if (!j.password_file.empty()) a.push_back("--password-file=" + j.password_file);
  a.insert(a.end(), j.options.begin(), j.options.end());
  if (j.json) a.push_back("--json");
  a.push_back("--");
  a.insert(a.end(), j.sources.begin(), j.sources.end());
  a.push_back(j.destination);
  return a;
}

std::string timer_dropin(const Job& j, const std::string& file) {
  if (j.schedule.empty()) return {};
  // OnCalendar= first clears the template's daily schedule.
  return "# Generated by rcp-sync --generate from " + file + "; edit that file, then systemctl daemon-reload.\n"
         "[Timer]\nOnCalendar=\nOnCalendar=" + j.schedule + "\n";
}

}  // namespace rcp::cli
