"""Puppetboard 4.2.6 (with pypuppetdb 3.1.0) over nfv serve: every page through Flask's test client.

Each serve of NFV_SERVERS (name=port,...) in turn, in one interpreter: Puppetboard and pypuppetdb are imported afresh
for each (their modules dropped from sys.modules, so Puppetboard reads its settings and builds its app and client
again), Flask, Jinja, requests and the rest once (about 0.7 s of CPU of the 1.3 s a process cost). Importing
puppetboard.app asks /pdb/meta/v1/version first and exits below 5.2.0, as Puppetboard does at start.
Prints one JSON line per check: {"server": name, "check": what, "ok": bool, "got": ...}. Exits 0 when every page
of every serve was asked (passed or not), 1 when a crawl itself raised. Knows nothing of nfv's code: expectations
follow from site.pp.
"""
import json
import os
import re
import sys
import traceback

DIR = os.environ["NFV_DIR"]
SERVER = None
NODES = ["app1.example.com", "db1.example.com", "fail1.example.com", "noop1.example.com", "web1.example.com"]


def check(what, ok, got=None):
    print(json.dumps({"server": SERVER, "check": what, "ok": bool(ok), "got": got}, default=str), flush=True)


def crawl():
    """Puppetboard started on the serve PUPPETDB_PORT names, then every page; False when it refused to start."""
    for name in [m for m in sys.modules if m.split(".")[0] in ("puppetboard", "pypuppetdb")]:
        del sys.modules[name]
    try:
        from puppetboard.app import app  # checks the PuppetDB version, as at start
    except SystemExit as e:
        check("Puppetboard starts (PuppetDB version accepted)", False, str(e))
        return False
    check("Puppetboard starts (PuppetDB version accepted)", True)
    pages(app.test_client())
    return True


def pages(client):
    """Every page of Puppetboard through `client`, checked."""

    def page(path, *wanted, absent=(), status=200):
        """GET path: the status and every wanted text (regular expressions) present, no absent one."""
        answer = client.get(path)
        text = answer.get_data(as_text=True)
        missing = [w for w in wanted if not re.search(w, text)]
        present = [a for a in absent if re.search(a, text)]
        ok = answer.status_code == status and not missing and not present
        check("%s answers %d with %s" % (path, status, ", ".join(wanted) or "a page"), ok,
              None if ok else {"status": answer.status_code, "missing": missing, "present": present,
                               "text": text[-1500:]})
        return text

    def data(path):
        """GET path answering JSON (the pages' tables): the parsed answer."""
        answer = client.get(path)
        text = answer.get_data(as_text=True)
        ok = answer.status_code == 200
        check("%s answers 200 with JSON" % path, ok, None if ok else text[-1500:])
        return json.loads(text) if answer.status_code == 200 else None

    def rows_text(table):
        return json.dumps(table.get("data", []) if isinstance(table, dict) else table)


    # The overview lists the nodes whose last run did something (app1's second run changed nothing).
    page("/", *[n for n in NODES if n != "app1.example.com"])
    page("/%2A/", "fail1.example.com")
    page("/nodes", *NODES, absent=["gone1.example.com"])
    page("/nodes?status=failed", "fail1.example.com", absent=["app1.example.com"])
    page("/node/web1.example.com", "web1.example.com")
    facts = data("/node/web1.example.com/facts/json")
    check("node web1's facts table has nfv_role = web", facts and re.search(r"nfv_role.*web", rows_text(facts)),
          facts and rows_text(facts)[:500])
    page("/facts", "nfv_role", "kernel")
    page("/fact/nfv_role", "nfv_role")
    values = data("/fact/nfv_role/json")
    check("fact nfv_role: one row per active node", values and len(values["data"]) == 5
          and all(n in rows_text(values) for n in NODES), values)
    page("/fact/nfv_role/db", "nfv_role")
    db = data("/fact/nfv_role/db/json")
    check("fact nfv_role = db: db1 only", db and len(db["data"]) == 1 and "db1.example.com" in rows_text(db), db)
    page("/reports", "Reports")
    reports = data("/reports/json?draw=1&start=0&length=20")
    # /reports answers the reports of deactivated nodes too (as PuppetDB does): gone1's counts.
    check("reports table: every report, newest first",
          reports and reports["recordsTotal"] == 7 and "web1.example.com" in json.dumps(reports["data"][0]),
          reports and (reports["recordsTotal"], rows_text(reports)[:800]))
    mine = data("/reports/app1.example.com/json?draw=1&start=0&length=20")
    check("app1's reports table: two runs", mine and mine["recordsTotal"] == 2, mine and mine["recordsTotal"])
    page("/reports/app1.example.com", "app1.example.com")
    hashes = re.findall(r"/report/fail1\.example\.com/([0-9a-f]{40})",
                        json.dumps(data("/reports/fail1.example.com/json?draw=1&start=0&length=20")))
    check("fail1's reports table links its report", len(set(hashes)) == 1, hashes)
    if hashes:
        page("/report/fail1.example.com/" + hashes[0], "fail1.example.com",
             re.escape(os.path.join(DIR, "missing", "fail1.conf")), "failure", r"skipped</td>\s*<td>1<")
    page("/failures", "fail1.example.com", absent=["web1.example.com"])
    page("/inventory", "Inventory")
    inventory = data("/inventory/json")
    check("inventory table: every active node with its role", inventory
          and all(n in rows_text(inventory) for n in NODES) and '"db"' in rows_text(inventory),
          inventory and rows_text(inventory)[:800])
    page("/catalogs", "Catalogs")
    catalogs = data("/catalogs/json?draw=1&start=0&length=20")
    check("catalogs table: every active node", catalogs and catalogs["recordsTotal"] == 5,
          catalogs and rows_text(catalogs)[:800])
    page("/catalog/web1.example.com", "web1.example.com", "Notify", re.escape(os.path.join(DIR, "web1.conf")))
    page("/catalogs/compare/web1.example.com...db1.example.com", "web1.example.com", "db1.example.com",
         re.escape(os.path.join(DIR, "db1.conf")))
    page("/radiator", "Failed", r">\s*1\s*<")
    page("/metrics", "num-nodes")
    page("/metric/puppetlabs.puppetdb.population:name=num-nodes", "num-nodes", r"\b5\b")
    chart = data("/daily_reports_chart.json")
    days = chart["result"] if chart else []
    check("daily chart: today's 7 reports by status (2 unchanged, 1 failed)",
          sum(d["changed"] + d["unchanged"] + d["failed"] for d in days) == 7
          and sum(d["failed"] for d in days) == 1 and sum(d["unchanged"] for d in days) == 2, days)
    node_chart = data("/daily_reports_chart.json?certname=app1.example.com")
    days = node_chart["result"] if node_chart else []
    check("daily chart of app1: one changed, one unchanged",
          sum(d["changed"] for d in days) == 1 and sum(d["unchanged"] for d in days) == 1, days)

    form = page("/query", "PQL")
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', form)
    check("the query page has a CSRF token", token, None)

    def ask(endpoint, query, *wanted, absent=()):
        answer = client.post("/query", data={"query": query, "endpoints": endpoint, "csrf_token": token.group(1)})
        text = answer.get_data(as_text=True)
        missing = [w for w in wanted if not re.search(w, text)]
        present = [a for a in absent if re.search(a, text)]
        ok = answer.status_code == 200 and not missing and not present
        check("query page, %s: %s" % (endpoint, query), ok,
              None if ok else {"status": answer.status_code, "missing": missing, "present": present,
                               "text": text[-1500:]})

    if token:
        ask("pql", 'nodes[certname] { latest_report_status = "failed" }', "fail1.example.com",
            absent=["web1.example.com"])
        ask("pql", 'facts[certname, value] { name = "nfv_role" and value = "db" }', "db1.example.com",
            absent=["web1.example.com"])
        ask("nodes", '["=", "certname", "noop1.example.com"]', "noop1.example.com", absent=["web1.example.com"])
        ask("resources", '["=", "exported", true]', "exported by db1.example.com")
        ask("facts", '["=", "name", "nfv_role"]', "web1.example.com")
        ask("factsets", '["=", "certname", "db1.example.com"]', "db1.example.com")
        ask("fact-paths", '["=", "name", "nfv_role"]', "nfv_role")
        ask("fact-contents", '["=", "path", ["nfv_role"]]', "web1.example.com")
        ask("reports", '["=", "status", "failed"]', "fail1.example.com", absent=["web1.example.com"])
        ask("events", '["=", "status", "failure"]', "fail1.example.com", absent=["web1.example.com"])
        ask("catalogs", '["=", "certname", "web1.example.com"]', "web1.example.com")
        ask("edges", '["=", "relationship", "before"]', "Notify")
        ask("environments", '["=", "name", "production"]', "production")
        ask("pql", "nodes { certname = }", "PQL parse error at line 1, column 20")


raised = False
for SERVER, port in (s.split("=") for s in os.environ["NFV_SERVERS"].split(",")):
    os.environ["PUPPETDB_PORT"] = port
    try:
        raised = not crawl() or raised
    except Exception:
        print("on the %s:" % SERVER, file=sys.stderr)
        traceback.print_exc()
        raised = True
sys.exit(1 if raised else 0)
