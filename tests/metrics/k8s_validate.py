#!/usr/bin/python3
"""Checks Kubernetes manifests against the API's own types.

    /usr/bin/python3 tests/metrics/k8s_validate.py FILE.yaml...

Each document's kind and apiVersion must be a type of the Kubernetes
Python client (Debian's python3-kubernetes, whose models are generated
from the Kubernetes OpenAPI specification): every field must be one the
type has, with a value of its type (string, integer, boolean, map,
list, nested object), and the fields the API requires must be there.
A ServiceMonitor (the Prometheus Operator's CRD, which the client does
not know) is checked against the fields of its v1 API that loupe's
manifest uses. Prints each problem with its path; exits 1 if any.
"""
import sys

import yaml
from kubernetes import client

# kinds outside the core client, by the fields of their documented API
SERVICE_MONITOR = {
    "apiVersion": str, "kind": str, "metadata": "V1ObjectMeta",
    "spec": {
        "selector": "V1LabelSelector",
        "namespaceSelector": {"any": bool, "matchNames": [str]},
        "jobLabel": str, "targetLabels": [str], "podTargetLabels": [str],
        "sampleLimit": int,
        "endpoints": [{
            "port": str, "targetPort": "object", "path": str, "scheme": str,
            "interval": str, "scrapeTimeout": str, "honorLabels": bool,
            "honorTimestamps": bool, "params": {"*": [str]},
        }],
    },
}
REQUIRED_CRD = {("spec",), ("spec", "selector"), ("spec", "endpoints")}

problems = []


def model(name):
    return getattr(client, name, None)


def check(value, typ, path):
    """value against a client type name (str) or a structure of ours."""
    where = ".".join(path) or "(document)"
    if isinstance(typ, dict):
        if not isinstance(value, dict):
            problems.append(f"{where}: an object expected")
            return
        for k, v in value.items():
            if k in typ:
                check(v, typ[k], path + [k])
            elif "*" in typ:
                check(v, typ["*"], path + [k])
            else:
                problems.append(f"{where}: no field {k!r}")
        return
    if isinstance(typ, list):
        if not isinstance(value, list):
            problems.append(f"{where}: a list expected")
            return
        for i, v in enumerate(value):
            check(v, typ[0], path[:-1] + [f"{path[-1]}[{i}]"] if path else [f"[{i}]"])
        return
    if typ in (str, int, bool):
        typ = {str: "str", int: "int", bool: "bool"}[typ]
    if typ == "str":
        if not isinstance(value, str):
            problems.append(f"{where}: a string expected, not {value!r}")
    elif typ == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            problems.append(f"{where}: an integer expected, not {value!r}")
    elif typ == "bool":
        if not isinstance(value, bool):
            problems.append(f"{where}: true or false expected, not {value!r}")
    elif typ == "object":       # IntOrString, Quantity, raw JSON
        if not isinstance(value, (str, int)):
            problems.append(f"{where}: a string or an integer expected")
    elif typ.startswith("list["):
        if not isinstance(value, list):
            problems.append(f"{where}: a list expected")
            return
        for i, v in enumerate(value):
            check(v, typ[5:-1], path[:-1] + [f"{path[-1]}[{i}]"])
    elif typ.startswith("dict("):
        if not isinstance(value, dict):
            problems.append(f"{where}: a map expected")
            return
        inner = typ[5:-1].split(", ", 1)[1]
        for k, v in value.items():
            check(v, inner, path + [str(k)])
    else:
        cls = model(typ)
        if cls is None:
            problems.append(f"{where}: unknown type {typ}")
            return
        if not isinstance(value, dict):
            problems.append(f"{where}: a {typ} object expected")
            return
        by_json = {j: a for a, j in cls.attribute_map.items()}
        for k, v in value.items():
            if k not in by_json:
                problems.append(f"{where}: {typ} has no field {k!r}")
            else:
                check(v, cls.openapi_types[by_json[k]], path + [k])
        # the fields the API requires: the model refuses None for them
        for attr in cls.openapi_types:
            if cls.attribute_map[attr] in value:
                continue
            try:
                obj = cls.__new__(cls)
                obj.local_vars_configuration = client.Configuration()
                setattr(obj, attr, None)
            except ValueError:
                problems.append(f"{where}: {typ} needs field {cls.attribute_map[attr]!r}")
            except Exception:
                pass


def main():
    for name in sys.argv[1:]:
        with open(name) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        for i, doc in enumerate(docs):
            kind, api = doc.get("kind", ""), doc.get("apiVersion", "")
            label = f"{name}: document {i + 1} ({kind})"
            before = len(problems)
            if kind == "ServiceMonitor":
                if api != "monitoring.coreos.com/v1":
                    problems.append(f"apiVersion: {api!r}, not monitoring.coreos.com/v1")
                check(doc, SERVICE_MONITOR, [])
                for req in REQUIRED_CRD:
                    node = doc
                    for k in req:
                        node = node.get(k) if isinstance(node, dict) else None
                    if node is None:
                        problems.append(f"{'.'.join(req)}: required")
            else:
                version = api.split("/")[-1]
                typ = version.capitalize() + kind
                if model(typ) is None:
                    problems.append(f"no Kubernetes type {api} {kind}")
                else:
                    check(doc, typ, [])
            for p in problems[before:]:
                print(f"{label}: {p}")
            if len(problems) == before:
                print(f"{label}: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
