// fsfloor: what the file system alone costs per small file, with no network
// and no rcp — the floor under any copy tool's files/s on this machine.
//
//   fsfloor read  DIR            open + fstat + read + close of every regular file in DIR
//   fsfloor write DIR N BYTES    N times: create a hidden temp file in DIR (O_EXCL), write
//                                BYTES, rename it onto its name, close — what rcp's sink
//                                does per file, less the network and the checksum
//   fsfloor write DIR N BYTES direct   the same, created under its name (O_EXCL), no rename:
//                                what tar x does, without a temp file
//   fsfloor write DIR N BYTES tmpfile  an O_TMPFILE file written, then linkat'ed to its
//                                name (AT_EMPTY_PATH as root, else via /proc/self/fd)
//
// One thread, plain syscalls. bench/run times it like the copies and prints
// files/s next to them, so the small-file rows can be read against what the
// sink's file-system work alone allows (see bench/README.md).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "fsfloor: %s: %s\n", what.c_str(), std::strerror(errno));
  return 1;
}

bool list(const char* dir, std::vector<std::string>& names) {
  DIR* d = ::opendir(dir);
  if (!d) return false;
  while (dirent* e = ::readdir(d))
    if (e->d_type == DT_REG) names.emplace_back(e->d_name);
  ::closedir(d);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const bool rd = argc == 3 && std::strcmp(argv[1], "read") == 0;
  const bool wr = (argc == 5 || argc == 6) && std::strcmp(argv[1], "write") == 0;
  const std::string how = argc == 6 ? argv[5] : "named";
  if (wr && how != "named" && how != "direct" && how != "tmpfile") return fail("mode " + how);
  if (!rd && !wr) {
    std::fprintf(stderr, "usage: fsfloor read DIR | fsfloor write DIR N BYTES\n");
    return 2;
  }
  int dir = ::open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return fail(argv[2]);
  std::vector<char> buf(1 << 20, 'x');
  struct timespec t0, t1;
  ::clock_gettime(CLOCK_MONOTONIC, &t0);
  size_t n = 0;
  if (rd) {
    std::vector<std::string> names;
    if (!list(argv[2], names)) return fail(argv[2]);
    for (const auto& name : names) {
      int fd = ::openat(dir, name.c_str(), O_RDONLY | O_CLOEXEC);
      struct stat st;
      if (fd < 0 || ::fstat(fd, &st) != 0) return fail(name);
      for (off_t off = 0; off < st.st_size;) {
        ssize_t r = ::pread(fd, buf.data(), buf.size(), off);
        if (r <= 0) return fail("read " + name);
        off += r;
      }
      ::close(fd);
    }
    n = names.size();
  } else {
    n = std::stoul(argv[3]);
    const size_t bytes = std::min<size_t>(std::stoul(argv[4]), buf.size());
    for (size_t i = 0; i < n; ++i) {
      const std::string name = "f" + std::to_string(i), tmp = "." + name + ".floor";
      if (how == "tmpfile") {
        int fd = ::openat(dir, ".", O_WRONLY | O_TMPFILE | O_CLOEXEC, 0644);
        if (fd < 0) return fail("O_TMPFILE");
        if (::pwrite(fd, buf.data(), bytes, 0) != static_cast<ssize_t>(bytes)) return fail("write " + name);
        if (::linkat(fd, "", dir, name.c_str(), AT_EMPTY_PATH) != 0) {
          const std::string proc = "/proc/self/fd/" + std::to_string(fd);
          if (::linkat(AT_FDCWD, proc.c_str(), dir, name.c_str(), AT_SYMLINK_FOLLOW) != 0) return fail("linkat " + name);
        }
        ::close(fd);
        continue;
      }
      const bool direct = how == "direct";
      int fd = ::openat(dir, (direct ? name : tmp).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0) return fail(tmp);
      if (::pwrite(fd, buf.data(), bytes, 0) != static_cast<ssize_t>(bytes)) return fail("write " + tmp);
      if (!direct && ::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) return fail("rename " + tmp);
      ::close(fd);
    }
  }
  ::clock_gettime(CLOCK_MONOTONIC, &t1);
  const double s = static_cast<double>(t1.tv_sec - t0.tv_sec) + static_cast<double>(t1.tv_nsec - t0.tv_nsec) / 1e9;
  std::printf("%s: %zu files in %.3f s: %.0f files/s, %.1f us/file\n", argv[1], n, s, static_cast<double>(n) / s,
              s * 1e6 / static_cast<double>(n));
  return 0;
}
