"""The training side of SITS checkpoints (docs/checkpoints.md, ADR 0090). Python standard library only.

A TrainingJob with spec.checkpoint mounts one shared volume at $SITS_CHECKPOINT_DIR in every rank. When SITS wants a
checkpoint (every intervalSeconds, or before a preemption or a migration) it writes the cycle number on rank 0's pod
(annotation ai.sits2026.dev/checkpoint-request). Rank 0 asks for it, every rank saves, and rank 0 commits: it
patches its own pod with ai.sits2026.dev/checkpoint-commit = {"seq", "step", "ranks"}. SITS then snapshots the
volume at once (a CSI VolumeSnapshot) and keeps the newest ones as restore points; a restarted gang gets
$SITS_RESTORE_STEP.

In a torchrun script (rank 0 asks, everyone saves, rank 0 commits):

    seq = broadcast(sits_checkpoint.requested() if rank == 0 else None)          # e.g. dist.broadcast_object_list
    if seq: dcp.save(state, checkpoint_id=sits_checkpoint.path(step))            # every rank writes its shards
    if seq and rank == 0: sits_checkpoint.committed(step, shards=world_size, seq=seq)

The pod talks to the API server as its service account; that account needs `get` and `patch` on pods in its
namespace (docs/checkpoints.md has the Role). Overrides for tests and odd setups: SITS_KUBE_API (base URL),
SITS_KUBE_TOKEN_FILE, SITS_KUBE_CA_FILE.

Also a command line: `python3 sits_checkpoint.py requested` prints the pending cycle (or nothing),
`python3 sits_checkpoint.py committed STEP SHARDS [SEQ]` commits.
"""

import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request

REQUEST_ANNOTATION = "ai.sits2026.dev/checkpoint-request"
COMMIT_ANNOTATION = "ai.sits2026.dev/checkpoint-commit"
_SA = "/var/run/secrets/kubernetes.io/serviceaccount"

_last_ask = 0.0
_last_answer = None


class CheckpointError(RuntimeError):
    """The API server refused or could not be reached; the message says which call and why."""


def checkpoint_dir():
    """The shared checkpoint directory (the same path in every rank)."""
    return os.environ.get("SITS_CHECKPOINT_DIR", "/checkpoints")


def path(step):
    """Where the checkpoint of `step` goes (a folder for torch.distributed.checkpoint)."""
    return os.path.join(checkpoint_dir(), "step-%d" % int(step))


def restore_step():
    """The step a restarted gang loads (SITS_RESTORE_STEP), or None on a fresh start."""
    v = os.environ.get("SITS_RESTORE_STEP", "")
    return int(v) if v.isdigit() else None


def _base():
    url = os.environ.get("SITS_KUBE_API")
    if url:
        return url.rstrip("/")
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    if not host:
        raise CheckpointError("no API server: KUBERNETES_SERVICE_HOST is not set (not in a pod?) and SITS_KUBE_API is unset")
    if ":" in host:
        host = "[%s]" % host
    return "https://%s:%s" % (host, os.environ.get("KUBERNETES_SERVICE_PORT", "443"))


def _pod_url():
    base = _base()
    name = os.environ.get("SITS_POD_NAME")
    ns = os.environ.get("SITS_POD_NAMESPACE")
    if not name or not ns:
        raise CheckpointError("SITS_POD_NAME and SITS_POD_NAMESPACE must be set (the TrainingJob controller sets them from the downward API)")
    return "%s/api/v1/namespaces/%s/pods/%s" % (base, ns, name)


def _call(method, body=None):
    url = _pod_url()
    token_file = os.environ.get("SITS_KUBE_TOKEN_FILE", _SA + "/token")
    try:
        with open(token_file) as f:
            token = f.read().strip()
    except OSError as e:
        raise CheckpointError("service account token %s: %s" % (token_file, e.strerror))
    ctx = ssl.create_default_context(cafile=os.environ.get("SITS_KUBE_CA_FILE", _SA + "/ca.crt"))
    headers = {"Authorization": "Bearer " + token, "Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/merge-patch+json"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as res:
            return json.loads(res.read().decode())
    except urllib.error.HTTPError as e:
        detail = e.read().decode(errors="replace")
        try:
            detail = json.loads(detail).get("message", detail)
        except ValueError:
            pass
        raise CheckpointError("%s %s: %d %s" % (method, url, e.code, detail))
    except urllib.error.URLError as e:
        raise CheckpointError("%s %s: %s" % (method, url, e.reason))


def requested(min_interval=5.0):
    """Rank 0: the checkpoint cycle SITS asks for and nobody has committed yet, or None.

    Reads this pod from the API server at most every `min_interval` seconds (cheap to call every step).
    """
    global _last_ask, _last_answer
    now = time.monotonic()
    if _last_ask and now - _last_ask < min_interval:
        return _last_answer
    _last_ask = now
    ann = (_call("GET").get("metadata") or {}).get("annotations") or {}
    req = ann.get(REQUEST_ANNOTATION, "")
    seq = int(req) if req.isdigit() else None
    done = None
    try:
        done = json.loads(ann.get(COMMIT_ANNOTATION, "null"))
    except ValueError:
        pass
    if seq is not None and isinstance(done, dict) and done.get("seq") == seq:
        seq = None
    _last_answer = seq
    return seq


def committed(step, shards, seq=None):
    """Rank 0, after every writer has saved: tells SITS that checkpoint `step` is complete.

    `shards` is how many ranks wrote (an int) or which ones (a list of ranks). `seq` is the cycle answered
    (what requested() returned); by default the pending one is read from the pod.
    """
    global _last_answer
    ranks = len(set(shards)) if isinstance(shards, (list, tuple, set)) else int(shards)
    if seq is None:
        ann = (_call("GET").get("metadata") or {}).get("annotations") or {}
        req = ann.get(REQUEST_ANNOTATION, "")
        if not req.isdigit():
            raise CheckpointError("no checkpoint was requested (annotation %s is not set on this pod)" % REQUEST_ANNOTATION)
        seq = int(req)
    value = json.dumps({"seq": int(seq), "step": int(step), "ranks": ranks}, separators=(",", ":"))
    _call("PATCH", {"metadata": {"annotations": {COMMIT_ANNOTATION: value}}})
    _last_answer = None
    return int(seq)


def _main(argv):
    try:
        if len(argv) >= 1 and argv[0] == "requested":
            seq = requested(0)
            if seq is not None:
                print(seq)
            return 0
        if len(argv) in (3, 4) and argv[0] == "committed":
            print(committed(int(argv[1]), int(argv[2]), int(argv[3]) if len(argv) == 4 else None))
            return 0
    except CheckpointError as e:
        print("sits_checkpoint: %s" % e, file=sys.stderr)
        return 1
    except ValueError as e:
        print("sits_checkpoint: %s" % e, file=sys.stderr)
        return 2
    print("usage: sits_checkpoint.py requested | committed STEP SHARDS [SEQ]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
