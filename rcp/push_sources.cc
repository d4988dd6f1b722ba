#include "push_sources.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <functional>

#include "cli/shard.h"
#include "fs/path.h"
#include "fs/path_list.h"

namespace rcp::client {
namespace {

/// --shard on a push: this run's part of the --files-from list, split by
/// size (cli/shard.h shard_by_size). The whole list is read first (every run
/// must see all of it to agree on the split), with the size of BASE/PATH
/// (lstat; stat with -L); a path that cannot be looked at weighs 0 and still
/// lands in one shard, whose run reports it. Memory: the list's paths, once.
Result<std::vector<std::string>> shard_of_list(PathList& list, const std::string& base, const Options& o) {
  std::vector<cli::WeighedPath> all;
  for (;;) {
    RCP_ASSIGN(auto line, list.next());
    if (!line) break;
    struct stat st {};
    const std::string full = base + "/" + *line;
    const int rc = o.preserve.copy_links ? ::stat(full.c_str(), &st) : ::lstat(full.c_str(), &st);
    all.push_back({std::move(*line), rc == 0 && S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0});
  }
  const auto shards = cli::shard_by_size(all, o.shard->count);
  std::vector<std::string> mine;
  for (size_t i = 0; i < all.size(); ++i)
    if (shards[i] == o.shard->index) mine.push_back(std::move(all[i].path));
  if (o.verbose > 0 && !o.quiet)
    say("shard {}/{}: {} of {} listed paths (split by size)", o.shard->index, o.shard->count, mine.size(), all.size());
  return mine;
}

}  // namespace

Result<std::shared_ptr<const FilterList>> filters(const CLI::App& app, const Options& o) {
  FilterList f;
  size_t ex = 0, in = 0, exf = 0, inf = 0;
  for (const CLI::Option* opt : app.parse_order()) {
    const std::string n = opt->get_name();
    if (n == "--exclude" && ex < o.excludes.size()) RCP_TRY(f.add(o.excludes[ex++], false));
    if (n == "--include" && in < o.includes.size()) RCP_TRY(f.add(o.includes[in++], true));
    if (n == "--exclude-from" && exf < o.exclude_from.size()) RCP_TRY(f.add_from_file(o.exclude_from[exf++], false, o.from0));
    if (n == "--include-from" && inf < o.include_from.size()) RCP_TRY(f.add_from_file(o.include_from[inf++], true, o.from0));
  }
  if (f.empty()) return std::shared_ptr<const FilterList>{};
  return std::make_shared<const FilterList>(std::move(f));
}

Result<SourceStream> push_sources(const std::vector<std::string>& srcs, const Options& o,
                                  std::shared_ptr<const FilterList> filter, bool& tree, bool& contents,
                                  uint64_t& total_bytes, uint64_t& total_files) {
  tree = contents = false;
  ExpandOptions eo;
  eo.recursive = o.recursive;
  eo.devices = o.copy_devices;
  eo.walk = walk_options(o.preserve);
  eo.filter = std::move(filter);
  if (!o.quiet)
    eo.on_skip = [copy_links = o.preserve.copy_links](const std::string& e) {
      say("warning: skipping '{}': {}", e,
          copy_links ? "not a regular file or directory, or a dangling or looping symlink"
                     : "not a regular file or directory (-l copies symlinks, -D devices and specials)");
    };
  if (!o.files_from.empty()) {
    if (srcs.size() != 1)
      return make_error(EINVAL, "--files-from takes one source: the directory the listed paths are relative to");
    struct stat st {};
    if (::stat(srcs[0].c_str(), &st) != 0) return sys_error("'" + srcs[0] + "'");
    if (!S_ISDIR(st.st_mode)) return make_error(ENOTDIR, "'" + srcs[0] + "' is not a directory (--files-from)");
    RCP_ASSIGN(PathList list, PathList::open(o.files_from, o.from0));
    tree = true;
    eo.dir_alone = true;
    std::function<Result<std::optional<std::string>>()> next;
    if (o.shard) {
      RCP_ASSIGN(auto mine, shard_of_list(list, srcs[0], o));
      auto v = std::make_shared<std::vector<std::string>>(std::move(mine));
      next = [v, i = size_t{0}]() mutable -> Result<std::optional<std::string>> {
        if (i == v->size()) return std::optional<std::string>{};
        return std::optional<std::string>{std::move((*v)[i++])};
      };
    } else {
      auto l = std::make_shared<PathList>(std::move(list));
      next = [l]() { return l->next(); };
    }
    struct State {
      std::function<Result<std::optional<std::string>>()> next;
      SourceStream cur;
      bool done = false;
    };
    auto st2 = std::make_shared<State>(State{std::move(next), {}, false});
    const std::string base = srcs[0];
    return SourceStream([st2, base, eo]() -> std::optional<SourceOpener> {
      for (;;) {
        if (st2->cur) {
          if (auto e = st2->cur()) return e;
          st2->cur = nullptr;
        }
        if (st2->done) return std::nullopt;
        auto line = st2->next();
        if (!line.ok()) {
          st2->done = true;
          return failed_entry(line.error());
        }
        if (!line->has_value()) return std::nullopt;
        ExpandOptions one = eo;
        one.name = **line;
        auto set = expand_source(AT_FDCWD, base + "/" + **line, **line, one);
        st2->cur = set.ok() ? std::move(set->files) : stream_of({failed_entry(set.error())});
      }
    });
  }
  struct Named {
    std::string path;
    bool regular;
  };
  auto named = std::make_shared<std::vector<Named>>();
  named->reserve(srcs.size());
  for (const auto& s : srcs) {
    struct stat st {};
    // -l: a source naming a symlink (no trailing '/') is sent as the link,
    // which need not lead anywhere.
    const bool as_link = o.preserve.links && !o.preserve.copy_links && !s.empty() && s.back() != '/';
    if ((as_link ? ::lstat(s.c_str(), &st) : ::stat(s.c_str(), &st)) != 0) return sys_error("'" + s + "'");
    if (S_ISREG(st.st_mode)) {
      total_bytes += static_cast<uint64_t>(st.st_size);
      ++total_files;
    }
    if (S_ISDIR(st.st_mode)) {
      if (!o.recursive) return make_error(EISDIR, "'" + s + "' is a directory (use -r)");
      tree = true;
      const std::string b = base_name(s);
      // ("dir/": dir's contents, rsync's rule, as "." and "/".)
      contents = contents || b == "." || b == "/" || (s.size() > 1 && s.back() == '/');
    }
    named->push_back({s, S_ISREG(st.st_mode)});
  }
  // A regular file is not looked at again before it is opened.
  return chain(named->size(), [named, eo](size_t i) mutable -> SourceStream {
    const Named& n = (*named)[i];
    eo.known_regular = n.regular;
    auto set = expand_source(AT_FDCWD, n.path, n.path, eo);
    return set.ok() ? std::move(set->files) : stream_of({failed_entry(set.error())});
  });
}

}  // namespace rcp::client
