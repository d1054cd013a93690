# svc-output: waits for SIGTERM (sent by the kubelet once the main container ended), then prints
# the files of SVC_WORKDIR matching SVC_OUTPUT_PATTERNS (newline separated shell patterns, a
# superset of the runner's glob; the runner filters again) as a base64 tar.gz between the marker
# lines svc-output-begin and `svc-output-end <files> <bytes>` (svc-output-error <why> on failure).
# POSIX sh; run as `/bin/sh -c <this file's text>` in the helper image (busybox is enough).
collect() {
  cd "$SVC_WORKDIR" 2>/dev/null || { echo "svc-output-error cannot enter the working directory"; exit 0; }
  find . -type f > "$SVC_TMP/all" 2>/dev/null
  set --
  while IFS= read -r f; do
    r="${f#./}"
    keep=
    old_ifs=$IFS
    IFS='
'
    set -f
    for p in $SVC_OUTPUT_PATTERNS; do
      case "$r" in $p|$p/*) keep=1; break ;; esac
    done
    set +f
    IFS=$old_ifs
    [ -z "$keep" ] || set -- "$@" "./$r"
  done < "$SVC_TMP/all"
  if [ $# -eq 0 ]; then echo "svc-output-begin"; echo "svc-output-end 0 0"; exit 0; fi
  rm -f "$SVC_TMP/out.tar" "$SVC_TMP/out.tar.gz"
  if tar cf "$SVC_TMP/out.tar" "$@" 2>"$SVC_TMP/err" && gzip -f "$SVC_TMP/out.tar" 2>>"$SVC_TMP/err"; then
    echo "svc-output-begin"
    base64 "$SVC_TMP/out.tar.gz"
    echo "svc-output-end $# $(wc -c < "$SVC_TMP/out.tar.gz")"
  else
    echo "svc-output-error $(head -c 400 "$SVC_TMP/err" | tr '\n' ' ')"
  fi
  exit 0
}
trap collect TERM
while :; do sleep 3600 & wait $!; done
