#!/usr/bin/env python3
"""Upload objects to the local fake-gcs-server through its JSON API (stdlib only).

object_store's GCS backend writes through the XML API, which fake-gcs-server does not
accept for PUT/multipart, so tests seed GCS-as-source data with this helper instead.

  seed-gcs.py BUCKET KEY FILE        upload FILE as KEY ("-" or no FILE: read stdin)
  seed-gcs.py BUCKET --dir DIR [--prefix P]
                                     upload every file under DIR as P + relative path

Options: --endpoint URL (default $MOVERCTL_TEST_GCS_ENDPOINT or http://127.0.0.1:4443),
         --content-type TYPE (default application/octet-stream), -v (print each object).
Exits non-zero on the first failed upload.
"""
import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1 only


def upload(endpoint, bucket, key, data, content_type):
    url = "%s/upload/storage/v1/b/%s/o?%s" % (
        endpoint.rstrip("/"),
        urllib.parse.quote(bucket, safe=""),
        urllib.parse.urlencode({"uploadType": "media", "name": key}),
    )
    req = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": content_type}
    )
    try:
        with OPENER.open(req, timeout=60) as resp:
            return json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as e:
        body = e.read().decode(errors="replace")[:500]
        sys.exit("seed-gcs: upload gs://%s/%s failed: HTTP %d: %s" % (bucket, key, e.code, body))
    except urllib.error.URLError as e:
        sys.exit("seed-gcs: cannot reach %s: %s" % (endpoint, e.reason))


def main():
    p = argparse.ArgumentParser(description="Seed objects into fake-gcs-server (JSON API).")
    p.add_argument("bucket")
    p.add_argument("key", nargs="?")
    p.add_argument("file", nargs="?", default="-")
    p.add_argument("--dir")
    p.add_argument("--prefix", default="")
    p.add_argument(
        "--endpoint",
        default=os.environ.get("MOVERCTL_TEST_GCS_ENDPOINT", "http://127.0.0.1:4443"),
    )
    p.add_argument("--content-type", default="application/octet-stream")
    p.add_argument("-v", "--verbose", action="store_true")
    a = p.parse_args()

    items = []  # (key, path or None for stdin)
    if a.dir:
        if a.key:
            p.error("give either KEY [FILE] or --dir, not both")
        for root, _dirs, files in os.walk(a.dir):
            for name in sorted(files):
                path = os.path.join(root, name)
                rel = os.path.relpath(path, a.dir).replace(os.sep, "/")
                items.append((a.prefix + rel, path))
        items.sort()
    elif a.key:
        items.append((a.key, None if a.file == "-" else a.file))
    else:
        p.error("KEY or --dir is required")

    for key, path in items:
        if path is None:
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
        meta = upload(a.endpoint, a.bucket, key, data, a.content_type)
        if a.verbose:
            print("gs://%s/%s %s bytes md5=%s" % (a.bucket, key, meta.get("size"), meta.get("md5Hash")))


if __name__ == "__main__":
    main()
