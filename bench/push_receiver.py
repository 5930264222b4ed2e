#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# A receiver for the export benchmarks: takes every POST on 127.0.0.1:PORT whole and answers 204
# to remote write (a path ending in /write) and 200 to OTLP.
#   bench/push_receiver.py PORT
import http.server
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(204 if self.path.endswith("/write") else 200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
