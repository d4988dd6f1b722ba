#include "fs/filter.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fmt/core.h>

#include "util/fd.h"

namespace rcp {

namespace {

enum class Tok : uint8_t { lit, one, star, star2, cls };

struct Token {
  Tok kind = Tok::lit;
  char c = 0;
  bool negated = false;
  std::vector<std::pair<unsigned char, unsigned char>> ranges;  // a class
};

/// The pattern as tokens; an unterminated class is a literal '['.
std::vector<Token> tokenize(std::string_view p) {
  std::vector<Token> out;
  for (size_t i = 0; i < p.size(); ++i) {
    const char ch = p[i];
    if (ch == '\\' && i + 1 < p.size()) {
      out.push_back({Tok::lit, p[++i]});
    } else if (ch == '?') {
      out.push_back({Tok::one});
    } else if (ch == '*') {
      if (i + 1 < p.size() && p[i + 1] == '*') {
        while (i + 1 < p.size() && p[i + 1] == '*') ++i;
        out.push_back({Tok::star2});
      } else {
        out.push_back({Tok::star});
      }
    } else if (ch == '[') {
      Token t{Tok::cls};
      size_t j = i + 1;
      if (j < p.size() && (p[j] == '!' || p[j] == '^')) {
        t.negated = true;
        ++j;
      }
      bool first = true, closed = false;
      while (j < p.size()) {
        if (p[j] == ']' && !first) {
          closed = true;
          break;
        }
        unsigned char lo = static_cast<unsigned char>(p[j]);
        if (p[j] == '\\' && j + 1 < p.size()) lo = static_cast<unsigned char>(p[++j]);
        unsigned char hi = lo;
        if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
          hi = static_cast<unsigned char>(p[j + 2]);
          if (p[j + 2] == '\\' && j + 3 < p.size()) hi = static_cast<unsigned char>(p[++j + 2]);
          j += 2;
        }
        t.ranges.emplace_back(lo, hi);
        first = false;
        ++j;
      }
      if (!closed) {
        out.push_back({Tok::lit, '['});
        continue;
      }
      out.push_back(std::move(t));
      i = j;
    } else {
      out.push_back({Tok::lit, ch});
    }
  }
  return out;
}

bool token_takes(const Token& t, char ch) {
  switch (t.kind) {
    case Tok::lit: return ch == t.c;
    case Tok::one: return ch != '/';
    case Tok::cls: {
      if (ch == '/') return false;
      const auto u = static_cast<unsigned char>(ch);
      bool in = false;
      for (auto [lo, hi] : t.ranges) in = in || (u >= lo && u <= hi);
      return in != t.negated;
    }
    default: return false;
  }
}

}  // namespace

// A set of reachable text positions per token: O(pattern × text), whatever
// the pattern — a peer's rule can never make the daemon backtrack for ever.
bool wildmatch(std::string_view pattern, std::string_view text) {
  const std::vector<Token> toks = tokenize(pattern);
  const size_t n = text.size();
  std::vector<char> cur(n + 1, 0), next(n + 1, 0);
  cur[0] = 1;
  for (const Token& t : toks) {
    std::fill(next.begin(), next.end(), 0);
    if (t.kind == Tok::star || t.kind == Tok::star2) {
      bool run = false;
      for (size_t i = 0; i <= n; ++i) {
        if (cur[i]) run = true;
        if (run) next[i] = 1;
        if (i < n && t.kind == Tok::star && text[i] == '/') run = false;
      }
    } else {
      for (size_t i = 0; i < n; ++i)
        if (cur[i] && token_takes(t, text[i])) next[i + 1] = 1;
    }
    std::swap(cur, next);
  }
  return cur[n] != 0;
}

Status FilterList::add(std::string_view rule, bool include) {
  const std::string given(rule);
  if (rule == "!") {
    rules_.clear();
    return {};
  }
  if (rule.size() >= 2 && (rule[0] == '+' || rule[0] == '-') && rule[1] == ' ') {
    include = rule[0] == '+';
    rule.remove_prefix(2);
  }
  if (rule.empty()) return make_error(EINVAL, "filter rule '" + given + "' has an empty pattern");
  if (rule.size() > kMaxFilterRuleLen)
    return make_error(EINVAL, fmt::format("filter pattern longer than {} bytes", kMaxFilterRuleLen));
  if (rule.find('\0') != std::string_view::npos) return make_error(EINVAL, "filter pattern with a NUL byte");
  if (rules_.size() >= kMaxFilterRules) return make_error(E2BIG, fmt::format("more than {} filter rules", kMaxFilterRules));
  Rule r;
  r.include = include;
  r.text = std::string(include ? "+ " : "- ") + std::string(rule);
  std::string_view p = rule;
  if (p.size() >= 4 && p.substr(p.size() - 4) == "/***") {
    r.all_below = true;
    p.remove_suffix(4);
  } else if (p.size() > 1 && p.back() == '/') {
    r.dir_only = true;
    while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
  }
  if (!p.empty() && p.front() == '/') {
    r.anchored = true;
    while (!p.empty() && p.front() == '/') p.remove_prefix(1);
  }
  if (p.empty()) return make_error(EINVAL, "filter rule '" + given + "' matches nothing");
  r.pattern = std::string(p);
  r.wild2 = r.pattern.find("**") != std::string::npos;
  for (char c : r.pattern) r.slashes += c == '/';
  rules_.push_back(std::move(r));
  return {};
}

Status FilterList::add_from_file(const std::string& path, bool include, bool from0) {
  int fd = path == "-" ? ::dup(STDIN_FILENO) : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return sys_error("filter file '" + path + "'");
  Fd f(fd);
  std::string data, chunk(65536, '\0');
  for (;;) {
    const ssize_t n = ::read(f.get(), chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("read filter file '" + path + "'");
    if (n == 0) break;
    data.append(chunk.data(), static_cast<size_t>(n));
    if (data.size() > kMaxFilterRules * (kMaxFilterRuleLen + 1))
      return make_error(E2BIG, "filter file '" + path + "' is too long");
  }
  const char sep = from0 ? '\0' : '\n';
  size_t i = 0;
  while (i < data.size()) {
    size_t j = data.find(sep, i);
    if (j == std::string::npos) j = data.size();
    std::string_view line(data.data() + i, j - i);
    if (!from0 && !line.empty() && line.back() == '\r') line.remove_suffix(1);
    i = j + 1;
    if (line.empty() || (!from0 && (line.front() == ';' || line.front() == '#'))) continue;
    if (Status s = add(line, include); !s.ok()) return make_error(s.error().code, "'" + path + "': " + s.error().context);
  }
  return {};
}

std::vector<std::string> FilterList::wire() const {
  std::vector<std::string> out;
  out.reserve(rules_.size());
  for (const Rule& r : rules_) out.push_back(r.text);
  return out;
}

Result<FilterList> FilterList::from_wire(const std::vector<std::string>& rules) {
  FilterList f;  // (more than kMaxFilterRules: add() refuses the one too many, E2BIG -> EPROTO below)
  for (const std::string& t : rules) {
    if (t.size() < 3 || (t[0] != '+' && t[0] != '-') || t[1] != ' ')
      return make_error(EPROTO, "filter rule without '+ ' or '- '");
    if (Status s = f.add(t, t[0] == '+'); !s.ok()) return make_error(EPROTO, s.error().context);
  }
  return f;
}

bool FilterList::matches(const Rule& r, std::string_view path, bool is_dir) const {
  if (r.dir_only && !is_dir) return false;
  auto one = [&](std::string_view pat, bool wild2, size_t slashes) {
    std::string_view name = path;
    if (!r.anchored && slashes == 0 && !wild2) {  // the last component
      const size_t s = name.rfind('/');
      if (s != std::string_view::npos) name.remove_prefix(s + 1);
      return wildmatch(pat, name);
    }
    if (r.anchored || pat.substr(0, 2) == "**") return wildmatch(pat, name);
    if (!wild2) {  // the last slashes + 1 components
      size_t seen = 0, k = name.size();
      while (k > 0) {
        if (name[k - 1] == '/' && ++seen == slashes + 1) break;
        --k;
      }
      return wildmatch(pat, name.substr(k));
    }
    // "**" inside: the whole path, or any tail starting after a '/'.
    if (wildmatch(pat, name)) return true;
    for (size_t k = 0; k < name.size(); ++k)
      if (name[k] == '/' && wildmatch(pat, name.substr(k + 1))) return true;
    return false;
  };
  if (r.all_below) return one(r.pattern, r.wild2, r.slashes) || one(r.pattern + "/**", true, r.slashes + 1);
  return one(r.pattern, r.wild2, r.slashes);
}

bool FilterList::excluded(std::string_view path, bool is_dir) const {
  for (const Rule& r : rules_)
    if (matches(r, path, is_dir)) return !r.include;
  return false;
}

}  // namespace rcp
