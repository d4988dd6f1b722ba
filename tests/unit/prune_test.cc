// --delete (fs/prune.h): only inside the directories the source sent, excluded
// entries protected, never outside the destination, never through a symlink, and
// a name with ".." or an absolute path prunes nothing. Also the names a pull
// accepts when one session carries many sources (fs/destination.h) and the
// --files-from reader (fs/path_list.h).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "fs/destination.h"
#include "fs/path_list.h"
#include "fs/prune.h"
#include "util/fd.h"

using namespace rcp;
namespace fs = std::filesystem;

namespace {

struct Tree {
  std::string dir;
  Tree() {
    char tmpl[] = "/tmp/rcp-prune-test.XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    fs::create_directories(dir + "/dest");
    fs::create_directories(dir + "/outside");
  }
  ~Tree() { fs::remove_all(dir); }
  std::string at(const std::string& rel) const { return dir + "/" + rel; }
  void file(const std::string& rel) const {
    fs::create_directories(fs::path(at(rel)).parent_path());
    Fd f(::open(at(rel).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    REQUIRE(f.get() >= 0);
  }
  bool has(const std::string& rel) const { return fs::exists(fs::symlink_status(at(rel))); }
  Fd dest() const { return Fd(::open(at("dest").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); }
};

}  // namespace

TEST_CASE("--delete removes what the source did not send, only in the directories it sent") {
  Tree t;
  for (auto f : {"dest/src/a", "dest/src/extra", "dest/src/sub/b", "dest/src/sub/gone/deep/x", "dest/src/keep.bak",
                 "dest/sibling", "outside/precious"})
    t.file(f);
  ::symlink(t.at("outside").c_str(), t.at("dest/src/link-out").c_str());
  ::symlink(t.at("outside").c_str(), t.at("dest/src/sub/linkdir").c_str());
  Fd d = t.dest();
  PruneOptions po;
  FilterList fl;
  REQUIRE(fl.add("*.bak", false).ok());
  po.filter = std::make_shared<const FilterList>(fl);
  Pruner p(d.get(), po);
  p.saw("src", true);
  p.saw("src/a", false);
  p.saw("src/sub", true);
  p.saw("src/sub/b", false);
  CHECK(t.has("dest/src/sub/gone"));  // src/sub is still open: nothing decided yet
  p.finish();
  CHECK(t.has("dest/src/a"));
  CHECK(t.has("dest/src/sub/b"));
  CHECK_FALSE(t.has("dest/src/extra"));
  CHECK_FALSE(t.has("dest/src/sub/gone"));
  CHECK_FALSE(t.has("dest/src/link-out"));     // the link itself, not what it points to
  CHECK_FALSE(t.has("dest/src/sub/linkdir"));
  CHECK(t.has("dest/src/keep.bak"));           // excluded: protected
  CHECK(t.has("dest/sibling"));                // the destination itself was not copied
  CHECK(t.has("outside/precious"));
  CHECK(p.deleted() == 6);  // extra, gone/deep/x, gone/deep, gone, link-out, linkdir
  CHECK(p.errors().empty());
}

TEST_CASE("--delete: a directory is pruned as soon as it is complete; --delete-after waits for finish()") {
  for (bool after : {false, true}) {
    CAPTURE(after);
    Tree t;
    t.file("dest/d1/old");
    t.file("dest/d2/old");
    Fd d = t.dest();
    PruneOptions po;
    po.after = after;
    Pruner p(d.get(), po);
    p.saw("d1", true);
    p.saw("d2", true);  // d1 is complete now
    CHECK(t.has("dest/d1/old") == after);
    p.finish();
    CHECK_FALSE(t.has("dest/d1/old"));
    CHECK_FALSE(t.has("dest/d2/old"));
  }
}

TEST_CASE("--delete never acts outside: '..', absolute names, symlinked directories, a source error") {
  Tree t;
  t.file("outside/precious");
  t.file("dest/stray");
  t.file("dest/other/keepme");
  t.file("dest/other/sub/keepme2");
  ::symlink(t.at("outside").c_str(), t.at("dest/linked").c_str());
  ::symlink("other", t.at("dest/inside-link").c_str());  // a link that stays inside
  Fd d = t.dest();
  {
    Pruner p(d.get(), {});
    p.saw("../outside", true);  // a hostile source naming outside
    p.saw("/tmp", true);
    p.saw("a/../../outside", true);
    p.finish();
    CHECK(p.errors().empty());  // refused before any attempt to open them
    p.saw("linked", true);      // a directory entry whose destination is a symlink out
    p.saw("inside-link", true); // or a symlink to another directory of the destination
    p.saw("inside-link/sub", true);  // or a path through one
    p.finish();
    CHECK(t.has("dest/other/sub/keepme2"));
    CHECK(t.has("outside/precious"));
    CHECK(t.has("dest/other/keepme"));  // never followed, even inside
    CHECK(t.has("dest/stray"));  // the root was not being copied
    CHECK(p.deleted() == 0);
  }
  {
    PruneOptions po;
    po.root = true;  // the destination itself is copied...
    Pruner p(d.get(), po);
    p.saw("linked", true);
    p.source_error();  // ...but the source could not send everything: nothing is deleted
    p.finish();
    CHECK(t.has("dest/stray"));
    CHECK(p.deleted() == 0);
  }
  {
    PruneOptions po;
    po.root = true;
    Pruner p(d.get(), po);
    p.saw("kept", false);
    p.finish();
    CHECK_FALSE(t.has("dest/stray"));
    CHECK_FALSE(t.has("dest/linked"));  // removed as a link; its target untouched
    CHECK(t.has("outside/precious"));
  }
}

TEST_CASE("--delete leaves temp files of files in flight, and a directory holding a protected entry") {
  Tree t;
  t.file("dest/d/.big.rcp-abcd1234");
  t.file("dest/d/.huge.rcp-partial");
  t.file("dest/d/olddir/x.bak");
  t.file("dest/d/olddir/y");
  t.file("dest/d/old2/deeper/z.bak");  // two levels down: neither directory is an error
  t.file("dest/d/old2/deeper/w");
  Fd d = t.dest();
  PruneOptions po;
  FilterList fl;
  REQUIRE(fl.add("*.bak", false).ok());
  po.filter = std::make_shared<const FilterList>(fl);
  Pruner p(d.get(), po);
  p.saw("d", true);
  p.finish();
  CHECK(t.has("dest/d/.big.rcp-abcd1234"));
  CHECK(t.has("dest/d/.huge.rcp-partial"));  // what a --partial rerun resumes from
  CHECK(t.has("dest/d/olddir/x.bak"));
  CHECK_FALSE(t.has("dest/d/olddir/y"));
  CHECK(t.has("dest/d/old2/deeper/z.bak"));
  CHECK_FALSE(t.has("dest/d/old2/deeper/w"));
  CHECK_MESSAGE(p.errors().empty(), p.errors().front());
}

TEST_CASE("a pull of many sources accepts each one's name, and nothing else") {
  Tree t;
  auto dest = resolve_destination_local(t.at("dest"), true);
  REQUIRE(dest.ok());
  dest->expect = ExpectedNames{"a", false, {"b", "c*"}, false};
  DestinationTree tree(dest.value());
  CHECK(tree.place("a", false, 0644, "peer").error.empty());
  CHECK(tree.place("b", false, 0644, "peer").error.empty());
  CHECK(tree.place("c12", false, 0644, "peer").error.empty());
  CHECK_FALSE(tree.place("d", false, 0644, "peer").error.empty());
  CHECK_FALSE(tree.place("b/x", false, 0644, "peer").error.empty());  // no -r
  auto rel = resolve_destination_local(t.at("dest"), true);
  rel->expect = ExpectedNames{"x/y.txt", false, {"dir"}, true};
  DestinationTree rtree(rel.value());
  CHECK(rtree.place("x/y.txt", false, 0644, "peer").error.empty());
  CHECK(rtree.place("dir", S_IFDIR, 0755, "peer").error.empty());
  CHECK_FALSE(rtree.place("dir/inner", false, 0644, "peer").error.empty());  // no -r
  CHECK_FALSE(rtree.place("x/other", false, 0644, "peer").error.empty());
  CHECK_FALSE(rtree.place("x", S_IFDIR, 0755, "peer").error.empty());
  rel->expect->tree = true;
  DestinationTree rtree2(rel.value());
  CHECK(rtree2.place("dir/inner", false, 0644, "peer").error.empty());
  CHECK_FALSE(rtree2.place("dirx/inner", false, 0644, "peer").error.empty());
}

TEST_CASE("--files-from: lines cleaned, blank ones skipped, '..' refused naming the line") {
  Tree t;
  auto write = [&](const std::string& text) {
    Fd f(::open(t.at("list").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    REQUIRE(::write(f.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  };
  auto read_all = [&](bool from0) {
    std::vector<std::string> v;
    auto l = PathList::open(t.at("list"), from0);
    REQUIRE(l.ok());
    for (;;) {
      auto n = l->next();
      if (!n.ok()) {
        v.push_back("error: " + n.error().message());
        break;
      }
      if (!n->has_value()) break;
      v.push_back(**n);
    }
    return v;
  };
  write("a/b\n\n/abs/x\n./c//d/\r\n# not a comment\nlast");
  CHECK(read_all(false) == std::vector<std::string>{"a/b", "abs/x", "c/d", "# not a comment", "last"});
  write(std::string("one\0two words\0\0", 15));
  CHECK(read_all(true) == std::vector<std::string>{"one", "two words"});
  write("ok\n../etc/passwd\nnever\n");
  auto v = read_all(false);
  REQUIRE(v.size() == 2);
  CHECK(v[0] == "ok");
  CHECK(v[1].find("line 2") != std::string::npos);
  write(std::string(9000, 'x'));
  CHECK(read_all(false).back().find("too long") != std::string::npos);
  CHECK_FALSE(PathList::open(t.at("nope"), false).ok());
  // A list that opens but cannot be read (a directory: EISDIR) fails naming it, not as an empty list.
  auto dir = PathList::open(t.dir, false);
  REQUIRE(dir.ok());
  auto first = dir->next();
  REQUIRE_FALSE(first.ok());
  CHECK(first.error().code == EISDIR);
  CHECK_MESSAGE(first.error().message().find("read '" + t.dir + "'") != std::string::npos, first.error().message());
}

TEST_CASE("--delete stops 256 levels down, naming where, and keeps what it could not reach") {
  Tree t;
  std::string rel = "dest/src/gone";
  for (int i = 0; i < 256; ++i) rel += "/d";
  t.file(rel + "/x");
  t.file("dest/src/extra");
  Fd d = t.dest();
  Pruner p(d.get(), PruneOptions{});
  p.saw("src", true);
  p.finish();
  CHECK_FALSE(t.has("dest/src/extra"));  // the rest is still pruned
  REQUIRE(p.errors().size() == 1);
  CHECK_MESSAGE(p.errors()[0].find("deeper than 256 levels") != std::string::npos, p.errors()[0]);
  CHECK(t.has(rel + "/x"));
  CHECK(t.has("dest/src/gone"));  // it still holds what was not reached
}

TEST_CASE("--files-from a file without line ends (/dev/zero) stops at 8 KiB, never reading it all") {
  auto l = PathList::open("/dev/zero", false);
  REQUIRE(l.ok());
  auto n = l->next();
  REQUIRE_FALSE(n.ok());
  CHECK(n.error().code == ENAMETOOLONG);
  CHECK_MESSAGE(n.error().message().find("'/dev/zero' line 1: path too long") != std::string::npos, n.error().message());
}
