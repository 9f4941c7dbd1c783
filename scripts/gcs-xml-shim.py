#!/usr/bin/env python3
"""gcs-xml-shim: the GCS XML API writes that fake-gcs-server lacks, for moverctl's tests only.

object_store's GCS backend speaks the XML API. fake-gcs-server 1.54 serves XML reads and
listings but rejects XML uploads (PUT object, multipart uploads). This shim listens on its own
port, implements those writes on top of fake-gcs-server's JSON API, and forwards every other
request unchanged, so GCS can be tested as a destination.

What it models, after Google's XML API reference:
  - PUT object: Content-MD5 is checked (400 BadDigest on mismatch); the ETag is the object's
    MD5, the same string later reads and listings show; the answer carries x-goog-hash (crc32c
    and md5) and x-goog-generation;
    x-goog-if-generation-match: 0 refuses to overwrite (412).
  - Multipart (POST ?uploads, PUT ?partNumber&uploadId, POST ?uploadId, DELETE ?uploadId):
    parts check Content-MD5 and answer ETag = hex MD5 of the part; completing checks every
    listed part and its ETag. The object then has a CRC32C but no MD5, and an ETag that is not
    an MD5 of anything (Google documents both). The shim answers `"<random hex>-N"`, the worst
    case for a client that assumes S3's md5-of-md5s, shows it in later reads and listings of that
    object, and removes md5= from x-goog-hash on its reads.
  - Metadata (x-goog-meta-*), Content-Type and x-goog-storage-class are stored.
What it does not model: the ETag format (fake-gcs-server's base64 MD5 is kept everywhere, where
GCS shows the hex MD5); authentication, resumable uploads, copies
(x-goog-copy-source is forwarded, and fake-gcs-server ignores it), composite-object limits,
retention, speed.
Never benchmark through it.

Test hook: POST /_shim/corrupt-next-complete?object=BUCKET/KEY makes the next multipart
completion of that object store one flipped byte (a server that stored other bytes than it
received), so the client's after-write check can be tested. GET /_shim/health answers 200.

Usage: gcs-xml-shim.py --port 4444 --upstream http://127.0.0.1:4443
"""

import argparse
import base64
import hashlib
import html
import http.client
import json
import os
import re
import secrets
import sys
import threading
import urllib.parse
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "host", "content-length"}


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.uploads = {}  # upload id -> {"bucket", "key", "meta", "parts": {n: (md5hex, bytes)}}
        self.multipart = {}  # (bucket, key) -> (generation, etag) of objects made by completion
        self.corrupt_next = set()  # "bucket/key" whose next completion stores a flipped byte


STATE = State()
UPSTREAM = None  # (host, port)


def b64md5(data):
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def upstream(method, path, body=None, headers=None):
    conn = http.client.HTTPConnection(*UPSTREAM, timeout=120)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.getheaders(), r.read()
    finally:
        conn.close()


def xml_error(code, message):
    return (
        '<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>'
        % (code, message)
    ).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # one line per request on stderr (the server log)
        sys.stderr.write("%s %s\n" % (self.command, self.path.split("?")[0]))

    # ---- plumbing ------------------------------------------------------------------------------

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def answer(self, status, body=b"", headers=(), length=None):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status, code, message):
        self.answer(status, xml_error(code, message), [("Content-Type", "application/xml")])

    def target(self):
        u = urllib.parse.urlsplit(self.path)
        parts = u.path.lstrip("/").split("/", 1)
        bucket = urllib.parse.unquote(parts[0])
        key = urllib.parse.unquote(parts[1]) if len(parts) > 1 else ""
        q = urllib.parse.parse_qs(u.query, keep_blank_values=True)
        return bucket, key, q

    def forward(self, body):
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
        status, hdrs, data = upstream(self.command, self.path, body, headers)
        bucket, key, _ = self.target()
        if self.command == "GET" and not key and status == 200 and b"<ListBucketResult" in data:
            data = self.relabel_listing(bucket, data)
        with STATE.lock:
            made = STATE.multipart.get((bucket, key))
        out = []
        got = dict((k.lower(), v) for k, v in hdrs)
        generation = got.get("x-goog-generation")
        # A HEAD answer has no body but the length of the object.
        length = got.get("content-length") if self.command == "HEAD" else None
        for k, v in hdrs:
            lk = k.lower()
            if lk in HOP_HEADERS:
                continue
            if made and generation == made[0]:
                # An object assembled from parts has a CRC32C but no MD5, and an opaque ETag.
                if lk == "x-goog-hash":
                    v = ",".join(p for p in v.split(",") if not p.strip().startswith("md5="))
                    if not v:
                        continue
                elif lk == "etag":
                    v = made[1]
            out.append((k, v))
        self.answer(status, data, out, length)

    def relabel_listing(self, bucket, data):
        """Objects assembled from parts are listed with their opaque ETag (matched by generation)."""
        with STATE.lock:
            made = {k: v for (b, k), v in STATE.multipart.items() if b == bucket}
        if not made:
            return data

        def fix(m):
            entry = m.group(0)
            k = re.search(rb"<Key>(.*?)</Key>", entry)
            g = re.search(rb"<Generation>(.*?)</Generation>", entry)
            if not k or not g:
                return entry
            mk = made.get(html.unescape(k.group(1).decode()))
            if not mk or mk[0] != g.group(1).decode():
                return entry
            return re.sub(rb"<ETag>.*?</ETag>", b"<ETag>" + html.escape(mk[1]).encode() + b"</ETag>", entry)

        return re.sub(rb"<Contents>.*?</Contents>", fix, data, flags=re.S)

    def stored_meta(self):
        meta = {}
        for k, v in self.headers.items():
            if k.lower().startswith("x-goog-meta-"):
                meta[k[len("x-goog-meta-") :].lower()] = v
        return {
            "metadata": meta,
            "contentType": self.headers.get("Content-Type") or "application/octet-stream",
            "storageClass": self.headers.get("x-goog-storage-class"),
        }

    def store(self, bucket, key, meta, data, if_generation_match):
        """Writes through the JSON API; returns (status, object resource or error text)."""
        resource = {"name": key, "metadata": meta["metadata"], "contentType": meta["contentType"]}
        if meta.get("storageClass"):
            resource["storageClass"] = meta["storageClass"]
        if if_generation_match == "0":
            st, _, _ = upstream("GET", "/storage/v1/b/%s/o/%s" % (bucket, urllib.parse.quote(key, safe="")))
            if st == 200:
                return 412, "object exists"
        boundary = "shim" + secrets.token_hex(8)
        payload = b"".join(
            [
                b"--" + boundary.encode() + b"\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n",
                json.dumps(resource).encode(),
                b"\r\n--" + boundary.encode() + b"\r\nContent-Type: application/octet-stream\r\n\r\n",
                data,
                b"\r\n--" + boundary.encode() + b"--\r\n",
            ]
        )
        st, _, out = upstream(
            "POST",
            "/upload/storage/v1/b/%s/o?uploadType=multipart" % bucket,
            payload,
            {"Content-Type": "multipart/related; boundary=" + boundary},
        )
        if st != 200:
            return st, out.decode(errors="replace")
        return 200, json.loads(out)

    def check_md5(self, data):
        sent = self.headers.get("Content-MD5")
        if sent is not None and sent.strip() != b64md5(data):
            self.error(400, "BadDigest", "The Content-MD5 you specified did not match what we received.")
            return False
        return True

    # ---- verbs ---------------------------------------------------------------------------------

    def do_GET(self):
        if self.path.startswith("/_shim/health"):
            return self.answer(200, b"ok")
        self.forward(None)

    def do_HEAD(self):
        self.forward(None)

    def do_DELETE(self):
        bucket, key, q = self.target()
        if "uploadId" in q:
            with STATE.lock:
                STATE.uploads.pop(q["uploadId"][0], None)
            return self.answer(204)
        self.forward(self.body())

    def do_PUT(self):
        bucket, key, q = self.target()
        data = self.body()
        if "x-goog-copy-source" in self.headers:
            return self.forward(data)
        if "uploadId" in q and "partNumber" in q:
            if not self.check_md5(data):
                return
            uid, n = q["uploadId"][0], int(q["partNumber"][0])
            md5hex = hashlib.md5(data).hexdigest()
            with STATE.lock:
                up = STATE.uploads.get(uid)
                if up is None or (up["bucket"], up["key"]) != (bucket, key):
                    return self.error(404, "NoSuchUpload", "The requested upload was not found.")
                up["parts"][n] = (md5hex, data)
            return self.answer(200, b"", [("ETag", '"%s"' % md5hex)])
        if not self.check_md5(data):
            return
        st, obj = self.store(
            bucket, key, self.stored_meta(), data, self.headers.get("x-goog-if-generation-match")
        )
        if st == 412:
            return self.error(412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold.")
        if st != 200:
            return self.error(st, "InternalError", obj)
        with STATE.lock:
            STATE.multipart.pop((bucket, key), None)
        self.answer(
            200,
            b"",
            [
                ("ETag", '"%s"' % obj["md5Hash"]),
                ("x-goog-generation", obj["generation"]),
                ("x-goog-hash", "crc32c=%s,md5=%s" % (obj["crc32c"], obj["md5Hash"])),
            ],
        )

    def do_POST(self):
        if self.path.startswith("/_shim/corrupt-next-complete"):
            q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            if "object" not in q:
                return self.error(400, "InvalidArgument", "object=BUCKET/KEY is required")
            with STATE.lock:
                STATE.corrupt_next.add(q["object"][0])
            return self.answer(200, b"armed")
        bucket, key, q = self.target()
        data = self.body()
        if "uploads" in q:
            uid = secrets.token_hex(16)
            with STATE.lock:
                STATE.uploads[uid] = {"bucket": bucket, "key": key, "meta": self.stored_meta(), "parts": {}}
            xml = (
                '<?xml version="1.0" encoding="UTF-8"?>'
                '<InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                "<Bucket>%s</Bucket><Key>%s</Key><UploadId>%s</UploadId>"
                "</InitiateMultipartUploadResult>"
            ) % (bucket, key, uid)
            return self.answer(200, xml.encode(), [("Content-Type", "application/xml")])
        if "uploadId" in q:
            return self.complete(bucket, key, q["uploadId"][0], data)
        self.forward(data)

    def complete(self, bucket, key, uid, data):
        try:
            root = ET.fromstring(data)
        except ET.ParseError:
            return self.error(400, "MalformedXML", "The XML you provided was not well-formed.")
        listed = []
        for p in root.iter():
            if p.tag.split("}")[-1] == "Part":
                n = e = None
                for c in p:
                    t = c.tag.split("}")[-1]
                    if t == "PartNumber":
                        n = int(c.text)
                    elif t == "ETag":
                        e = (c.text or "").strip().strip('"')
                listed.append((n, e))
        with STATE.lock:
            up = STATE.uploads.get(uid)
            if up is None or (up["bucket"], up["key"]) != (bucket, key):
                return self.error(404, "NoSuchUpload", "The requested upload was not found.")
            chunks = []
            for n, e in listed:
                got = up["parts"].get(n)
                if got is None or got[0] != e:
                    return self.error(400, "InvalidPart", "Part %s was not uploaded or its ETag differs." % n)
                chunks.append(got[1])
            corrupt = "%s/%s" % (bucket, key) in STATE.corrupt_next
            STATE.corrupt_next.discard("%s/%s" % (bucket, key))
            meta = up["meta"]
        whole = bytearray(b"".join(chunks))
        if corrupt and whole:
            whole[len(whole) // 2] ^= 0x01
        st, obj = self.store(bucket, key, meta, bytes(whole), None)
        if st != 200:
            return self.error(st, "InternalError", obj)
        etag = '"%s-%d"' % (secrets.token_hex(16), len(listed))
        with STATE.lock:
            STATE.uploads.pop(uid, None)
            STATE.multipart[(bucket, key)] = (obj["generation"], etag)
        xml = (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<CompleteMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            "<Location>/%s/%s</Location><Bucket>%s</Bucket><Key>%s</Key><ETag>%s</ETag>"
            "</CompleteMultipartUploadResult>"
        ) % (bucket, key, bucket, key, etag.replace('"', "&quot;"))
        self.answer(
            200,
            xml.encode(),
            [("Content-Type", "application/xml"), ("x-goog-generation", obj["generation"])],
        )


def main():
    global UPSTREAM
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--upstream", required=True, help="fake-gcs-server base URL (http://127.0.0.1:4443)")
    a = ap.parse_args()
    u = urllib.parse.urlsplit(a.upstream)
    if u.hostname != "127.0.0.1":
        sys.exit("the upstream must be on 127.0.0.1")
    UPSTREAM = (u.hostname, u.port or 80)
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    sys.stderr.write("gcs-xml-shim on 127.0.0.1:%d -> %s (pid %d)\n" % (a.port, a.upstream, os.getpid()))
    srv.serve_forever()


if __name__ == "__main__":
    main()
