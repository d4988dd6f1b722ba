// rcp-sync: runs the replication job /etc/rcp/jobs/NAME.toml (rcp-sync(8)) —
// one rcp command line built by lib/cli/job — and, as a systemd generator,
// turns each job's `schedule` into its rcp-sync@NAME.timer's OnCalendar=.
#include <CLI/CLI.hpp>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "cli/job.h"

namespace {

using rcp::cli::Job;

/// The rcp to run: next to this program, preferring rcp.rdma (the packages'
/// name: /usr/bin/rcp may be rsh-client's through the alternatives).
std::string default_rcp() {
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = 0;
    std::string dir(self);
    dir.resize(dir.rfind('/'));
    for (const char* name : {"/rcp.rdma", "/rcp", "/../rcp/rcp"}) {
      std::string p = dir + name;
      if (::access(p.c_str(), X_OK) == 0) return p;
    }
  }
  return "/usr/bin/rcp.rdma";
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./:=@,+") ==
                        std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// systemd generator: for every DIR/NAME.toml with a schedule, writes
/// NORMAL/rcp-sync@NAME.timer.d/50-schedule.conf. A bad job file is reported
/// and skipped; the generator itself never fails the boot.
int generate(const std::string& jobs_dir, const std::string& out) {
  DIR* d = ::opendir(jobs_dir.c_str());
  if (!d) return 0;  // no jobs directory: nothing to generate
  int written = 0;
  while (dirent* e = ::readdir(d)) {
    std::string f = e->d_name;
    if (f.size() <= 5 || f.compare(f.size() - 5, 5, ".toml") != 0) continue;
    auto job = rcp::cli::load_job(jobs_dir + "/" + f);
    if (!job.ok()) {
      std::fprintf(stderr, "rcp-sync-generator: %s (skipped)\n", job.error().message().c_str());
      continue;
    }
    const std::string text = rcp::cli::timer_dropin(job.value(), jobs_dir + "/" + f);
    if (text.empty()) continue;
    const std::string dir = out + "/rcp-sync@" + job->name + ".timer.d";
    ::mkdir(dir.c_str(), 0755);
    std::ofstream o(dir + "/50-schedule.conf", std::ios::trunc);
    o << text;
    if (!o) {
      std::fprintf(stderr, "rcp-sync-generator: cannot write %s/50-schedule.conf\n", dir.c_str());
      continue;
    }
    ++written;
  }
  ::closedir(d);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string jobs_dir(rcp::cli::kJobsDir), rcp = default_rcp(), job_name;
  std::vector<std::string> generate_dirs;
  bool print = false;
  CLI::App app{"rcp-sync - run the rcp replication job /etc/rcp/jobs/NAME.toml (see rcp-sync(8))", "rcp-sync"};
  app.add_option("job", job_name, "NAME (DIR/NAME.toml) or the path of a job file")->type_name("NAME|FILE");
  app.add_option("--jobs-dir", jobs_dir, "where NAME.toml files are (default /etc/rcp/jobs)")->type_name("DIR");
  app.add_option("--rcp", rcp, "the rcp program to run (default: rcp.rdma next to rcp-sync)")->type_name("PATH");
  app.add_flag("-n,--print", print, "check the job and print the rcp command instead of running it");
  app.add_option("--generate", generate_dirs, "systemd generator mode: write timer schedules into DIR")
      ->type_name("DIR...")
      ->expected(1, 3);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "rcp-sync: %s\nTry 'rcp-sync --help' for more information.\n", e.what());
    return 2;
  }
  if (!generate_dirs.empty()) return generate(jobs_dir, generate_dirs[0]);
  if (job_name.empty()) {
    std::fprintf(stderr, "rcp-sync: which job? give NAME (from %s/NAME.toml) or a job file\n", jobs_dir.c_str());
    return 2;
  }
  auto job = rcp::cli::load_job(job_name, jobs_dir);
  if (!job.ok()) {
    std::fprintf(stderr, "rcp-sync: %s\n", job.error().message().c_str());
    return 1;  // rsync's "syntax or usage error"
  }
  const std::vector<std::string> args = rcp::cli::job_argv(job.value());
  std::string shown = shell_quote(rcp);
  for (const auto& a : args) shown += " " + shell_quote(a);
  if (print) {
    std::printf("%s\n", shown.c_str());
    return 0;
  }
  std::fprintf(stderr, "rcp-sync: job %s: %s\n", job->name.c_str(), shown.c_str());
  std::fflush(stderr);
  std::vector<char*> av;
  av.push_back(const_cast<char*>(rcp.c_str()));
  for (const auto& a : args) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  ::execv(rcp.c_str(), av.data());
  std::fprintf(stderr, "rcp-sync: cannot run %s: %s\n", rcp.c_str(), std::strerror(errno));
  return 127;
}
