#!/usr/bin/env python3
"""The development app pod: what `apps.pod.command` runs in scripts/serve-dev.sh (the subprocess
launcher, docs/apps.md "Pods"), with nothing but Python's standard library.

A notebook app here is a Python file defining `render(query)`, which returns the page's HTML;
`query(sql)` runs SQL on the workspace's embedded engine through the service's query gateway
(POST <SVC_APP_CALLBACK_URL>/api/apps/query) with the viewer's rights, as the X-Svc-App-Token the
proxy handed this request says. The file is read again on every request, so a saved draft shows
on the next reload of an edit session. A file without `render` is shown as its source.

It is development tooling, not a sandbox: the app's code runs as this process (the subprocess
launcher's own caveat); production runs app pods with `apps.pod.launcher = "cluster"`.
"""
import html
import http.server
import json
import os
import traceback
import urllib.error
import urllib.request

ENV = os.environ
SOURCE = os.path.join(ENV["SVC_APP_SOURCE_DIR"], ENV["SVC_APP_NAME"] + ".py")
GATEWAY = ENV["SVC_APP_CALLBACK_URL"].rstrip("/") + "/api/apps/query"
MODE = ENV.get("SVC_APP_MODE", "run")


class QueryError(Exception):
    pass


def query_for(token):
    def query(sql, params=None):
        body = {"sql": sql, "engine": "embedded"}
        if params is not None:
            body["params"] = params
        req = urllib.request.Request(GATEWAY, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json", "x-svc-app-token": token})
        try:
            with urllib.request.urlopen(req, timeout=70) as res:
                return json.load(res)
        except urllib.error.HTTPError as err:
            detail = json.loads(err.read() or b"{}")
            raise QueryError(f"{err.code} {detail.get('error', '')}: {detail.get('message', '')}") from None
    return query


def page(title, body):
    banner = '<p style="background:#fff3cd;padding:.5em">edit session: save the draft in the console, then reload</p>' if MODE == "edit" else ""
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:.3em .6em}}</style>
</head><body>{banner}{body}</body></html>"""


class Pod(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        token = self.headers.get("x-svc-app-token", "")
        with open(SOURCE, encoding="utf-8") as f:
            source = f.read()
        status = 200
        try:
            scope = {"__name__": ENV["SVC_APP_NAME"]}
            exec(compile(source, SOURCE, "exec"), scope)
            render = scope.get("render")
            body = render(query_for(token)) if callable(render) else f"<pre>{html.escape(source)}</pre>"
        except Exception:
            status = 500
            body = f"<h1>the app failed</h1><pre>{html.escape(traceback.format_exc())}</pre>"
        data = page(ENV["SVC_APP_NAME"], body).encode()
        self.send_response(status)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):  # to pod.log, one line per request
        print(f"{self.command} {self.path} {args[1] if len(args) > 1 else ''}", flush=True)


if __name__ == "__main__":
    http.server.ThreadingHTTPServer((ENV["SVC_APP_HOST"], int(ENV["SVC_APP_PORT"])), Pod).serve_forever()
