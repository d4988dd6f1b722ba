#!/usr/bin/env python3
"""The Kubernetes example (packaging/examples/k8s-indexed-job.yaml), parsed and checked.

No cluster here, so no API server validates it: the manifest is parsed with PyYAML
(Debian's python3-yaml) and checked against the batch/v1 Job fields it uses (a subset of
the OpenAPI schema: names, types, required fields, unknown keys refused) and against what
the sharded copy needs: an Indexed Job whose completions equal the N given to --shard,
the index taken from JOB_COMPLETION_INDEX, a restart policy a Job accepts, every volume
mount backed by a volume. Prints PASS/FAIL lines; exit status 1 if any check failed.

usage: k8s_manifest_check.py MANIFEST
"""
import re
import sys

import yaml

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# batch/v1 JobSpec, PodTemplateSpec, PodSpec and Container fields (Kubernetes 1.29): a key
# outside these is a typo the API server would refuse (strict field validation).
JOB_SPEC = {"activeDeadlineSeconds", "backoffLimit", "backoffLimitPerIndex", "completionMode", "completions",
            "manualSelector", "maxFailedIndexes", "parallelism", "podFailurePolicy", "podReplacementPolicy",
            "selector", "suspend", "template", "ttlSecondsAfterFinished"}
POD_SPEC = {"activeDeadlineSeconds", "affinity", "automountServiceAccountToken", "containers", "dnsConfig",
            "dnsPolicy", "enableServiceLinks", "hostIPC", "hostNetwork", "hostPID", "hostname", "imagePullSecrets",
            "initContainers", "nodeName", "nodeSelector", "priorityClassName", "restartPolicy", "schedulerName",
            "securityContext", "serviceAccountName", "subdomain", "terminationGracePeriodSeconds", "tolerations",
            "topologySpreadConstraints", "volumes"}
CONTAINER = {"args", "command", "env", "envFrom", "image", "imagePullPolicy", "lifecycle", "livenessProbe", "name",
             "ports", "readinessProbe", "resources", "securityContext", "stdin", "terminationMessagePath",
             "terminationMessagePolicy", "tty", "volumeMounts", "workingDir"}

results = []


def check(name, cond):
    results.append(bool(cond))
    print(("PASS " if cond else "FAIL ") + name)


def main(path):
    with open(path, encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    check("one YAML document", len(docs) == 1)
    job = docs[0]
    check("apiVersion batch/v1, kind Job", job.get("apiVersion") == "batch/v1" and job.get("kind") == "Job")
    name = job.get("metadata", {}).get("name", "")
    check(f"metadata.name '{name}' is a DNS-1123 subdomain (<= 63 for a Job's pod labels)",
          DNS1123_SUBDOMAIN.match(name) and len(name) <= 63)
    spec = job.get("spec", {})
    check("spec: only batch/v1 JobSpec fields", set(spec) <= JOB_SPEC)
    check("completionMode: Indexed (pods get JOB_COMPLETION_INDEX)", spec.get("completionMode") == "Indexed")
    n = spec.get("completions")
    check(f"completions is an integer >= 1 ({n})", isinstance(n, int) and not isinstance(n, bool) and n >= 1)
    par = spec.get("parallelism", 1)
    check(f"parallelism an integer in 1..completions ({par})", isinstance(par, int) and 1 <= par <= (n or 0))
    for k in ("backoffLimit", "backoffLimitPerIndex"):
        if k in spec:
            check(f"{k} an integer >= 0", isinstance(spec[k], int) and spec[k] >= 0)
    pod = spec.get("template", {}).get("spec", {})
    check("template.spec: only PodSpec fields", set(pod) <= POD_SPEC)
    check("restartPolicy Never or OnFailure (a Job refuses Always)", pod.get("restartPolicy") in ("Never", "OnFailure"))
    containers = pod.get("containers") or []
    check("one container at least", len(containers) >= 1)
    volumes = {v.get("name") for v in pod.get("volumes") or []}
    for c in containers:
        cname = c.get("name", "")
        check(f"container '{cname}': a DNS-1123 label, an image, only Container fields",
              DNS1123_LABEL.match(cname) and c.get("image") and set(c) <= CONTAINER)
        env = {e["name"]: e.get("value") for e in c.get("env") or []}
        check("  ... env values are strings", all(isinstance(v, str) for v in env.values()))
        cmd = " ".join((c.get("command") or []) + (c.get("args") or []))
        check("  ... runs rcp --shard with $JOB_COMPLETION_INDEX as I",
              re.search(r'rcp .*--shard "?\$JOB_COMPLETION_INDEX/', cmd) is not None)
        m = re.search(r'--shard "?\$JOB_COMPLETION_INDEX/(\$\{?(\w+)\}?|(\d+))', cmd)
        shards = None
        if m:
            shards = m.group(3) or env.get(m.group(2))
        check(f"  ... N in --shard ({shards}) equals completions ({n})", shards is not None and str(shards) == str(n))
        check("  ... with --files-from and --json (the report rcp-merge-reports reads)",
              "--files-from" in cmd and "--json" in cmd)
        for vm in c.get("volumeMounts") or []:
            check(f"  ... volumeMount '{vm.get('name')}' names a volume", vm.get("name") in volumes)
    return 0 if all(results) else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
