#!/usr/bin/env python3
"""Checks of rendered Kubernetes manifests (the output of `kubectl kustomize`), offline.

  k8s_check.py builtin RENDERED OUT   Writes the objects of built-in kinds to OUT, for
                                      kubernetes-validate; fails on a custom kind that
                                      deploy/schemas/ has no schema for.
  k8s_check.py crds RENDERED          Validates the custom-resource objects (ServiceMonitor)
                                      against deploy/schemas/<kind>.schema.json, then what a
                                      schema cannot say (the scrape timeout within the interval).
  k8s_check.py config RENDERED OUT    Writes the config.toml of the ConfigMap the gateway's
                                      Deployment mounts to OUT (for `agui-gateway check-config`).
  k8s_check.py consistency RENDERED   The objects agree with each other and with config.toml:
                                      selectors select the pods, ports exist and lead where they
                                      should, every ConfigMap and Secret reference resolves, the
                                      NetworkPolicies let the gateway reach its agents and journal.
  k8s_check.py secrets RENDERED       The gateway's secrets come from Secrets (the keys file, the
                                      headers_env variables); no credential in a ConfigMap.
  k8s_check.py no-secrets TOML...     No credential-looking header in these configuration files.
  k8s_check.py same-config A B        Two config.toml files hold the same settings.

Needs PyYAML and jsonschema (both in deploy/requirements.txt's venv).
"""

import json
import os
import re
import sys
import tomllib
from urllib.parse import urlsplit

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
GATEWAY = "agui-gateway"
CONFIG_KEY = "config.toml"
# A header whose name says credential must come from headers_env (the environment, fed by a
# Secret), never from `headers` in the configuration.
SECRET_HEADER = re.compile(r"key|token|secret|auth|cookie|pass", re.I)


class Failed(Exception):
    pass


def load(path):
    with open(path, encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    for d in docs:
        if not isinstance(d, dict) or "kind" not in d or "apiVersion" not in d:
            raise Failed(f"{path}: a document that is not a Kubernetes object: {str(d)[:80]}")
    return docs


def builtin(doc):
    group = doc["apiVersion"].rpartition("/")[0]
    return group == "" or "." not in group or group.endswith(".k8s.io")


def name_of(doc):
    return f"{doc['kind']}/{doc['metadata']['name']}"


def find(docs, kind, name=None):
    return [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]


def one(docs, kind, name):
    found = find(docs, kind, name)
    if len(found) != 1:
        raise Failed(f"expected one {kind} {name}, rendered {len(found)}")
    return found[0]


def selects(selector, labels):
    """A LabelSelector (matchLabels, matchExpressions) or a Service's plain map, against labels.
    An empty or missing selector selects nothing here: none of ours is meant to select all."""
    if not selector:
        return False
    if "matchLabels" in selector or "matchExpressions" in selector:
        match, expressions = selector.get("matchLabels", {}), selector.get("matchExpressions", [])
    else:
        match, expressions = selector, []
    if not match and not expressions:
        return False
    if any(labels.get(k) != v for k, v in match.items()):
        return False
    for expr in expressions:
        value, op = labels.get(expr["key"]), expr["operator"]
        if op == "In" and value not in expr["values"]:
            return False
        if op == "NotIn" and value in expr["values"]:
            return False
        if op == "Exists" and value is None:
            return False
        if op == "DoesNotExist" and value is not None:
            return False
    return True


def pod_labels(deployment):
    return deployment["spec"]["template"]["metadata"].get("labels", {})


def containers(deployment):
    return deployment["spec"]["template"]["spec"]["containers"]


def container_ports(deployment):
    """name -> containerPort, and the set of numbers."""
    named, numbers = {}, set()
    for c in containers(deployment):
        for p in c.get("ports", []):
            numbers.add(p["containerPort"])
            if "name" in p:
                named[p["name"]] = p["containerPort"]
    return named, numbers


def resolve_port(deployment, port):
    named, numbers = container_ports(deployment)
    if isinstance(port, int):
        return port if port in numbers else None
    return named.get(port)


def secret_data(secret):
    data = dict(secret.get("stringData", {}))
    data.update({k: None for k in secret.get("data", {}) if k not in data})
    return data


def mounted_config(docs, deployment):
    """The ConfigMap holding config.toml that the Deployment mounts, and the mount path."""
    pod = deployment["spec"]["template"]["spec"]
    for volume in pod.get("volumes", []):
        if "configMap" not in volume:
            continue
        cm = one(docs, "ConfigMap", volume["configMap"]["name"])
        if CONFIG_KEY in cm.get("data", {}):
            for c in containers(deployment):
                for mount in c.get("volumeMounts", []):
                    if mount["name"] == volume["name"]:
                        return cm, mount["mountPath"]
    raise Failed(f"Deployment/{deployment['metadata']['name']} mounts no ConfigMap with {CONFIG_KEY}")


def gateway(docs):
    return one(docs, "Deployment", GATEWAY)


def host_port(address):
    host, _, port = address.rpartition(":")
    return host, int(port)


# --- builtin ----------------------------------------------------------------------------------

def cmd_builtin(rendered, out):
    docs = load(rendered)
    custom = [d for d in docs if not builtin(d)]
    for d in custom:
        schema = os.path.join(HERE, "schemas", f"{d['kind'].lower()}.schema.json")
        if not os.path.exists(schema):
            raise Failed(f"{name_of(d)} ({d['apiVersion']}): no schema in deploy/schemas to check it")
    kept = [d for d in docs if builtin(d)]
    with open(out, "w", encoding="utf-8") as f:
        yaml.safe_dump_all(kept, f, sort_keys=False)
    print(f"{len(kept)} objects of built-in kinds, {len(custom)} custom ({', '.join(sorted({d['kind'] for d in custom}))})")


# --- crds -------------------------------------------------------------------------------------

DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def seconds(duration):
    m = DURATION.match(duration)
    if not m or not duration:
        raise Failed(f"{duration!r} is not a duration like 30s or 1m30s")
    h, mi, s = (int(x or 0) for x in m.groups())
    return h * 3600 + mi * 60 + s


def cmd_crds(rendered):
    docs = load(rendered)
    custom = [d for d in docs if not builtin(d)]
    if not find(docs, "ServiceMonitor"):
        raise Failed("no ServiceMonitor rendered")
    for d in custom:
        with open(os.path.join(HERE, "schemas", f"{d['kind'].lower()}.schema.json"), encoding="utf-8") as f:
            schema = json.load(f)
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(d), key=lambda e: list(e.path))
        if errors:
            raise Failed("; ".join(f"{name_of(d)} at {'/'.join(map(str, e.path)) or '(top)'}: {e.message}" for e in errors))
        for endpoint in d["spec"].get("endpoints", []):
            if "scrapeTimeout" in endpoint and seconds(endpoint["scrapeTimeout"]) > seconds(endpoint.get("interval", "30s")):
                raise Failed(f"{name_of(d)}: scrapeTimeout above the interval")
        print(f"{name_of(d)}: valid against deploy/schemas/{d['kind'].lower()}.schema.json")


# --- config -----------------------------------------------------------------------------------

def cmd_config(rendered, out):
    docs = load(rendered)
    cm, _ = mounted_config(docs, gateway(docs))
    with open(out, "w", encoding="utf-8") as f:
        f.write(cm["data"][CONFIG_KEY])
    print(f"ConfigMap/{cm['metadata']['name']} -> {out}")


def cmd_same_config(a, b):
    ta, tb = (tomllib.load(open(p, "rb")) for p in (a, b))
    if ta != tb:
        diff = sorted(set(flat(ta).items()) ^ set(flat(tb).items()))
        raise Failed(f"{a} and {b} differ: {diff[:6]}")
    print(f"{a} and {b}: the same settings")


def flat(table, prefix=""):
    out = {}
    for k, v in table.items():
        if isinstance(v, dict):
            out.update(flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = json.dumps(v, sort_keys=True)
    return out


# --- secrets ----------------------------------------------------------------------------------

# A value that only references a secret (`${NAME}`, `${file:PATH}`, with
# text around it such as "Bearer ") holds none itself.
REFERENCE = re.compile(r"^[^$]*\$\{(?:file:[^}]+|[A-Za-z0-9_]+)\}[^$]*$")


def config_headers_ok(config, where):
    """No credential-looking header in `headers` with a literal value: those go through
    headers_env or a ${NAME} / ${file:PATH} reference, and the Secret."""
    for name, agent in config.get("agents", {}).items():
        for header, value in agent.get("headers", {}).items():
            if SECRET_HEADER.search(header) and not REFERENCE.match(str(value)):
                raise Failed(
                    f"{where}: agents.{name}.headers has {header} with a literal value: "
                    "reference the Secret (${NAME}, ${file:PATH} or headers_env)"
                )


def cmd_no_secrets(*paths):
    for path in paths:
        config_headers_ok(tomllib.load(open(path, "rb")), path)
    print(f"no credential-looking header in {', '.join(paths)}")


def cmd_secrets(rendered):
    """The gateway reads its secrets from Secrets: the Secret agui-gateway mounted (the callers'
    keys file), every headers_env variable from a secretKeyRef; no credential in a ConfigMap."""
    docs = load(rendered)
    gw = gateway(docs)
    cm, _ = mounted_config(docs, gw)
    config = tomllib.loads(cm["data"][CONFIG_KEY])
    c = containers(gw)[0]
    env = {e["name"]: e for e in c.get("env", [])}
    secret_volumes = {v["name"]: v["secret"]["secretName"] for v in gw["spec"]["template"]["spec"].get("volumes", []) if "secret" in v}
    config_headers_ok(config, f"ConfigMap/{cm['metadata']['name']}")
    for name, agent in config.get("agents", {}).items():
        for header, var in agent.get("headers_env", {}).items():
            if "secretKeyRef" not in env.get(var, {}).get("valueFrom", {}):
                raise Failed(f"agents.{name}.headers_env {header}: {var} is not set from a Secret in {name_of(gw)}")
    keys_file = config.get("auth", {}).get("api_keys_file")
    if keys_file:
        mounts = [m for m in c.get("volumeMounts", []) if m["name"] in secret_volumes and keys_file.startswith(m["mountPath"].rstrip("/") + "/")]
        if not mounts:
            raise Failed(f"auth.api_keys_file {keys_file} is not in a mounted Secret")
    if GATEWAY not in secret_volumes.values():
        raise Failed(f"{name_of(gw)} does not mount the Secret {GATEWAY}")
    for cmap in find(docs, "ConfigMap"):
        for key, value in cmap.get("data", {}).items():
            if re.search(r"://[^/\s:@]*:[^@\s]+@", value) or re.search(r"(?im)^\s*[\w.-]*(password|secret|token)\s*=", value):
                raise Failed(f"{name_of(cmap)} key {key}: looks like a credential; keep it in a Secret")
    print(f"{name_of(gw)} mounts the Secret {GATEWAY}; headers_env variables and the API keys file come from Secrets; no credential in a ConfigMap")


# --- consistency ------------------------------------------------------------------------------

def cmd_consistency(rendered):
    docs = load(rendered)
    notes = []
    ok = notes.append
    deployments = find(docs, "Deployment")
    gw = gateway(docs)
    labels = pod_labels(gw)

    # Each Deployment selects its own pods.
    for d in deployments:
        if not selects(d["spec"]["selector"], pod_labels(d)):
            raise Failed(f"{name_of(d)}: its selector does not match its pod template's labels")
    if "replicas" in gw["spec"] and find(docs, "HorizontalPodAutoscaler"):
        raise Failed(f"{name_of(gw)} sets replicas while an HPA scales it: every apply would reset the count")
    ok("every Deployment's selector matches its pods")

    # Services: each selects exactly one Deployment's pods, and its ports exist on them.
    for svc in find(docs, "Service"):
        owners = [d for d in deployments if selects(svc["spec"].get("selector"), pod_labels(d))]
        if len(owners) != 1:
            raise Failed(f"{name_of(svc)} selects the pods of {len(owners)} Deployments")
        for port in svc["spec"]["ports"]:
            target = port.get("targetPort", port["port"])
            if resolve_port(owners[0], target) is None:
                raise Failed(f"{name_of(svc)} port {port.get('name', port['port'])}: targetPort {target} is not a port of {name_of(owners[0])}")
    ok("every Service selects one Deployment's pods, on ports they have")

    # config.toml and the container.
    cm, mount_path = mounted_config(docs, gw)
    config = tomllib.loads(cm["data"][CONFIG_KEY])
    c = containers(gw)[0]
    args = c.get("args", [])
    if "--config" not in args or args[args.index("--config") + 1] != f"{mount_path}/{CONFIG_KEY}":
        raise Failed(f"{name_of(gw)}: args {args} do not name {mount_path}/{CONFIG_KEY}")
    named, _ = container_ports(gw)
    listen = host_port(config["listen"])[1]
    admin = host_port(config["admin_listen"])[1] if "admin_listen" in config else None
    if named.get("http") != listen:
        raise Failed(f"config listen port {listen} is not the container port http ({named.get('http')})")
    if admin is None or named.get("admin") != admin:
        raise Failed(f"config admin_listen port {admin} is not the container port admin ({named.get('admin')})")
    for probe in ("readinessProbe", "livenessProbe"):
        port = c[probe]["httpGet"]["port"]
        if resolve_port(gw, port) != admin:
            raise Failed(f"{probe} is not on the admin port")
    grace = gw["spec"]["template"]["spec"].get("terminationGracePeriodSeconds", 30)
    pause = c.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
    if config.get("shutdown_grace_secs", 10) + pause >= grace:
        raise Failed(f"shutdown_grace_secs + preStop ({config.get('shutdown_grace_secs', 10)} + {pause}) not below terminationGracePeriodSeconds ({grace})")
    ok("config.toml's listen/admin ports are the container's http/admin ports; probes on admin; the drain fits the grace period")

    # The public Service keeps the admin port off; a separate Service exposes it for scraping.
    public = one(docs, "Service", GATEWAY)
    for port in public["spec"]["ports"]:
        if resolve_port(gw, port.get("targetPort", port["port"])) == admin:
            raise Failed(f"{name_of(public)} exposes the admin port")
    ok("the public Service does not expose the admin port")

    # ServiceMonitor -> Service -> admin port, /metrics.
    monitors = find(docs, "ServiceMonitor")
    for sm in monitors:
        chosen = [s for s in find(docs, "Service") if selects(sm["spec"]["selector"], s["metadata"].get("labels", {}))]
        if not chosen:
            raise Failed(f"{name_of(sm)} selects no Service")
        for svc in chosen:
            for ep in sm["spec"]["endpoints"]:
                ports = [p for p in svc["spec"]["ports"] if p.get("name") == ep["port"]]
                if not ports:
                    raise Failed(f"{name_of(sm)}: port {ep['port']} is not a port of {name_of(svc)}")
                if resolve_port(gw, ports[0].get("targetPort", ports[0]["port"])) != admin:
                    raise Failed(f"{name_of(sm)}: port {ep['port']} of {name_of(svc)} is not the admin port")
                if ep.get("path", "/metrics") != "/metrics":
                    raise Failed(f"{name_of(sm)}: path {ep.get('path')} is not /metrics")
    ok(f"{len(monitors)} ServiceMonitor(s): each selects a Service whose named port leads to the admin port, path /metrics")

    # HPA and PDB.
    for hpa in find(docs, "HorizontalPodAutoscaler"):
        ref = hpa["spec"]["scaleTargetRef"]
        if ref["kind"] != "Deployment" or ref.get("apiVersion") != gw["apiVersion"] or ref["name"] != gw["metadata"]["name"]:
            raise Failed(f"{name_of(hpa)} targets {ref}, not {name_of(gw)}")
        down = hpa["spec"].get("behavior", {}).get("scaleDown", {})
        if down.get("stabilizationWindowSeconds", 300) < 300 or not down.get("policies"):
            raise Failed(f"{name_of(hpa)}: no slow scale-down (a window of 5 minutes or more and policies)")
    for pdb in find(docs, "PodDisruptionBudget"):
        if not selects(pdb["spec"]["selector"], labels):
            raise Failed(f"{name_of(pdb)} does not select the gateway's pods")
    for tsc in gw["spec"]["template"]["spec"].get("topologySpreadConstraints", []):
        if not selects(tsc["labelSelector"], labels):
            raise Failed(f"{name_of(gw)}: a topology spread constraint that does not select its own pods")
    ok("the HPA scales the gateway's Deployment and scales down slowly; the PDB and spread select its pods")

    # NetworkPolicies: each selects some Deployment's pods; named ports exist; admin only from a
    # named namespace; the gateway may reach DNS, every agent's port, and the journal if any.
    policies = find(docs, "NetworkPolicy")
    gateway_policies = []
    for np in policies:
        owners = [d for d in deployments if selects(np["spec"]["podSelector"], pod_labels(d))]
        if not owners:
            raise Failed(f"{name_of(np)} selects no Deployment's pods")
        for rule in np["spec"].get("ingress", []):
            for port in rule.get("ports", []):
                if all(resolve_port(d, port["port"]) is None for d in owners):
                    raise Failed(f"{name_of(np)}: ingress port {port['port']} is not a port of its pods")
                if gw in owners and resolve_port(gw, port["port"]) == admin:
                    for peer in rule.get("from", []):
                        if not peer.get("namespaceSelector", {}).get("matchLabels"):
                            raise Failed(f"{name_of(np)}: the admin port is open to {peer}, not to one namespace")
        if gw in owners:
            gateway_policies.append(np)
    if not any(selects(np["spec"]["podSelector"], labels) and "Ingress" in np["spec"].get("policyTypes", []) for np in policies):
        raise Failed("no NetworkPolicy limits ingress to the gateway's pods")
    egress = [rule for np in gateway_policies for rule in np["spec"].get("egress", [])]

    def allowed(port, to=None):
        for rule in egress:
            if rule.get("ports") and not any(p["port"] == port for p in rule["ports"]):
                continue
            if to is None or not rule.get("to"):
                return True
            # A peer in the same namespace: a podSelector without a namespaceSelector.
            if any(selects(peer.get("podSelector"), to) and "namespaceSelector" not in peer for peer in rule["to"]):
                return True
        return False

    if not allowed(53):
        raise Failed("the gateway's pods may not reach DNS (port 53)")
    for name, agent in config.get("agents", {}).items():
        url = urlsplit(agent["upstream"])
        port = url.port or (443 if url.scheme == "https" else 80)
        if not allowed(port):
            raise Failed(f"agents.{name} ({agent['upstream']}): no egress rule for port {port}")
    ok(f"{len(policies)} NetworkPolicies select pods and ports that exist; the admin port only from a namespace; egress to DNS and each agent's port")

    # References: every Secret and ConfigMap the pods use is rendered, with the keys they read.
    for d in deployments:
        pod = d["spec"]["template"]["spec"]
        for ctr in pod["containers"]:
            names = [e["name"] for e in ctr.get("env", [])]
            if len(names) != len(set(names)):
                raise Failed(f"{name_of(d)}: container {ctr['name']} sets an environment variable twice: {names}")
        for volume in pod.get("volumes", []):
            if "secret" in volume:
                secret = one(docs, "Secret", volume["secret"]["secretName"])
                for item in volume["secret"].get("items", []):
                    if item["key"] not in secret_data(secret):
                        raise Failed(f"{name_of(d)}: volume {volume['name']} reads {item['key']}, not in {name_of(secret)}")
            if "configMap" in volume:
                cmap = one(docs, "ConfigMap", volume["configMap"]["name"])
                for item in volume["configMap"].get("items", []):
                    if item["key"] not in cmap.get("data", {}):
                        raise Failed(f"{name_of(d)}: volume {volume['name']} reads {item['key']}, not in {name_of(cmap)}")
        for ctr in pod["containers"]:
            for env in ctr.get("env", []):
                ref = env.get("valueFrom", {})
                if "secretKeyRef" in ref:
                    secret = one(docs, "Secret", ref["secretKeyRef"]["name"])
                    if ref["secretKeyRef"]["key"] not in secret_data(secret):
                        raise Failed(f"{name_of(d)}: env {env['name']} reads {ref['secretKeyRef']['key']}, not in {name_of(secret)}")
                if "configMapKeyRef" in ref:
                    cmap = one(docs, "ConfigMap", ref["configMapKeyRef"]["name"])
                    if ref["configMapKeyRef"]["key"] not in cmap.get("data", {}):
                        raise Failed(f"{name_of(d)}: env {env['name']} reads a key not in {name_of(cmap)}")
    ok("every Secret and ConfigMap reference resolves to a rendered object and key")

    env = {e["name"]: e for e in c.get("env", [])}

    # The shared journal, when the Deployment reads one: its URL names a rendered Service (or an
    # outside host), the password matches Redis's own, and the gateway may reach it.
    journal = env.get("AGUI_GATEWAY_JOURNAL")
    if journal:
        ref = journal["valueFrom"]["secretKeyRef"]
        secret = one(docs, "Secret", ref["name"])
        url = urlsplit(secret_data(secret)[ref["key"]])
        if url.scheme not in ("redis", "rediss"):
            raise Failed(f"{name_of(secret)} {ref['key']} is not a redis:// URL")
        services = find(docs, "Service", url.hostname)
        if services:
            svc = services[0]
            redis = [d for d in deployments if selects(svc["spec"]["selector"], pod_labels(d))][0]
            port = [p for p in svc["spec"]["ports"] if p["port"] == (url.port or 6379)]
            if not port:
                raise Failed(f"{name_of(svc)} has no port {url.port or 6379}")
            pod_port = resolve_port(redis, port[0].get("targetPort", port[0]["port"]))
            if not allowed(pod_port, to=pod_labels(redis)):
                raise Failed(f"no NetworkPolicy lets the gateway reach {name_of(redis)} on {pod_port}")
            password = secret_data(secret).get("password")
            if password is not None and url.password != password:
                raise Failed(f"{name_of(secret)}: journal-url's password is not the password Redis is given")
            redis_ingress = [np for np in policies if selects(np["spec"]["podSelector"], pod_labels(redis)) and "Ingress" in np["spec"].get("policyTypes", [])]
            if not redis_ingress:
                raise Failed(f"no NetworkPolicy limits who reaches {name_of(redis)}")
        ok(f"the journal ({url.scheme}://{url.hostname}:{url.port}) is reachable, its password consistent")
    for line in notes:
        print(line)


def main(argv):
    commands = {
        "builtin": (cmd_builtin, 2),
        "crds": (cmd_crds, 1),
        "config": (cmd_config, 2),
        "consistency": (cmd_consistency, 1),
        "secrets": (cmd_secrets, 1),
        "same-config": (cmd_same_config, 2),
    }
    commands["no-secrets"] = (cmd_no_secrets, max(len(argv) - 2, 1))
    if len(argv) < 2 or argv[1] not in commands or len(argv) - 2 != commands[argv[1]][1]:
        sys.exit(__doc__)
    try:
        commands[argv[1]][0](*argv[2:])
    except Failed as e:
        sys.exit(f"{argv[1]}: {e}")


if __name__ == "__main__":
    main(sys.argv)
