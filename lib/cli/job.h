/// A scheduled replication job: /etc/rcp/jobs/NAME.toml, run by rcp-sync(8)
/// from the rcp-sync@NAME.service/.timer templates. The file names what to
/// copy and how; rcp-sync turns it into one rcp command line (job_argv) and
/// the systemd generator into the timer's schedule (timer_dropin). Pure: no
/// file is read here but by load_job.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace rcp::cli {

struct Job {
  std::string name;                    ///< NAME of NAME.toml: the unit instance
  std::vector<std::string> sources;    ///< rcp's SRC... (local paths or HOST:MODULE/PATH)
  std::string destination;             ///< rcp's DEST
  std::vector<std::string> options;    ///< rcp options, each one element ("--bwlimit=500M")
  std::string transport;               ///< "" (rcp's default), "auto", "rdma" or "tcp"
  std::string password_file;           ///< absolute; "" = none
  std::string schedule;                ///< systemd OnCalendar= expression; "" = the timer's (daily)
  bool json = true;                    ///< print the --json report (to the journal under systemd)
};

/// The default directory of job files.
constexpr std::string_view kJobsDir = "/etc/rcp/jobs";
/// Bounds (a job file is an admin's, but a typo should not make a huge argv).
constexpr size_t kMaxJobSources = 4096;
constexpr size_t kMaxJobOptions = 256;
constexpr size_t kMaxJobBytes = 1 << 20;

/// A job name: 1 to 64 of A-Z a-z 0-9 _ . -, not starting with '.' or '-'
/// (it becomes a file name and a systemd unit instance).
bool valid_job_name(std::string_view name);

/// Parses a job file's text; errors name file:line:column and the key.
Result<Job> parse_job(std::string_view text, const std::string& file, const std::string& name);

/// NAME (looked up as DIR/NAME.toml) or a path to a .toml file.
Result<Job> load_job(const std::string& name_or_path, const std::string& dir = std::string(kJobsDir));

/// rcp's arguments (without argv[0]): the options, then "--", the sources
/// and the destination, so no source can be read as an option.
std::vector<std::string> job_argv(const Job& job);

/// The systemd drop-in for rcp-sync@NAME.timer setting its schedule; ""
/// when the job has none (the template's daily schedule applies).
std::string timer_dropin(const Job& job, const std::string& file);

}  // namespace rcp::cli
