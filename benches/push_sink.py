"""A profile server that keeps nothing, for benches/push_redis.sh: reads each POST and answers
200 with `{}`, so that the bench measures what stallscope costs, not what a store costs.
Usage: push_sink.py PORT"""
import http.server
import sys


class Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
