#!/usr/bin/env python3
"""Small JSON helper for demo/run.sh (so the demo needs no jq).

  fleetctl.py control   WINSIM_JSON              print the control plane's address
  fleetctl.py listeners WINSIM_JSON              print each host's listeners
  fleetctl.py tfvars    WINSIM_JSON FLEET_JSON   print terraform.tfvars.json for demo/main.tf
                                                 (hosts' instances, and each failover cluster instance)
  fleetctl.py credentials FLEET_JSON             print shell assignments of the MSSQLIFI_* credentials
  fleetctl.py first-key TFVARS_JSON              print the first HOST/INSTANCE key
  fleetctl.py show      CONTROL                  print every instance as the simulator sees it
  fleetctl.py revoke    CONTROL HOST SID         revoke SeManageVolumePrivilege from SID on HOST
  fleetctl.py sql-addr  WINSIM_JSON HOST INSTANCE  print an instance's SQL address
  fleetctl.py seed-report CONTROL HOST INSTANCE  print the CREATE DATABASE times the simulator modelled
  fleetctl.py check-discovered TFVARS_JSON       read the "discovered" output (JSON) on stdin; print it and
                                                 fail unless each host lists the inventory's instances
"""
import json
import shlex
import sys
import urllib.error
import urllib.request

RIGHT = "SeManageVolumePrivilege"


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def port_of(hostport):
    return int(hostport.rsplit(":", 1)[1])


def http(control, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        "http://%s%s" % (control, path), data=data, method=method,
        headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as e:
        sys.exit("control API %s %s answered %s: %s" % (method, path, e.code, e.read().decode(errors="replace")))
    except urllib.error.URLError as e:
        sys.exit("control API %s %s failed: %s (is winsim still running?)" % (method, path, e.reason))


def cmd_control(info_path):
    print(load(info_path)["control"])


def cmd_listeners(info_path):
    for h in load(info_path)["hosts"]:
        inst = ", ".join("%s sql=%s" % (i["name"], i["sql"]) for i in h["instances"])
        print("  %-6s %-10s winrm-http=%s  %s" % (h["name"], h["address"], h["winrm"], inst))


def cmd_tfvars(info_path, fleet_path):
    info = load(info_path)
    hosts = {}
    for h in info["hosts"]:
        hosts[h["name"]] = {
            "address": h["address"],
            "winrm_port": port_of(h["winrm"]),
            "instances": [i["name"] for i in h["instances"]],
        }
    # Each failover cluster instance: one resource, addressed by its first node, with
    # every node's address by the cluster's name of it (the computer name) and the
    # virtual name's address, where SQL Server answers.
    fleet = load(fleet_path)
    computer = {h["name"]: h.get("computer_name") or h["name"].upper() for h in fleet["hosts"]}
    fcis = {}
    for c in info.get("clusters") or []:
        for r in c["roles"]:
            first = c["nodes"][0]
            fcis[r["virtual_name"]] = {
                "host": hosts[first]["address"],
                "winrm_port": hosts[first]["winrm_port"],
                "instance": r["instance"],
                "sql_host": r["sql"].rsplit(":", 1)[0],
                "nodes": {computer[n]: hosts[n]["address"] for n in c["nodes"]},
            }
    json.dump({"ca_cert_file": info["ca_cert"], "hosts": hosts, "fcis": fcis}, sys.stdout, indent=2)
    print()


def cmd_credentials(fleet_path):
    fleet = load(fleet_path)
    host = fleet["hosts"][0]
    user = host["winrm"]["users"][0]
    login = host["instances"][0]["logins"][0]
    pairs = [("MSSQLIFI_WINRM_USERNAME", user["name"]),
             ("MSSQLIFI_WINRM_PASSWORD", user["password"]),
             ("MSSQLIFI_SQL_USERNAME", login["name"]),
             ("MSSQLIFI_SQL_PASSWORD", login["password"])]
    # The seed measurement's login: a dbcreator one, as the real-host suite takes it.
    seed = [l for l in host["instances"][0]["logins"] if l.get("dbcreator")]
    if seed:
        pairs += [("MSSQLIFI_ACC_SEED_SQL_USERNAME", seed[0]["name"]),
                  ("MSSQLIFI_ACC_SEED_SQL_PASSWORD", seed[0]["password"])]
    for k, v in pairs:
        print("%s=%s" % (k, shlex.quote(v)))


def cmd_sql_addr(info_path, host, instance):
    for h in load(info_path)["hosts"]:
        for i in h["instances"]:
            if h["name"] == host and i["name"] == instance:
                print(i["sql"])
                return
    sys.exit("winsim has no instance %s/%s" % (host, instance))


# The article the project started from: a 10 GB data file created in 2 min 13 s
# without IFI, in 13 s with it (internal/winsim/tsql/zeroing.go).
ARTICLE_MB, ARTICLE_OFF_S, ARTICLE_ON_S = 10240, 133, 13


def cmd_seed_report(control, host, instance):
    """The CREATE DATABASE statements the zeroing model charged, and the IFI ratio:
    at the demo's size, and the same model's at the article's size beside the
    article's."""
    snap = http(control, "GET", "/v1/hosts/%s" % host)
    ops, zeroing = [], None
    for inst in snap.get("instances") or []:
        if inst.get("name") == instance:
            ops = [o for o in inst.get("database_operations") or [] if o.get("statement") == "CREATE DATABASE"]
            zeroing = inst.get("zeroing")
    if not ops:
        sys.exit("the simulator recorded no CREATE DATABASE on %s/%s" % (host, instance))
    for o in ops:
        files = ", ".join("%s %d MB %s" % (f["type"], f["size_mb"], "zeroed" if f["zeroed"] else "not zeroed")
                          for f in o.get("files") or [])
        print("  CREATE DATABASE %s, IFI %s: %.2f s (%s)" % (
            o["database"], yn(o.get("ifi")), o["modelled_ms"] / 1000, files))
    off = [o for o in ops if not o.get("ifi")]
    on = [o for o in ops if o.get("ifi")]
    if off and on:
        off, on = off[-1], on[-1]
        data_mb = sum(f["size_mb"] for f in on["files"] if f["type"] == "data")
        log_mb = sum(f["size_mb"] for f in on["files"] if f["type"] == "log")
        print("  without IFI %.2f s, with IFI %.2f s: %.1fx faster (%d MB data file, %d MB log)" % (
            off["modelled_ms"] / 1000, on["modelled_ms"] / 1000,
            off["modelled_ms"] / on["modelled_ms"], data_mb, log_mb))
        if zeroing:
            # The same arithmetic at the demo's size must give what the simulator
            # charged, else the figures at the article's size are not the model's.
            for o, ifi in ((off, False), (on, True)):
                if abs(model_seconds(zeroing, data_mb, log_mb, ifi) * 1000 - o["modelled_ms"]) > 1:
                    sys.exit("seed-report: the simulator charged %.1f ms for IFI %s, its reported figures %s give %.1f ms" % (
                        o["modelled_ms"], yn(ifi), zeroing, model_seconds(zeroing, data_mb, log_mb, ifi) * 1000))
            scaled_off = model_seconds(zeroing, ARTICLE_MB, log_mb, False)
            scaled_on = model_seconds(zeroing, ARTICLE_MB, log_mb, True)
            print("  at the article's size (%d MB data file, same log): the model %.2f s and %.2f s, %.1fx faster; "
                  "the article measured %d s and %d s, %.1fx" % (
                      ARTICLE_MB, scaled_off, scaled_on, scaled_off / scaled_on,
                      ARTICLE_OFF_S, ARTICLE_ON_S, ARTICLE_OFF_S / ARTICLE_ON_S))
    print("  (modelled by the simulator, not measured: its clock runs faster than the article's, "
          "which changes the times and not the ratios; its log is zeroed with IFI too)")


def model_seconds(zeroing, data_mb, log_mb, ifi):
    """What the zeroing model the simulator reports (instances[].zeroing) charges
    CREATE DATABASE with a data file of data_mb and a log of log_mb, in seconds: the
    log is always zeroed; the data file is zeroed without IFI and, with it,
    allocated at ifi_mb_per_s (or for ifi_alloc_ms when that is set)."""
    zero = zeroing["zero_mb_per_s"]
    seconds = log_mb / zero
    if not ifi:
        return seconds + data_mb / zero
    if zeroing.get("ifi_alloc_ms") is not None:
        return seconds + zeroing["ifi_alloc_ms"] / 1000
    return seconds + data_mb / zeroing["ifi_mb_per_s"]


def cmd_first_key(tfvars_path):
    hosts = load(tfvars_path)["hosts"]
    name = sorted(hosts)[0]
    # The default instance of the first host: its address is what the resource's
    # "host" holds, but the keys are the simulator's names.
    print("%s/%s" % (name, hosts[name]["instances"][0]))


def yn(v):
    return {True: "on", False: "off", None: "?"}.get(v, str(v))


def cmd_show(control):
    hosts = http(control, "GET", "/v1/hosts")
    print("  %-22s %-9s %-19s %-14s %-12s %s" % (
        "HOST/INSTANCE", "SERVICE", "STARTED (UTC)", "RIGHT HELD BY", "IFI RUNNING", "NOTES"))
    for h in hosts:
        snap = http(control, "GET", "/v1/hosts/%s" % h["name"])
        for row in describe(h["name"], snap):
            print("  %-22s %-9s %-19s %-14s %-12s %s" % row)


def describe(hostname, snap):
    """Rows of (key, state, started, holder, ifi, notes) from GET /v1/hosts/{host}."""
    holders = {p["sid"] for p in (snap.get("rights") or {}).get(RIGHT) or []}
    services = {s["name"]: s for s in snap.get("services") or []}
    rows = []
    for inst in snap.get("instances") or []:
        svc = services.get(inst.get("service_name"), {})
        sid = svc.get("service_sid")
        started = (svc.get("process_start_time") or "-")[:19].replace("T", " ")
        if sid and sid in holders:
            holder = "service SID"
        elif svc.get("start_account_sid") in holders:
            holder = "start account"
        elif "S-1-5-32-544" in holders:
            holder = "Admins only"
        else:
            holder = "nobody"
        ifi = inst.get("instant_file_initialization")
        notes = []
        tde = [d["name"] for d in inst.get("databases") or [] if d.get("tde") and d["name"] != "tempdb"]
        if tde:
            notes.append("TDE (never instant): " + ", ".join(tde))
        if holder in ("service SID", "start account") and ifi is False:
            notes.append("granted, restart pending")
        if holder not in ("service SID", "start account") and ifi is True:
            notes.append("revoked, on until restart")
        rows.append(("%s/%s" % (hostname, inst.get("name")), svc.get("state", "?"), started,
                     holder, yn(ifi), "; ".join(notes)))
    return rows


def cmd_check_discovered(tfvars_path):
    """The discovered output (host => {instance: clustered}) against the inventory:
    a host's own instances, and on each node of a failover cluster its FCI's."""
    tfvars = load(tfvars_path)
    hosts, fcis = tfvars["hosts"], tfvars.get("fcis") or {}
    found = json.load(sys.stdin)
    ok = True
    for name in sorted(hosts):
        want = set(hosts[name]["instances"])
        for f in fcis.values():
            if name.lower() in (n.lower() for n in f["nodes"]):
                want.add(f["instance"])
        got = found.get(name) or {}
        print("  %-8s %s" % (name, ", ".join("%s%s" % (i, " (failover cluster instance)" if got[i] else "")
                                          for i in sorted(got)) or "none"))
        if set(got) != want:
            print("  %-8s the inventory lists %s" % ("", ", ".join(sorted(want)) or "none"))
            ok = False
    if not ok:
        sys.exit(1)
    print("  every host lists the instances of the inventory, and nothing else")


def cmd_revoke(control, host, sid):
    res = http(control, "POST", "/v1/hosts/%s/actions" % host,
               {"action": "revoke_right", "right": RIGHT, "sid": sid})
    print("  POST /v1/hosts/%s/actions revoke_right %s %s -> changed=%s" % (host, RIGHT, sid, res.get("changed")))


def main(argv):
    cmds = {
        "control": cmd_control, "listeners": cmd_listeners, "tfvars": cmd_tfvars,
        "sql-addr": cmd_sql_addr, "seed-report": cmd_seed_report,
        "credentials": cmd_credentials, "first-key": cmd_first_key, "show": cmd_show,
        "revoke": cmd_revoke, "check-discovered": cmd_check_discovered,
    }
    if len(argv) < 2 or argv[1] not in cmds:
        sys.exit(__doc__)
    cmds[argv[1]](*argv[2:])


if __name__ == "__main__":
    main(sys.argv)
