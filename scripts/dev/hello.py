# A sample data app, created by scripts/serve-dev.sh on its first run. The development pod
# (scripts/dev/app-pod.py) calls render() on every page view; query() runs SQL on this
# workspace's embedded DuckDB engine with the rights of the person viewing the app.
import html


def render(query):
    result = query("SELECT 'Hello from DuckDB' AS greeting, 40 + 2 AS answer, current_date AS today")
    head = "".join(f"<th>{html.escape(c['name'])}</th>" for c in result["columns"])
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in result["rows"])
    return f"<h1>hello</h1><p>A query through the service's gateway:</p><table><tr>{head}</tr>{rows}</table>"
