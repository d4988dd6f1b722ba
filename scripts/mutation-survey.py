#!/usr/bin/env python3
"""Mutation survey: does a test notice when a check is removed?

For each `if (COND) return FN(` in FILE (the return on the same line or the
next), COND is replaced by `false`, the build is rebuilt and the tests run;
the line is reported `caught` (a test failed), `MISSED` (all passed) or
`BUILD-FAIL` (the mutant does not compile, e.g. an init-statement). The file
is restored after each mutant and at exit. Run it in a separate worktree and
build directory: it rewrites FILE in place (and build nothing there while it
runs: that build gets the mutant of the moment).

  git worktree add /tmp/mut HEAD && cmake -S /tmp/mut -B /tmp/mut/b -G Ninja && ninja -C /tmp/mut/b
  scripts/mutation-survey.py /tmp/mut /tmp/mut/b lib/wire/rails.cc proto [LINE,LINE...]

Default build targets: unit_tests engine_tests, then both binaries run.
TARGETS='all' and TESTS='cd /tmp/mut/b && ctest -R "security|limits"' (a
shell command; non-zero exit = caught) survey against integration suites.
"""
import os
import re
import subprocess
import sys


def condition_span(line):
    """(start, end) of the text between the if's parentheses, or None."""
    start = line.index('if (') + 3
    depth = 0
    for j in range(start, len(line)):
        if line[j] == '(':
            depth += 1
        elif line[j] == ')':
            depth -= 1
            if depth == 0:
                return start + 1, j
    return None


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    root, build, rel, fn = sys.argv[1:5]
    only = {int(x) for x in sys.argv[5].split(',')} if len(sys.argv) > 5 else None
    targets = os.environ.get('TARGETS', 'unit_tests engine_tests')
    tests = os.environ.get('TESTS') or (f'timeout 300 {build}/tests/unit_tests >/dev/null 2>&1 && '
                                        f'timeout 120 {build}/tests/engine_tests >/dev/null 2>&1')
    path = os.path.join(root, rel)
    orig = open(path).read()
    lines = orig.split('\n')
    returns = re.compile(r'return ' + fn + r'\(')
    try:
        for i, line in enumerate(lines):
            if only and i + 1 not in only:
                continue
            if not re.match(r'^\s*if \(', line):
                continue
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ''
            same = re.search(r'\)\s*' + returns.pattern, line)
            below = line.rstrip().endswith(')') and returns.match(nxt)
            span = condition_span(line)
            if not (same or below) or not span:
                continue
            mutant = lines[:]
            mutant[i] = line[:span[0]] + 'false' + line[span[1]:]
            open(path, 'w').write('\n'.join(mutant))
            b = subprocess.run(f'cmake --build {build} --target {targets}', shell=True, capture_output=True)
            if b.returncode != 0:
                verdict = 'BUILD-FAIL'
            else:
                verdict = 'caught' if subprocess.run(tests, shell=True, capture_output=True).returncode else 'MISSED'
            print(f'{verdict:10} {rel}:{i + 1}: {line.strip()[:140]}', flush=True)
            open(path, 'w').write(orig)
    finally:
        open(path, 'w').write(orig)


if __name__ == '__main__':
    main()
