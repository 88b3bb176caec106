#!/usr/bin/env python3
"""cuzk-bench's arguments for the first request of a Curio request file (as `bellhop fil
request` writes it), one per line: cuzk-bench takes a C1 file, a JSON list of base64 vanilla
proofs and hex values, which this writes into OUTDIR.

    scripts/cuzk-bench-args.py REQUESTS.json CIRCUIT OUTDIR   # CIRCUIT: porep, snap, winning-post, window-post
"""
import base64
import json
import os
import sys

requests, circuit, outdir = sys.argv[1:4]
request = json.load(open(requests))[0]


def hex_of(field):
    return base64.b64decode(request[field]).hex()


def write(name, data):
    path = os.path.join(outdir, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


if circuit == "porep":
    c1 = write("porep.c1-curio.json", base64.b64decode(request["vanilla_proof"]))
    args = ["-t", "porep", "--c1", c1, "--sector-num", str(request["sector_number"]), "--miner-id", str(request["miner_id"])]
elif circuit in ("snap", "winning-post", "window-post"):
    vanilla = write(f"{circuit}.vanilla.json", json.dumps(request["vanilla_proofs"]).encode())
    kind = {"snap": "snap", "winning-post": "winning", "window-post": "wpost"}[circuit]
    args = ["-t", kind, "--vanilla", vanilla, "--registered-proof", str(request["registered_proof"])]
    if circuit == "snap":
        args += ["--comm-r-old", hex_of("comm_r_old"), "--comm-r-new", hex_of("comm_r_new"), "--comm-d-new", hex_of("comm_d_new")]
    else:
        args += ["--randomness", hex_of("randomness"), "--miner-id", str(request["miner_id"])]
else:
    sys.exit(f"error: unknown circuit {circuit} (porep, snap, winning-post, window-post)")
print("\n".join(args))
