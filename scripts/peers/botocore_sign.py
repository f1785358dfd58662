#!/usr/bin/env python3
"""botocore's SigV4 signer as an independent oracle for AsyncHTTPS3's tests (run with moto's venv python).

Reads a JSON list of requests on stdin and writes a JSON list of results on stdout, one per request:
  {"method", "url", "headers": [[name, value], ...], "body_hex", "region", "service", "access_key",
   "secret_key", "token" (or null), "timestamp" ("YYYYMMDDTHHMMSSZ"), "mode": "header" | "presign" | "streaming",
   "expires" (presign), "chunk_size" (streaming)}
-> {"authorization", "headers": {lowercase name: value}, "url" (presign), "chunk_signatures" (streaming)}

The time is fixed by replacing botocore.auth.get_current_datetime, so both sides sign the same instant.
For "streaming" the seed signature is botocore's (SigV4Auth with the STREAMING-AWS4-HMAC-SHA256-PAYLOAD
header preset, which botocore then signs as the payload line); each chunk's signature is botocore's
SigV4Auth.signature() (its key derivation and HMAC) over the chunk string to sign of AWS's "Signature
Calculations for the Authorization Header: Transferring Payload in Multiple Chunks".
"""
import datetime
import hashlib
import json
import sys

import botocore.auth
from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth, SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

EMPTY = hashlib.sha256(b"").hexdigest()


def sign(spec):
    when = datetime.datetime.strptime(spec["timestamp"], "%Y%m%dT%H%M%SZ")
    botocore.auth.get_current_datetime = lambda: when
    credentials = Credentials(spec["access_key"], spec["secret_key"], spec.get("token"))
    body = bytes.fromhex(spec.get("body_hex", ""))
    request = AWSRequest(method=spec["method"], url=spec["url"], data=body)
    for name, value in spec.get("headers", []):
        request.headers.add_header(name, value)  # HTTPHeaders keeps repeated fields
    mode = spec.get("mode", "header")
    s3 = spec["service"] == "s3"
    result = {}
    if mode == "presign":
        cls = S3SigV4QueryAuth if s3 else SigV4QueryAuth
        cls(credentials, spec["service"], spec["region"], expires=spec["expires"]).add_auth(request)
        result["url"] = request.url
        return result
    if mode == "streaming":
        auth = SigV4Auth(credentials, spec["service"], spec["region"])
        auth.add_auth(request)
        seed = request.headers["Authorization"].rsplit("Signature=", 1)[1]
        scope = auth.credential_scope(request)
        previous = seed
        signatures = []
        payload = bytes.fromhex(spec["payload_hex"])
        size = spec["chunk_size"]
        pieces = [payload[i:i + size] for i in range(0, len(payload), size)] + [b""]
        for piece in pieces:
            sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", spec["timestamp"], scope, previous, EMPTY,
                             hashlib.sha256(piece).hexdigest()])
            previous = auth.signature(sts, request)
            signatures.append(previous)
        result["chunk_signatures"] = signatures
    else:
        cls = S3SigV4Auth if s3 else SigV4Auth
        cls(credentials, spec["service"], spec["region"]).add_auth(request)
    result["authorization"] = request.headers["Authorization"]
    result["headers"] = {k.lower(): v for k, v in request.headers.items()}
    return result


def main():
    specs = json.load(sys.stdin)
    json.dump([sign(spec) for spec in specs], sys.stdout)


if __name__ == "__main__":
    main()
