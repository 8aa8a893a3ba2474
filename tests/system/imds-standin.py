#!/usr/bin/python3
# A STAND-IN for Azure's instance metadata service (IMDS), for tests only: this
# machine is not an Azure VM.  It answers GET .../compute/placementGroupId with
# the text given, and, like IMDS, HTTP 400 without the "Metadata: true" header.
# Usage: imds-standin.py PORTFILE PLACEMENT_GROUP [hang]
# Listens on 127.0.0.1 (a free port, written to PORTFILE); logs each request's path
# and Metadata header to stdout.  "hang": accept and never answer.
import http.server, sys, time

class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        print("GET", self.path, "Metadata=%s" % self.headers.get("Metadata"), flush=True)
        if len(sys.argv) > 3 and sys.argv[3] == "hang":
            time.sleep(60)
            return
        if self.headers.get("Metadata") != "true":
            self.send_response(400); self.end_headers(); return
        if self.path.startswith("/metadata/instance/compute/placementGroupId"):
            body = sys.argv[2].encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_response(404); self.end_headers()
    def log_message(self, *a):
        pass

s = http.server.HTTPServer(("127.0.0.1", 0), H)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
