// Proves the fs layer's two halves of a copy: expand_source() turns a path
// into what is sent (a file, or with -r a tree; the same for push and get),
// and DestinationTree places each incoming entry — refusing unsafe names and
// a second entry for a single-file destination, creating a tree's
// directories beneath the destination.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "fs/destination.h"
#include "fs/sources.h"

using namespace rcp;

namespace {

/// A fresh directory under /tmp, removed on destruction.
struct Scratch {
  std::string dir;
  Scratch() {
    char tmpl[] = "/tmp/rcp-dest-test.XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir = tmpl;
  }
  ~Scratch() { std::filesystem::remove_all(dir); }
  std::string at(const std::string& rel) const { return dir + "/" + rel; }
  void file(const std::string& rel, const std::string& content = "x") const {
    std::filesystem::create_directories(std::filesystem::path(at(rel)).parent_path());
    int fd = ::open(at(rel).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()));
    ::close(fd);
  }
};

std::vector<std::string> names(SourceStream& stream) {
  std::vector<std::string> v;
  for (auto& op : drain(stream)) {
    auto f = op();
    REQUIRE_MESSAGE(f.ok(), f.error().message());
    v.push_back(f->skip_note.empty() ? f->name + (f->is_dir ? "/" : "") : "(skipped) " + f->skip_note);
  }
  return v;
}

}  // namespace

TEST_CASE("expand_source: a file is itself, a directory needs -r, a tree is named after its root") {
  Scratch s;
  s.file("top/a.txt");
  s.file("top/sub/b.txt");
  ::symlink("/etc/passwd", s.at("top/link").c_str());
  Fd root(::open(s.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (bool beneath : {false, true}) {
    CAPTURE(beneath);
    const int dir_fd = beneath ? root.get() : AT_FDCWD;
    auto path = [&](const std::string& rel) { return beneath ? rel : s.at(rel); };
    auto one = expand_source(dir_fd, path("top/a.txt"), "a", beneath, false);
    REQUIRE(one.ok());
    CHECK_FALSE(one->tree);
    CHECK(names(one->files) == std::vector<std::string>{"a.txt"});

    auto no_r = expand_source(dir_fd, path("top"), "top", beneath, false);
    REQUIRE_FALSE(no_r.ok());
    CHECK(no_r.error().code == EISDIR);
    CHECK(no_r.error().message().find("'top' is a directory (use -r)") != std::string::npos);

    ExpandOptions eo;
    eo.beneath = beneath;
    eo.recursive = true;
    std::vector<std::string> skipped;
    eo.on_skip = [&](const std::string& e) { skipped.push_back(e); };
    auto tree = expand_source(dir_fd, path("top"), "top", eo);
    REQUIRE(tree.ok());
    CHECK(tree->tree);
    CHECK_FALSE(tree->contents);
    CHECK(names(tree->files) == std::vector<std::string>{"top/", "top/a.txt", "top/sub/", "top/sub/b.txt"});
    CHECK(skipped == std::vector<std::string>{"top/link"});
  }
  SUBCASE("the root of an export lands its contents directly") {
    auto tree = expand_source(root.get(), "", "mod", true, true);
    REQUIRE(tree.ok());
    CHECK(tree->contents);
    CHECK(names(tree->files) ==
          std::vector<std::string>{"top/", "top/a.txt", "(skipped) skipping 'mod/top/link': not a regular file or directory",
                                   "top/sub/", "top/sub/b.txt"});
  }
  SUBCASE("a missing file: the push's fails when opened, the get's at once") {
    auto push = expand_source(AT_FDCWD, s.at("nope"), "nope", false, false);
    REQUIRE(push.ok());
    auto all = drain(push->files);
    REQUIRE(all.size() == 1);
    CHECK_FALSE(all[0]().ok());
    CHECK_FALSE(expand_source(root.get(), "nope", "nope", true, false).ok());
  }
}

TEST_CASE("DestinationTree places entries in a directory destination") {
  Scratch s;
  auto dest = resolve_destination_local(s.dir, true);
  REQUIRE(dest.ok());
  DestinationTree tree(dest.value());

  PlacedEntry d = tree.place("top", S_IFDIR, 0750, "peer");
  CHECK(d.error.empty());
  CHECK(d.rel == "top");
  CHECK(d.shown == s.dir + "/top");
  REQUIRE(tree.make_dir(d.rel, 0750, d.shown).ok());
  struct stat st {};
  REQUIRE(::stat(s.at("top").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0750);

  PlacedEntry f = tree.place("top/sub/f.txt", S_IFREG, 0600, "peer");
  REQUIRE_MESSAGE(f.error.empty(), f.error);
  CHECK(f.parent);
  REQUIRE(f.tmp.fd() >= 0);
  REQUIRE(f.tmp.commit(0600, false).ok());
  CHECK(std::filesystem::exists(s.at("top/sub/f.txt")));

  for (const std::string bad : {"../evil", "/abs", "a/../b", "a//b", "./a", ""}) {
    CAPTURE(bad);
    PlacedEntry e = tree.place(bad, S_IFREG, 0644, "10.0.0.1:7471");
    CHECK(e.error == "refused unsafe file name '" + bad + "' from 10.0.0.1:7471");
    CHECK(e.tmp.fd() < 0);
  }
}

TEST_CASE("DestinationTree takes one file, and no directory, into a file destination") {
  Scratch s;
  auto dest = resolve_destination_local(s.at("out.bin"), false);
  REQUIRE(dest.ok());
  DestinationTree tree(dest.value());
  PlacedEntry first = tree.place("whatever/the/name", S_IFREG, 0644, "peer");
  REQUIRE_MESSAGE(first.error.empty(), first.error);
  CHECK(first.shown == s.at("out.bin"));
  PlacedEntry second = tree.place("b", S_IFREG, 0644, "peer");
  CHECK(second.error == "several files sent to the single-file destination '" + s.at("out.bin") + "'");
  PlacedEntry dir = tree.place("d", S_IFDIR, 0755, "peer");
  CHECK(dir.error == "a directory was sent to the file destination '" + s.at("out.bin") + "'");
}

TEST_CASE("a FIFO or socket where a file would land is never replaced; a file or symlink is") {
  Scratch s;
  REQUIRE(::mkfifo(s.at("fifo").c_str(), 0600) == 0);
  s.file("plain");
  REQUIRE(::symlink("plain", s.at("link").c_str()) == 0);
  int dfd = ::open(s.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(dfd >= 0);
  auto r = check_replaceable(dfd, "fifo", "x/fifo");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().context.find("x/fifo") != std::string::npos);
  CHECK(r.error().context.find("FIFO") != std::string::npos);
  CHECK(check_replaceable(dfd, "plain", "plain").ok());
  CHECK(check_replaceable(dfd, "link", "link").ok());
  CHECK(check_replaceable(dfd, "absent", "absent").ok());
  // Through DestinationTree: a push into the directory fails that one file, the FIFO stays.
  Destination d;
  d.dir.reset(dfd);
  d.is_dir = true;
  d.shown = s.dir;
  DestinationTree tree(d);
  PlacedEntry e = tree.place("fifo", false, 0644, "peer", IncomingFile{10});
  CHECK(e.error.find("FIFO") != std::string::npos);
  struct stat st;
  REQUIRE(::lstat(s.at("fifo").c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  // And a local destination naming it is refused before anything connects.
  auto local = resolve_destination_local(s.at("fifo"), false);
  REQUIRE_FALSE(local.ok());
  CHECK(local.error().context.find("FIFO") != std::string::npos);
  CHECK(resolve_destination_local(s.at("plain"), false).ok());
}

TEST_CASE("a device destination takes one file that fits, only what was asked for, written in place") {
  Scratch s;
  s.file("dev", std::string(4096, 'd'));  // stands in for the device: place() only needs its fd and size
  auto make = [&] {
    Destination d;
    d.shown = "/dev/fake";
    d.device = std::make_shared<DeviceTarget>();
    d.device->fd.reset(::open(s.at("dev").c_str(), O_WRONLY | O_CLOEXEC));
    REQUIRE(d.device->fd.valid());
    d.device->size = 4096;
    d.device->shown = "/dev/fake";
    return d;
  };
  {
    Destination d = make();
    d.expect = ExpectedNames{"disk.img", false};
    DestinationTree tree(d);
    PlacedEntry e = tree.place("other.img", false, 0644, "peer", IncomingFile{100});
    CHECK(e.error.find("not what was asked for") != std::string::npos);
    CHECK_FALSE(e.tmp.is_device());
  }
  {
    Destination d = make();
    DestinationTree tree(d);
    PlacedEntry e = tree.place("disk.img", false, 0644, "peer", IncomingFile{4097});
    CHECK(e.error.find("smaller") != std::string::npos);
    CHECK(e.error.find("nothing written") != std::string::npos);
    CHECK_FALSE(e.tmp.is_device());
  }
  {
    Destination d = make();
    DestinationTree tree(d);
    CHECK(tree.place("sub", S_IFDIR, 0755, "peer", IncomingFile{0}).error.find("directory") != std::string::npos);
  }
  {
    Destination d = make();
    DestinationTree tree(d);
    PlacedEntry e = tree.place("disk.img", false, 0644, "peer", IncomingFile{4096});
    CHECK(e.error.empty());
    CHECK(e.tmp.is_device());
    CHECK(e.tmp.temp_name().empty());  // no temp file, nothing to rename
    CHECK(tree.place("second", false, 0644, "peer", IncomingFile{1}).error.find("exactly one") != std::string::npos);
    CHECK(e.tmp.commit(0644, false).ok());
  }
  // Nothing but the device was created beside it.
  CHECK(std::distance(std::filesystem::directory_iterator(s.dir), std::filesystem::directory_iterator{}) == 1);
}

TEST_CASE("trailing slash on a source: 'dir' sends the directory, 'dir/' its contents (rsync)") {
  Scratch s;
  s.file("top/a.txt");
  s.file("top/sub/b.txt");
  Fd root(::open(s.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (bool beneath : {false, true}) {
    CAPTURE(beneath);
    const int dir_fd = beneath ? root.get() : AT_FDCWD;
    auto path = [&](const std::string& rel) { return beneath ? rel : s.at(rel); };
    auto named = expand_source(dir_fd, path("top"), "top", beneath, true);
    REQUIRE(named.ok());
    CHECK(names(named->files) == std::vector<std::string>{"top/", "top/a.txt", "top/sub/", "top/sub/b.txt"});
    auto contents = expand_source(dir_fd, path("top/"), "top/", beneath, true);
    REQUIRE(contents.ok());
    CHECK(contents->tree);
    CHECK(names(contents->files) == std::vector<std::string>{"a.txt", "sub/", "sub/b.txt"});
  }
}

TEST_CASE("a missing destination: made (with its parents) when it must be a directory, never a file named 'x/'") {
  Scratch s;
  SUBCASE("local: make_dir creates every missing component") {
    auto d = resolve_destination_local(s.at("new/deeper/dir"), true, {}, true);
    REQUIRE_MESSAGE(d.ok(), d.error().message());
    CHECK(d->is_dir);
    CHECK(std::filesystem::is_directory(s.at("new/deeper/dir")));
  }
  SUBCASE("local: without make_dir a missing directory destination is refused") {
    CHECK_FALSE(resolve_destination_local(s.at("missing"), true).ok());
    CHECK_FALSE(std::filesystem::exists(s.at("missing")));
  }
  SUBCASE("local: 'x/' is a directory even for one file; without make_dir refused, not a file 'x'") {
    auto refused = resolve_destination_local(s.at("x/"), false);
    CHECK_FALSE(refused.ok());
    CHECK_FALSE(std::filesystem::exists(s.at("x")));
    auto made = resolve_destination_local(s.at("x/"), false, {}, true);
    REQUIRE(made.ok());
    CHECK(made->is_dir);
    CHECK(std::filesystem::is_directory(s.at("x")));
  }
  SUBCASE("local: one file to a missing name stays a file") {
    auto d = resolve_destination_local(s.at("newname"), false);
    REQUIRE(d.ok());
    CHECK_FALSE(d->is_dir);
    CHECK(d->leaf == "newname");
  }
  SUBCASE("local: a directory that cannot be made is named, with the reason") {
    // (a dangling symlink on the way: the directory it names is not there to make one in)
    REQUIRE(::symlink("no-such-dir/deeper", s.at("dangling").c_str()) == 0);
    auto d = resolve_destination_local(s.at("dangling/sub"), true, {}, true);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().code == ENOENT);
    CHECK_MESSAGE(d.error().message().find("cannot create destination directory '" + s.at("dangling/sub") + "'") !=
                      std::string::npos,
                  d.error().message());
  }
  SUBCASE("local: make_dir onto an existing file is refused") {
    s.file("afile");
    CHECK_FALSE(resolve_destination_local(s.at("afile"), true, {}, true).ok());
  }
  SUBCASE("beneath an export: made with its parents, never through a symlink") {
    Fd root(::open(s.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    auto d = resolve_destination_beneath(root.get(), "a/b/c", false, "mod/a/b/c", true);
    REQUIRE_MESSAGE(d.ok(), d.error().message());
    CHECK(d->is_dir);
    CHECK(std::filesystem::is_directory(s.at("a/b/c")));
    CHECK_FALSE(resolve_destination_beneath(root.get(), "q/r", true, "mod/q/r", false).ok());
    CHECK_FALSE(std::filesystem::exists(s.at("q")));
    Scratch outside;
    ::symlink(outside.dir.c_str(), s.at("out").c_str());
    CHECK_FALSE(resolve_destination_beneath(root.get(), "out/new", false, "mod/out/new", true).ok());
    CHECK(std::filesystem::is_empty(outside.dir));
    // a symlink inside, to a name that does not exist yet: not followed to create it
    ::symlink("not-yet", s.at("lnk").c_str());
    auto via = resolve_destination_beneath(root.get(), "lnk/new", false, "mod/lnk/new", true);
    REQUIRE_FALSE(via.ok());
    CHECK_MESSAGE(via.error().message().find("cannot create destination 'mod/lnk/new'") != std::string::npos,
                  via.error().message());
    CHECK_FALSE(std::filesystem::exists(s.at("not-yet")));
  }
}

TEST_CASE("a destination the resolve made or found empty is fresh: its first tree looks nothing up in it, and still replaces") {
  Scratch s;
  auto expect_fresh = [&](Destination& dest, const std::string& dir) {
    CHECK(dest.empty);
    DestinationTree tree(dest);
    CHECK_FALSE(dest.empty);  // taken: a second tree over it looks again
    // Planted behind the tree's back (another writer): place() does not see
    // it (no lookup), and the commit still replaces it (link, then EEXIST:
    // temp name + rename), never fails or leaves it.
    {
      int fd = ::open((dir + "/x").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      REQUIRE(fd >= 0);
      REQUIRE(::write(fd, "old", 3) == 3);
      ::close(fd);
    }
    PlacedEntry e = tree.place("x", S_IFREG, 0644, "peer");
    REQUIRE_MESSAGE(e.error.empty(), e.error);
    CHECK_FALSE(e.old.exists);  // no lookup: "nothing was there"
    REQUIRE(::write(e.tmp.fd(), "new!", 4) == 4);
    REQUIRE(e.tmp.commit(0644, false).ok());
    CHECK(std::filesystem::file_size(dir + "/x") == 4);
    DestinationTree again(dest);
    PlacedEntry seen = again.place("x", S_IFREG, 0644, "peer");
    CHECK(seen.old.exists);  // not fresh: looked up, found
  };
  SUBCASE("local, made") {
    auto d = resolve_destination_local(s.at("made/"), true, {}, true);
    REQUIRE_MESSAGE(d.ok(), d.error().message());
    expect_fresh(d.value(), s.at("made"));
  }
  SUBCASE("beneath an export, made") {
    Fd root(::open(s.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    auto d = resolve_destination_beneath(root.get(), "p/made", false, "mod/p/made", true);
    REQUIRE_MESSAGE(d.ok(), d.error().message());
    expect_fresh(d.value(), s.at("p/made"));
  }
  SUBCASE("an existing empty directory, local and beneath an export, with and without make_dir") {
    for (bool make_dir : {true, false}) {
      const std::string n = make_dir ? "e1" : "e2";
      REQUIRE(::mkdir(s.at(n).c_str(), 0755) == 0);
      auto l = resolve_destination_local(s.at(n + "/"), true, {}, make_dir);
      REQUIRE_MESSAGE(l.ok(), l.error().message());
      expect_fresh(l.value(), s.at(n));
      REQUIRE(::unlink(s.at(n + "/x").c_str()) == 0);
      Fd root(::open(s.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      auto b = resolve_destination_beneath(root.get(), n, true, "mod/" + n, make_dir);
      REQUIRE_MESSAGE(b.ok(), b.error().message());
      expect_fresh(b.value(), s.at(n));
    }
  }
  SUBCASE("an existing directory is not fresh: what stands in it is looked up") {
    s.file("there/x", "old");
    Fd root(::open(s.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    auto b = resolve_destination_beneath(root.get(), "there", false, "mod/there", true);
    auto l = resolve_destination_local(s.at("there/"), true, {}, true);
    for (auto* d : {&b, &l}) {
      REQUIRE(d->ok());
      CHECK_FALSE((*d)->empty);
      DestinationTree tree(d->value());
      PlacedEntry e = tree.place("x", S_IFREG, 0644, "peer");
      CHECK(e.old.type == S_IFREG);
      CHECK(e.old.size == 3);
    }
  }
}

TEST_CASE("a tree deeper than 256 levels is refused, naming where (each level holds a directory open)") {
  Scratch s;
  auto build = [&](const std::string& top, int levels) {
    std::string rel = top;
    for (int i = 0; i < levels; ++i) rel += "/d";
    s.file(rel + "/f");
  };
  build("ok", 255);    // the root and 255 directories beneath it: 256 open at the bottom
  build("deep", 256);  // one more
  auto walk = [&](const std::string& top) -> Status {
    ExpandOptions eo;
    eo.recursive = true;
    auto src = expand_source(AT_FDCWD, s.at(top), top, eo);
    if (!src.ok()) return src.error();
    for (auto& op : drain(src->files)) {
      auto f = op();
      if (!f.ok()) return f.error();
    }
    return {};
  };
  CHECK(walk("ok").ok());
  Status deep = walk("deep");
  REQUIRE_FALSE(deep.ok());
  CHECK(deep.error().code == ELOOP);
  CHECK_MESSAGE(deep.error().message().find("deeper than 256 levels") != std::string::npos, deep.error().message());
}

TEST_CASE("opening a source: refused outside the export, as a directory, or when swapped under it") {
  Scratch s;
  s.file("mod/f", "the file inspected");
  s.file("mod/other", "another inode");
  ::symlink("/etc/passwd", s.at("mod/out").c_str());
  Fd root(::open(s.at("mod").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto refused = [](const Result<SourceFile>& r, int code, const char* why) {
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == code);
    CHECK_MESSAGE(r.error().message().find(why) != std::string::npos, r.error().message());
  };
  refused(open_source_file(root.get(), "out", "mod/out", true), EPERM,
          "'mod/out' resolves outside the export (symlink or '..')");
  refused(open_source_file(AT_FDCWD, s.at("mod"), "mod", false), EISDIR, "'mod' is a directory");
  // the name swapped for another file between the probe and the open
  static std::string swap_from, swap_to;
  swap_from = s.at("mod/other");
  swap_to = s.at("mod/f");
  g_between_probe_and_open = [](const std::string&) { ::rename(swap_from.c_str(), swap_to.c_str()); };
  auto swapped = open_source_file(AT_FDCWD, s.at("mod/f"), "mod/f", false);
  g_between_probe_and_open = nullptr;
  refused(swapped, EAGAIN, "'mod/f' was replaced while being opened: not sent");
  CHECK(open_source_file(AT_FDCWD, s.at("mod/f"), "mod/f", false).ok());  // the name now settled
  s.file("mod/other", "a third inode");
  // the same past expand_source's own probe inside an export (a daemon's get)
  swap_from = s.at("mod/f");
  swap_to = s.at("mod/other");
  g_between_probe_and_open = [](const std::string&) { ::rename(swap_from.c_str(), swap_to.c_str()); };
  auto set = expand_source(root.get(), "other", "mod/other", true, false);
  g_between_probe_and_open = nullptr;
  REQUIRE(set.ok());
  auto got = drain(set->files);
  REQUIRE(got.size() == 1);
  refused(got[0](), EAGAIN, "'mod/other' was replaced while being opened: not sent");
  ::rename(s.at("mod/other").c_str(), s.at("mod/f").c_str());
  s.file("mod/other", "another inode");
  // -l / -D entries: a name the walk listed as special but now a file or directory
  refused(open_source_entry(root.get(), "f", "mod/f", true), EAGAIN, "was replaced while being listed");
  auto link = open_source_entry(root.get(), "out", "mod/out", true);
  REQUIRE(link.ok());
  CHECK(link->meta.link_target == "/etc/passwd");
}

TEST_CASE("chain: the parts' entries in order, each part built only when the one before is exhausted") {
  std::vector<size_t> built;
  // Part i holds i entries (part 0 none), each failing with errno 100 + i.
  SourceStream s = chain(4, [&built](size_t i) {
    built.push_back(i);
    std::vector<SourceOpener> v;
    for (size_t k = 0; k < i; ++k) v.push_back(failed_entry(make_error(static_cast<int>(100 + i), "part")));
    return stream_of(std::move(v));
  });
  CHECK(built.empty());  // nothing is built before the first entry is asked for
  std::vector<int> codes;
  while (auto e = s()) {
    codes.push_back((*e)().error().code);
    CHECK(built.back() == static_cast<size_t>(codes.back() - 100));  // the part after it is not built yet
  }
  CHECK(codes == std::vector<int>{101, 102, 102, 103, 103, 103});
  CHECK(built == std::vector<size_t>{0, 1, 2, 3});
  CHECK_FALSE(s());  // exhausted stays exhausted
  CHECK(built.size() == 4);
  CHECK_FALSE(chain(0, [&built](size_t) { built.push_back(99); return stream_of({}); })());
  CHECK(built.size() == 4);
}
