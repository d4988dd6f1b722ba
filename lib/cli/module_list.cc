#include "cli/module_list.h"

namespace rcp::cli {

namespace {
std::string one_field(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = ' ';
  }
  return out;
}
}  // namespace

std::string format_module_list(const std::vector<ModuleEntry>& modules) {
  std::string out;
  for (const auto& m : modules) out += one_field(m.name) + '\t' + one_field(m.comment) + '\n';
  return out;
}

std::vector<ModuleEntry> parse_module_list(std::string_view text) {
  std::vector<ModuleEntry> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty()) continue;
    const size_t tab = line.find('\t');
    out.push_back({std::string(line.substr(0, tab)),
                   tab == std::string_view::npos ? std::string() : std::string(line.substr(tab + 1))});
  }
  return out;
}

}  // namespace rcp::cli
