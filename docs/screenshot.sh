#!/usr/bin/env bash
# Makes docs/report-page.png, the picture of the HTML page in the README: profiles
# demos/quickstart.c (worker threads making small heap strings and taking one shared mutex),
# writes its page with `stallscope html`, and screenshots the page from its "Overview" on (the
# overview cards, CPU demand, the threads' timeline, the hottest functions) with headless Chromium
# (Debian: apt-get install chromium).
#
# Usage: docs/screenshot.sh [OUT.png]      (default docs/report-page.png)
#   STALLSCOPE=path/to/stallscope   use that build (default: cargo build --release, CARGO_TARGET_DIR honoured)
#   CHROMIUM=path/to/chromium       the browser (default: chromium, chromium-browser or google-chrome)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/docs/report-page.png}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac

if [ -z "${STALLSCOPE:-}" ]; then
    (cd "$root" && cargo build --release --quiet)
    STALLSCOPE="${CARGO_TARGET_DIR:-$root/target}/release/stallscope"
fi
case "$STALLSCOPE" in */*) STALLSCOPE="$(realpath "$STALLSCOPE")" ;; esac
if [ -z "${CHROMIUM:-}" ]; then
    for c in chromium chromium-browser google-chrome; do
        if command -v "$c" >/dev/null; then CHROMIUM="$c"; break; fi
    done
fi
[ -n "${CHROMIUM:-}" ] || { echo "no chromium found (apt-get install chromium, or set CHROMIUM)" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cc -O2 -g -pthread "$root/demos/quickstart.c" -o "$work/quickstart"
(cd "$work" && "$STALLSCOPE" run -q -o quickstart.prof -- ./quickstart >/dev/null)
"$STALLSCOPE" html "$work/quickstart.prof" -o "$work/page.html"

# The page is drawn by its script once loaded, so a URL fragment does not scroll it: a frame
# page moves the report up to its overview instead (which needs file access between the two).
cat > "$work/frame.html" <<'EOF'
<!doctype html><html><body style="margin:0">
<div style="width:1200px;height:900px;overflow:hidden;position:relative">
<iframe id="f" src="page.html" style="position:absolute;top:0;left:0;width:1200px;height:8000px;border:0"></iframe>
</div>
<script>
document.getElementById('f').addEventListener('load', function () {
  var d = this.contentDocument, t = d.getElementById('overview');
  this.style.top = (-(t.getBoundingClientRect().top + d.documentElement.scrollTop - 8)) + 'px';
});
</script>
</body></html>
EOF
"$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --allow-file-access-from-files \
    --virtual-time-budget=3000 --window-size=1200,900 --screenshot="$out" "file://$work/frame.html" \
    2>/dev/null >/dev/null
[ -s "$out" ] || { echo "no screenshot written" >&2; exit 1; }
echo "$out ($(stat -c %s "$out") bytes)"
