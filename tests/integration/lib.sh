# Shared by the integration suites (sourced, not run).

# writing_into DIR: a copy has a file of DIR's tree open for writing and not yet in place.
# A file that replaces an existing one is written as a named temp file (.NAME.rcp-XXXXXXXX);
# a new file is written unnamed (O_TMPFILE, lib/fs/tempfile.h), visible only as an open fd
# whose link reads "DIR/.../#INODE (deleted)" in some process's /proc/PID/fd. Used both to
# see that a copy is mid-file and, negated, that nothing is left behind: neither a temp
# name in the tree nor an unnamed file still held open by rcp or rcpd.
writing_into() {
  [ -n "$(find "$1" -name '.*.rcp-*' ! -name '*.rcp-partial' 2>/dev/null)" ] && return 0
  local d
  d=$(cd "$1" 2>/dev/null && pwd -P) || return 1
  # Only rcp's and rcpd's fds: scanning every process's took seconds per call in the TCG
  # guest, long enough for a slowed copy to finish before a suite saw it start.
  local p
  for p in $(pgrep -x 'rcpd?'); do
    find "/proc/$p/fd" -lname "$d/*#* (deleted)" -print -quit 2>/dev/null | grep -q . && return 0
  done
  return 1
}

# no_temps DIR: nothing of an unfinished copy in DIR's tree (see writing_into).
no_temps() { ! writing_into "$1"; }
