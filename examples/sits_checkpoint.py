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

A save can fail (the shared volume is full: ENOSPC). Rank 0 then says so with failed(), and SITS ends the cycle at
once with a condition naming the volume (VolumeFull) instead of waiting for commitTimeoutSeconds; the last good
checkpoint stays the restore point. `saving()` does both: it commits when the block succeeds and reports the error
when it raises (torch.distributed.checkpoint raises on every rank when any rank fails), and training goes on:

    if seq:
        with sits_checkpoint.saving(step, seq=seq, shards=world_size, rank=rank):
            dcp.save(state, checkpoint_id=sits_checkpoint.path(step))

The pod talks to the API server as its service account; that account needs `get` and `patch` on pods in its
namespace (docs/checkpoints.md has the Role). Overrides for tests and odd setups: SITS_KUBE_API (base URL),
SITS_KUBE_TOKEN_FILE, SITS_KUBE_CA_FILE.

Also a command line: `python3 sits_checkpoint.py requested` prints the pending cycle (or nothing),
`python3 sits_checkpoint.py committed STEP SHARDS [SEQ]` commits, `python3 sits_checkpoint.py failed STEP MESSAGE
[SEQ]` reports a failed save.
"""

import errno
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


def _pending_seq():
    ann = (_call("GET").get("metadata") or {}).get("annotations") or {}
    req = ann.get(REQUEST_ANNOTATION, "")
    if not req.isdigit():
        raise CheckpointError("no checkpoint was requested (annotation %s is not set on this pod)" % REQUEST_ANNOTATION)
    return int(req)


def committed(step, shards, seq=None):
    """Rank 0, after every writer has saved: tells SITS that checkpoint `step` is complete.

    `shards` is how many ranks wrote (an int) or which ones (a list of ranks). `seq` is the cycle answered
    (what requested() returned); by default the pending one is read from the pod.
    """
    global _last_answer
    ranks = len(set(shards)) if isinstance(shards, (list, tuple, set)) else int(shards)
    if seq is None:
        seq = _pending_seq()
    value = json.dumps({"seq": int(seq), "step": int(step), "ranks": ranks}, separators=(",", ":"))
    _call("PATCH", {"metadata": {"annotations": {COMMIT_ANNOTATION: value}}})
    _last_answer = None
    return int(seq)


def failed(step, error, seq=None):
    """Rank 0, when the save of checkpoint `step` failed: tells SITS it will not come, and why.

    `error` is an exception or a message; an OSError is described with its errno name, so a full volume reads
    "No space left on device (ENOSPC): <file>" and SITS reports it as VolumeFull.
    """
    global _last_answer
    message = describe(error) if isinstance(error, BaseException) else str(error).strip()
    if not message:
        raise ValueError("failed(): the error message is empty")
    if seq is None:
        seq = _pending_seq()
    value = json.dumps({"seq": int(seq), "step": int(step), "error": message[:1024]}, separators=(",", ":"))
    _call("PATCH", {"metadata": {"annotations": {COMMIT_ANNOTATION: value}}})
    _last_answer = None
    return int(seq)


def _os_errors(exc, seen=None):
    """The OSErrors inside `exc`: itself, its cause and context, and torch DCP's per-rank failures."""
    seen = seen if seen is not None else set()
    if exc is None or id(exc) in seen:
        return []
    seen.add(id(exc))
    out = [exc] if isinstance(exc, OSError) and exc.errno is not None else []
    inner = [exc.__cause__, exc.__context__]
    failures = getattr(exc, "failures", None)  # torch.distributed.checkpoint's CheckpointException: {rank: (exc, tb)}
    if isinstance(failures, dict):
        for v in failures.values():
            inner.append(v[0] if isinstance(v, tuple) and v else v)
    for e in inner:
        if isinstance(e, BaseException):
            out.extend(_os_errors(e, seen))
    return out


def describe(exc):
    """One line for a failed save: the first OSError inside it with its errno name and file, else the exception."""
    for e in _os_errors(exc):
        name = errno.errorcode.get(e.errno, str(e.errno))
        where = ": %s" % e.filename if e.filename else ""
        return "%s (%s)%s" % (e.strerror or os.strerror(e.errno), name, where)
    return "%s: %s" % (type(exc).__name__, exc)


class saving:
    """Every rank, around its save: on success rank 0 commits; if the block raises, rank 0 reports the failure.

    The exception is swallowed (training goes on; the last good checkpoint stays the restore point) unless
    `reraise=True`. `error` holds what was reported. A CheckpointError from reaching the API server is raised.
    """

    def __init__(self, step, seq, shards, rank=0, reraise=False):
        self.step, self.seq, self.shards, self.rank, self.reraise = step, seq, shards, rank, reraise
        self.error = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None:
            if self.rank == 0:
                committed(self.step, self.shards, self.seq)
            return False
        if isinstance(exc, (KeyboardInterrupt, SystemExit, CheckpointError)):
            return False
        self.error = describe(exc)
        if ": /" not in self.error:
            self.error += ", saving %s" % path(self.step)  # a failed write(2) names no file: say where it went
        if self.rank == 0:
            failed(self.step, self.error, self.seq)
        return not self.reraise


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
        if len(argv) in (3, 4) and argv[0] == "failed":
            print(failed(int(argv[1]), argv[2], int(argv[3]) if len(argv) == 4 else None))
            return 0
    except CheckpointError as e:
        print("sits_checkpoint: %s" % e, file=sys.stderr)
        return 1
    except ValueError as e:
        print("sits_checkpoint: %s" % e, file=sys.stderr)
        return 2
    print("usage: sits_checkpoint.py requested | committed STEP SHARDS [SEQ] | failed STEP MESSAGE [SEQ]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
