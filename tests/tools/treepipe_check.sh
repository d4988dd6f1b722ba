#!/bin/bash
# bench/treepipe (the floor row of bench/treefloor.sh) copies a tree whole, refuses what it
# must: a stream it did not write (a flipped byte), a name outside its directory, a stream
# cut short. Through a pipe, so no port is needed.
#   bash tests/tools/treepipe_check.sh PATH/TO/treepipe
set -u
tp=$1 fails=0
w=$(mktemp -d) && trap 'rm -rf "$w"' EXIT
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
mkdir -p "$w/src"
for i in $(seq 40); do
  head -c $((200 + i * 97)) /dev/urandom > "$w/src/f$i"
  chmod $((i % 2 ? 640 : 600)) "$w/src/f$i"
  touch -d "@$((1600000000 + i))" "$w/src/f$i"
done
"$tp" send "$w/src" - > "$w/stream" || bad "send"
size=$(stat -c %s "$w/stream")
for mode in atomic direct; do
  mkdir "$w/$mode"
  if "$tp" recv "$w/$mode" - "$mode" < "$w/stream" && diff -r "$w/src" "$w/$mode" > /dev/null &&
     [ "$(cd "$w/src" && stat -c '%n %a %Y' f* | sort)" = "$(cd "$w/$mode" && stat -c '%n %a %Y' f* | sort)" ]; then
    ok "$mode: 40 files, bytes, modes and mtimes"
  else bad "$mode: the copy differs"; fi
done
# refused: rc 1, the reason on stderr, FILES files (any: some), each of them whole
refused() {  # NAME STREAM REASON FILES_EXPECTED
  rm -rf "$w/r" && mkdir "$w/r"
  "$tp" recv "$w/r" - < "$2" 2> "$w/err"; rc=$?
  n=$(find "$w/r" -mindepth 1 | wc -l) whole=1
  for f in "$w"/r/*; do [ -e "$f" ] || continue; cmp -s "$f" "$w/src/${f##*/}" || whole=0; done
  if [ "$rc" = 1 ] && grep -q "$3" "$w/err" && [ "$whole" = 1 ] && { [ "$4" = any ] || [ "$n" = "$4" ]; }; then ok "$1"
  else bad "$1 (rc $rc, $n files, whole $whole: $(cat "$w/err"))"; fi
}
cp "$w/stream" "$w/flipped"   # the last byte of the last file's data (the end record is 48 bytes)
printf '\x5a' | dd of="$w/flipped" bs=1 seek=$((size - 49)) conv=notrunc status=none
[ "$(cmp "$w/stream" "$w/flipped" | wc -l)" = 1 ] || printf '\xa5' | dd of="$w/flipped" bs=1 seek=$((size - 49)) conv=notrunc status=none
refused "a flipped byte: digest mismatch, that file never appears" "$w/flipped" "digest mismatch" 39
cp "$w/stream" "$w/slash" && printf '/' | dd of="$w/slash" bs=1 seek=49 conv=notrunc status=none
refused "a name with a '/': refused before anything is created" "$w/slash" "names no file of DIR" 0
# a record named ".." (mode 0644, no data), then the end: host byte order, as treepipe writes
{ printf '\xa4\x01\0\0\x02\0\0\0'; head -c 40 /dev/zero; printf '..'; head -c 48 /dev/zero; } > "$w/dotdot"
refused "a record named '..': refused before anything is created" "$w/dotdot" "names no file of DIR" 0
{ printf '\xa4\x01\0\0\x01\0\0\0'; head -c 40 /dev/zero; printf '.'; head -c 48 /dev/zero; } > "$w/dot"
refused "a record named '.': refused before anything is created" "$w/dot" "names no file of DIR" 0
cp "$w/stream" "$w/huge" && printf '\xff\xff\xff\xff' | dd of="$w/huge" bs=1 seek=12 conv=notrunc status=none
refused "a record claiming a 16 TiB file: refused by its bounds" "$w/huge" "out of bounds" 0
cp "$w/stream" "$w/mode" && printf '\x01' | dd of="$w/mode" bs=1 seek=2 conv=notrunc status=none
refused "a record with mode bits beyond 07777: refused by its bounds" "$w/mode" "out of bounds" 0
head -c $((size / 2)) "$w/stream" > "$w/cut"
refused "a stream cut short: the files before the cut whole, no other" "$w/cut" "ended inside a record" any
[ "$fails" = 0 ] && echo "treepipe_check: all passed" || { echo "treepipe_check: $fails failed"; exit 1; }
