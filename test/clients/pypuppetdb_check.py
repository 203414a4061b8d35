"""pypuppetdb (2.2.0 from Debian, or 3.1.0 first on PYTHONPATH) reads the fleet of site.pp from each nfv serve over
TLS (NFV_SERVERS: name=port,...), then deactivates a node of its own through db.command().

Prints one JSON line per check: {"server": name, "check": what, "ok": bool, "got": what was read}. Exits 0 when
every check ran on every serve (passed or not), 1 when one raised (that serve's other checks are skipped, the next
serve's still made): the test counts the checks and their outcomes. One process for every serve: Python's start
with requests and pypuppetdb is about 0.4 s of CPU. Knows nothing of nfv's code: the expected values follow from
site.pp and the order in which the test ran Puppet.
"""
import json
import os
import re
import sys
import traceback

import pypuppetdb
from pypuppetdb.QueryBuilder import AndOperator, EqualsOperator

DIR = os.environ["NFV_DIR"]
ACTIVE = os.environ["NFV_ACTIVE"].split(",")
PQL_MESSAGE = os.environ["NFV_PQL_MESSAGE"]


SERVER = None  # the name of the serve being checked


def check(what, ok, got=None):
    print(json.dumps({"server": SERVER, "check": what, "ok": bool(ok), "got": got}, default=str), flush=True)


def checks(port):
    db = pypuppetdb.connect(
        host="127.0.0.1",
        port=port,
        protocol="https",
        ssl_verify=os.environ["NFV_CA"],
        ssl_cert=os.environ["NFV_CERT"],
        ssl_key=os.environ["NFV_KEY"],
        timeout=30,
    )
    modern = hasattr(db, "pql")  # 3.x has pql() and a session; 2.2.0 has neither

    version = db.current_version()
    check("current_version is PuppetDB's API level", version == "7.12.1", version)

    names = sorted(n.name for n in db.nodes())
    check("nodes(): the active nodes", names == ACTIVE, names)

    statuses = {n.name: n.status for n in db.nodes(with_status=True)}
    expected = {
        "app1.example.com": "unchanged",
        "db1.example.com": "changed",
        "fail1.example.com": "failed",
        "noop1.example.com": "noop",
        "web1.example.com": "changed",
    }
    check("nodes(with_status=True): each node's status", statuses == expected, statuses)

    counted = {n.name: (n.events["failures"] if n.events else None) for n in db.nodes(with_status=True)}
    check("nodes(with_status=True): fail1 has one failed event", counted.get("fail1.example.com") == 1, counted)

    gone = db.node("gone1.example.com")
    check("node(gone1): deactivated", bool(gone.deactivated), gone.deactivated)
    check("node(gone1): its last report is known", bool(gone.latest_report_hash), gone.latest_report_hash)

    web = db.node("web1.example.com")
    check("node(web1): catalog environment", web.catalog_environment == "production", web.catalog_environment)
    check("node(web1).fact(nfv_role)", web.fact("nfv_role").value == "web", web.fact("nfv_role").value)
    os_fact = web.fact("os").value
    check("node(web1).fact(os) is a structured fact", isinstance(os_fact, dict) and "family" in os_fact, os_fact)
    node_facts = {f.name: f.value for f in web.facts()}
    check("node(web1).facts(): many facts", len(node_facts) > 30 and node_facts.get("nfv_dir") == DIR,
          len(node_facts))

    roles = sorted((f.node, f.value) for f in db.facts("nfv_role"))
    want = [(c, c.split("1.")[0]) for c in ACTIVE]
    check("facts(nfv_role): one per active node", roles == want, roles)
    webs = [f.node for f in db.facts("nfv_role", "web")]
    check("facts(nfv_role, web)", webs == ["web1.example.com"], webs)

    fact_names = db.fact_names()
    check("fact_names(): sorted, with the custom facts",
          fact_names == sorted(fact_names) and "nfv_role" in fact_names and "os" in fact_names, len(fact_names))

    exported_title = os.path.join(DIR, "exported-db1.example.com")
    exported = list(db.resources("File", exported_title))
    check("resources(File, title): the file db1 exported and web1 collected",
          sorted((r.node, r.exported, r.parameters.get("content")) for r in exported)
          == [("db1.example.com", True, "exported by db1.example.com\n"),
              ("web1.example.com", False, "exported by db1.example.com\n")],
          [(r.node, r.exported, r.parameters) for r in exported])
    files = sorted((r.node, r.name) for r in db.resources("File"))
    check("resources(File): every file of the fleet's catalogs",
          ("web1.example.com", os.path.join(DIR, "web1.conf")) in files
          and ("web1.example.com", exported_title) in files and len(files) == 8, files)
    notify = web.resource("Notify", "pql")
    check("node(web1).resource(Notify, pql): the puppetdb_query() answers",
          notify.parameters.get("message") == PQL_MESSAGE, notify.parameters)
    query = AndOperator()
    query.add(EqualsOperator("type", "File"))
    query.add(EqualsOperator("exported", True))
    check("resources(query=and type exported)",
          [r.node for r in db.resources(query=query)] == ["db1.example.com"], None)

    catalog = db.catalog("web1.example.com")
    check("catalog(web1): version is a string", isinstance(catalog.version, str), catalog.version)
    got = catalog.get_resource("Notify", "pql")
    check("catalog(web1).get_resource(Notify, pql)", got.parameters.get("message") == PQL_MESSAGE, got.parameters)
    befores = [(str(e.source), str(e.target)) for e in catalog.get_edges() if e.relationship == "before"]
    check("catalog(web1).get_edges(): the before edge",
          befores == [("Notify[pql]", "File[%s]" % os.path.join(DIR, "web1.conf"))], befores)
    contains = [e for e in catalog.get_edges() if e.relationship == "contains"]
    check("catalog(web1).get_edges(): containment edges", len(contains) >= 3, len(contains))
    catalogs = sorted(c.node for c in db.catalogs())
    # As in PuppetDB, /catalogs answers deactivated nodes' catalogs too.
    check("catalogs(): every node's", catalogs == sorted(ACTIVE + ["gone1.example.com"]), catalogs)

    reports = list(db.reports(query=EqualsOperator("certname", "fail1.example.com")))
    check("reports(fail1): one failed report, puppet 7.23.0",
          [(r.status, r.agent_version) for r in reports] == [("failed", "7.23.0")],
          [(r.status, r.agent_version) for r in reports])
    events = sorted((e.status, e.item["title"]) for e in reports[0].events())
    check("report(fail1).events(): the failure and the skip",
          events == [("failure", os.path.join(DIR, "missing", "fail1.conf")),
                     ("skipped", os.path.join(DIR, "fail1-after.conf"))], events)
    app = sorted((r.start, r.status) for r in db.reports(query=EqualsOperator("certname", "app1.example.com")))
    check("reports(app1): changed, then unchanged", [s for _, s in app] == ["changed", "unchanged"], app)
    noop = list(db.reports(query=EqualsOperator("certname", "noop1.example.com")))
    check("reports(noop1): a noop report", [r.status for r in noop] == ["noop"], [r.status for r in noop])
    ordered = list(db.reports(order_by='[{"field":"end_time","order":"desc"}]', limit=3, include_total=True))
    check("reports(order_by end_time desc, limit 3)",
          len(ordered) == 3 and ordered[0].node == "web1.example.com" and db.total >= 7,
          ([r.node for r in ordered], db.total))

    failures = [(e.node, e.item["type"], e.failed) for e in db.events(query=EqualsOperator("status", "failure"))]
    check("events(status=failure)", failures == [("fail1.example.com", "File", True)], failures)
    counts = {c["subject"]["title"]: (c["failures"], c["successes"], c["noops"], c["skips"])
              for c in db.event_counts(summarize_by="certname", query=EqualsOperator("latest_report?", True))}
    check("event_counts(latest_report?, certname)",
          counts.get("fail1.example.com") == (1, 0, 0, 1) and counts.get("noop1.example.com") == (0, 0, 1, 0)
          and "app1.example.com" not in counts, counts)

    environments = [e["name"] for e in db.environments()]
    check("environments()", environments == ["production"], environments)

    inventory = {i.node: i.facts.get("nfv_role") for i in db.inventory()}
    check("inventory(): every active node with its facts",
          sorted(inventory) == ACTIVE and inventory["db1.example.com"] == "db", inventory)

    factsets = {f["certname"]: f for f in db.factsets()}
    check("factsets(): one per active node", sorted(factsets) == ACTIVE, sorted(factsets))
    paths = [p["path"] for p in db.fact_paths(query=EqualsOperator("name", "os"))]
    check("fact_paths(os): leaves of the os fact", ["os", "family"] in paths, paths[:5])
    contents = sorted((c["certname"], c["value"])
                      for c in db.fact_contents(query=EqualsOperator("path", ["os", "family"])))
    check("fact_contents(path os.family)", [c for c, _ in contents] == ACTIVE, contents)

    status = db.status()
    check("status(): running", status.get("state") == "running", status)

    if modern:
        failed = [n.name for n in db.pql('nodes { latest_report_status = "failed" }')]
        check("pql(nodes failed)", failed == ["fail1.example.com"], failed)
        roles = sorted((f.node, f.value) for f in db.pql('facts { name = "nfv_role" }'))
        check("pql(facts)", roles == want, roles)
        projected = db.pql('resources[certname, title] { type = "Notify" order by certname }')
        check("pql(resources with a projection) answers rows",
              [r["certname"] for r in projected] == ["web1.example.com"], projected)
        edges = [e for e in db.edges(query=EqualsOperator("certname", "web1.example.com"))]
        check("edges(web1)", any(e.relationship == "before" for e in edges), len(edges))
        try:
            nodes = db.metric("puppetlabs.puppetdb.population:name=num-nodes")
        except Exception as e:  # an HTTP error is a failed check, not the end of the others
            nodes = repr(e)
        check("metric(num-nodes): the active nodes", nodes == {"Value": 5} or nodes == 5, nodes)

    # command(): the query form with pypuppetdb's checksum, the SHA-1 of Python's str(payload) (never the body's),
    # which PuppetDB 7 takes without comparing. A certname of its own per version: the fleet's checks stay as they are.
    gone = "pypuppetdb-%s.example.com" % ("3" if modern else "2")
    try:
        answer = db.command("deactivate node", {"certname": gone, "producer_timestamp": "2024-05-01T12:00:00.000Z"})
    except Exception as e:  # the server's words, then the other checks
        answer = getattr(getattr(e, "response", None), "text", None) or repr(e)
    uuid = answer.get("uuid") if isinstance(answer, dict) else None
    check("command(deactivate node): answered with a uuid",
          re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", str(uuid)), answer)
    inactive = sorted(n.name for n in db.nodes(query=EqualsOperator("node_state", "inactive")))
    check("command(deactivate node): the node is inactive in /pdb/query/v4/nodes", gone in inactive, inactive)
    try:
        deactivated = db.node(gone).deactivated
    except Exception as e:
        deactivated = repr(e)
    check("command(deactivate node): deactivated at its producer_timestamp",
          str(deactivated).startswith("2024-05-01 12:00:00"), deactivated)
    names = sorted(n.name for n in db.nodes())
    check("command(deactivate node): the active nodes unchanged", names == ACTIVE, names)


raised = False
for name, port in (s.split("=") for s in os.environ["NFV_SERVERS"].split(",")):
    SERVER = name
    try:
        checks(int(port))
    except Exception:
        print("on the %s:" % name, file=sys.stderr)
        traceback.print_exc()
        raised = True
sys.exit(1 if raised else 0)
