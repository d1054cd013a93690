# svc-input: copies SVC_INPUT_FILES (newline separated) from SVC_INPUT_DIR into SVC_WORKDIR.
# POSIX sh; run as `/bin/sh -c <this file's text>` in the helper image (busybox is enough).
set -eu
while IFS= read -r f; do
  [ -n "$f" ] || continue
  mkdir -p "$SVC_WORKDIR/$(dirname "$f")"
  cat "$SVC_INPUT_DIR/$f" > "$SVC_WORKDIR/$f"
done <<SVC_EOF
$SVC_INPUT_FILES
SVC_EOF
